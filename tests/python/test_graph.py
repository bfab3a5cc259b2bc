"""Dimensions, shapes, graphs, meshes, tensors and operations."""

import pytest

import mtf


def test_dimension_is_a_name_size_pair():
    d = mtf.Dimension("batch", 100)
    assert (d.name, d.size) == ("batch", 100)
    name, size = d
    assert (name, size, d[0], d[1]) == ("batch", 100, "batch", 100)
    assert d == mtf.Dimension("batch", 100) and d != mtf.Dimension("batch", 10)
    assert len({d, mtf.Dimension("batch", 100)}) == 1
    assert "batch" in repr(d) and str(d) == "batch:100"
    assert mtf.convert_to_dimension(("h", 4)) == mtf.Dimension("h", 4)
    assert mtf.convert_to_dimension(d) is not None
    with pytest.raises(mtf.ShapeError, match="negative"):
        mtf.Dimension("x", -1)


def test_shapes_parse_mesh_tensorflow_strings():
    s = mtf.convert_to_shape("batch:100;hidden:1024")
    assert s.dimension_names == ["batch", "hidden"]
    assert s.to_integer_list == [100, 1024]
    assert s.size == 102400 and len(s) == 2 and s.ndims == 2
    assert s == mtf.Shape([mtf.Dimension("batch", 100), mtf.Dimension("hidden", 1024)])
    assert s == mtf.Shape([("batch", 100), ("hidden", 1024)])
    assert s == "batch:100,hidden:1024"
    assert s[1] == mtf.Dimension("hidden", 1024) and s[-1].name == "hidden"
    assert [d.name for d in s] == ["batch", "hidden"]
    assert "batch" in s and mtf.Dimension("batch", 100) in s
    assert (s - "hidden:1024") == "batch:100"
    assert (s + "x:2").dimension_names == ["batch", "hidden", "x"]
    assert s.get_dim_by_name("hidden").size == 1024
    assert s.rename_dimension("hidden", "h").dimension_names == ["batch", "h"]
    assert s.resize_dimension("hidden", 8).to_integer_list == [100, 8]
    assert s.is_subset_of("hidden:1024;batch:100;x:3")
    assert s.to_string() == "batch:100;hidden:1024" and "batch:100" in repr(s)
    assert hash(s) == hash(mtf.convert_to_shape("batch:100;hidden:1024"))
    with pytest.raises(mtf.ShapeError, match="x;4"):
        mtf.convert_to_shape("x;4")
    with pytest.raises(ValueError):  # ShapeError is a ValueError
        mtf.Shape([("a", 2), ("a", 3)])
    with pytest.raises(IndexError):
        s[2]


def test_graph_mesh_tensor_and_operation(graph):
    g, mesh = graph
    g.seed = 7
    assert g.seed == 7
    assert mesh.name == "mesh" and mesh.graph is g and "mesh" in repr(mesh)
    x = mtf.placeholder(mesh, "b:2;c:3", name="x")
    y = mtf.exp(x)
    assert x.shape == "b:2;c:3" and x.dtype == mtf.float32 and x.dtype.name == "float32"
    assert mtf.int32.size == 4
    assert x.name == "x:0" and x.size == 6 and x.mesh.name == "mesh"
    assert y.operation.type == "exp" and y.operation.inputs == [x]
    assert y.operation.outputs == [y] and y.operation.mesh.name == "mesh"
    assert g.find_operation(y.operation.name) == y.operation
    assert g.find_operation("nothing") is None
    assert len(g.operations) == 2 and "exp" in g.to_string() and "2 operations" in repr(g)
    assert "x:0" in repr(x) and "exp" in repr(y.operation)
    assert {x: 1}[x] == 1 and x != y
    v = mtf.get_variable(mesh, "v", "c:3")
    assert g.all_variables == [v] and g.trainable_variables == [v]


def test_tensors_outlive_their_graph_object():
    g = mtf.Graph()
    x = mtf.ones(mtf.Mesh(g, "m"), "a:2")
    del g
    y = x * 2.0  # the tensor keeps the graph alive
    assert y.graph is x.graph and y.shape == "a:2"


def test_operators_with_tensors_and_scalars(graph):
    _, mesh = graph
    x = mtf.constant(mesh, 3.0, "a:2")
    for t in (x + x, x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, x ** 2, -x, x - x,
              x * x, x / x):
        assert t.shape == "a:2"
    with pytest.raises(TypeError):
        x + "a"


def test_mixing_meshes_of_two_graphs_is_an_error():
    a = mtf.ones(mtf.Mesh(mtf.Graph(), "m"), "a:2")
    b = mtf.ones(mtf.Mesh(mtf.Graph(), "m"), "a:2")
    with pytest.raises(mtf.ValueError, match="mesh|graph"):
        a + b
