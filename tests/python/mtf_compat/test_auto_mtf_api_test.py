"""Mesh TensorFlow's auto_mtf/api_test.py (tensorflow/mesh), its layout
cases ported, and the one case of auto_mtf/layout_test.py (an older copy of
api_test's testLayout): the same graph, mesh and assertions. Mesh TensorFlow's
auto_mtf.layout(graph, mesh_shape, outputs) and
layout_and_mesh_shape(graph, num_cores, outputs, max_dims) are mtf's
auto_layout (on a TPU of that many cores: it ranks layouts by simulated step
time where Mesh TensorFlow's minimizes memory; here both choose the same);
a layout's tensor_dimension_to_mesh_axis is read from the rules it returns.
Its testMeshShapeIterator is not ported: it tests a private helper
(_mesh_shape_iterator) whose shapes mtf's search enumerates differently."""
import mtf


def tensor_dimension_to_mesh_axis(layout, dim, mesh_shape):
    """The index of the mesh dimension `dim` is split over, or None."""
    mesh_names = [d.split(":")[0] for d in mesh_shape.split(";")]
    for rule in filter(None, layout.split(";")):
        tensor_dim, mesh_dim = rule.split(":")
        if tensor_dim == dim.name:
            return mesh_names.index(mesh_dim)
    return None


def layout_and_mesh_shape(graph, num_cores, outputs, max_mesh_shape_dimensions=3):
    r = mtf.auto_layout(graph, outputs, topology="tpu-v2-%d" % num_cores, time_budget=10,
                        max_dims=max_mesh_shape_dimensions)
    return r["layout"], r["mesh_shape"]


def graph_and_z():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    x = mtf.zeros(mesh, "a:10;b:5")
    y = mtf.zeros(mesh, "b:5;c:20")
    z = mtf.einsum([x, y], "a:10;c:20")
    return graph, z


def test_layout():
    """api_test.py's testLayout, and layout_test.py's."""
    graph, z = graph_and_z()
    mesh_shape = "m1:4;m2:2"
    layout = mtf.auto_layout(graph, [z], mesh_shape=mesh_shape, topology="tpu-v2-8",
                             time_budget=10)["layout"]
    a_dim = mtf.convert_to_dimension(("a", 10))
    b_dim = mtf.convert_to_dimension(("b", 5))
    c_dim = mtf.convert_to_dimension(("c", 20))
    assert tensor_dimension_to_mesh_axis(layout, a_dim, mesh_shape) == 1
    assert tensor_dimension_to_mesh_axis(layout, b_dim, mesh_shape) is None
    assert tensor_dimension_to_mesh_axis(layout, c_dim, mesh_shape) == 0


def test_layout_and_mesh_shape():
    graph, z = graph_and_z()
    layout, mesh_shape = layout_and_mesh_shape(graph, 8, [z])
    a_dim = mtf.convert_to_dimension(("a", 10))
    b_dim = mtf.convert_to_dimension(("b", 5))
    c_dim = mtf.convert_to_dimension(("c", 20))
    assert tensor_dimension_to_mesh_axis(layout, a_dim, mesh_shape) == 1
    assert tensor_dimension_to_mesh_axis(layout, b_dim, mesh_shape) is None
    assert tensor_dimension_to_mesh_axis(layout, c_dim, mesh_shape) == 0
    # Mesh TensorFlow names the mesh's dimensions mesh_0, mesh_1; mtf x, y.
    assert [int(d.split(":")[1]) for d in mesh_shape.split(";")] == [4, 2]

    layout, mesh_shape = layout_and_mesh_shape(graph, 8, [z], 1)
    assert tensor_dimension_to_mesh_axis(layout, a_dim, mesh_shape) is None
    assert tensor_dimension_to_mesh_axis(layout, b_dim, mesh_shape) is None
    assert tensor_dimension_to_mesh_axis(layout, c_dim, mesh_shape) is None
    assert [int(d.split(":")[1]) for d in mesh_shape.split(";")] == [8]
