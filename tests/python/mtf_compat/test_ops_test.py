"""Mesh TensorFlow's ops_test.py (tensorflow/mesh), MeshTensorFlowTest ported
case by case: the same calls and assertions, the TensorFlow plumbing
(import_tf_tensor, Lowering, export_to_tf_tensor) replaced by a placeholder
fed a NumPy value and a one-processor mtf.Session. Its
OperationSplittabilityTest is not ported: it constructs Mesh TensorFlow's
Python operation classes (SlicewiseOperation, ConcatOperation, ...), which
mtf does not have."""
import numpy as np
import pytest

import mtf


@pytest.mark.parametrize("inputs", [mtf.Dimension("x", 5), ("x", 5)])
def test_convert_to_dimension(inputs):
    dimension = mtf.convert_to_dimension(inputs)
    assert dimension.name == "x"
    assert dimension.size == 5


def test_convert_to_dimension_generic_inputs():
    assert mtf.convert_to_dimension(None) is None
    with pytest.raises(TypeError):
        mtf.convert_to_dimension(5)


@pytest.mark.parametrize("inputs", [
    mtf.Shape([mtf.Dimension("x", 4), mtf.Dimension("y", 8)]), "x:4;y:8", "x:4.y:8", "x:4 y:8",
    "x:4,y:8"])
def test_convert_to_shape(inputs):
    shape = mtf.convert_to_shape(inputs)
    assert shape == mtf.Shape([mtf.Dimension("x", 4), mtf.Dimension("y", 8)])


def test_convert_to_shape_generic_inputs():
    shape = mtf.convert_to_shape([])
    assert shape.dims == []
    assert mtf.convert_to_shape(None) is None
    with pytest.raises(ValueError):
        mtf.convert_to_shape("x;4")


def test_graph():
    graph = mtf.Graph()
    assert len(graph.operations) == 0
    assert len(graph.trainable_variables) == 0
    assert len(graph.all_variables) == 0
    mesh = mtf.Mesh(graph, "mesh_test")
    _ = mtf.import_fully_replicated(mesh, np.float32(0.0), shape=mtf.Shape([]))
    assert len(graph.operations) == 1
    assert len(graph.trainable_variables) == 0
    assert len(graph.all_variables) == 0
    _ = mtf.get_variable(mesh, "variable_0", mtf.Shape([]), trainable=True)
    assert len(graph.operations) == 2
    assert len(graph.trainable_variables) == 1
    assert len(graph.all_variables) == 1
    _ = mtf.get_variable(mesh, "variable_1", mtf.Shape([]), trainable=False)
    assert len(graph.operations) == 3
    assert len(graph.trainable_variables) == 1
    assert len(graph.all_variables) == 2


def test_graph_names():
    # Standard usage.
    graph = mtf.Graph()
    assert graph.unique_name("a") == "a"
    assert graph.unique_name("a") == "a_1"
    assert graph.unique_name("a") == "a_2"
    # Edge cases: the user may choose the name "a_1".
    graph = mtf.Graph()
    assert graph.unique_name("a") == "a"
    assert graph.unique_name("a") == "a_1"
    assert graph.unique_name("a_1") == "a_1_1"
    graph = mtf.Graph()
    assert graph.unique_name("a") == "a"
    assert graph.unique_name("a_1") == "a_1"
    assert graph.unique_name("a") == "a_2"
    # Case insensitive.
    graph = mtf.Graph()
    assert graph.unique_name("a") == "a"
    assert graph.unique_name("A") == "A_1"


def test_lowering():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    inputs = np.float32(0.0)
    mtf_inputs = mtf.import_fully_replicated(mesh, inputs, shape=mtf.Shape([]))
    outputs = mtf.Session(graph, mesh_impl="placement").run(mtf_inputs)
    assert inputs == outputs


def test_mesh():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    assert mesh.graph == graph
