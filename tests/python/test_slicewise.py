"""mtf.slicewise / mtf.cwise: a NumPy function run on each processor's slices
(dimensions not declared splittable arrive whole), Mesh TensorFlow's call
shapes (several outputs, grad_function(op, dy), grad_function=0), the same
values on split layouts, and clear errors for a function that misbehaves."""
import numpy as np
import pytest

import mtf


def graph_with_x(shape="b:4;h:6"):
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    return graph, mtf.placeholder(mesh, shape)


def test_cwise_with_a_gradient_matches_numpy_on_every_layout():
    graph, x = graph_with_x()
    y = mtf.cwise(np.sin, [x], grad_function=lambda op, dy: [dy * mtf.cos(op.inputs[0])],
                  name="my_sin")
    loss = mtf.reduce_sum(y * y)
    [dx] = mtf.gradients([loss], [x])
    xv = np.random.default_rng(1).uniform(-2, 2, (4, 6)).astype(np.float32)
    want_y = np.sin(xv)
    for mesh_shape, layout in [("", ""), ("rows:2;cols:2", "b:rows;h:cols")]:
        for impl in ("simd", "placement"):
            s = mtf.Session(graph, mesh_shape=mesh_shape, layout=layout, mesh_impl=impl)
            got_y, got_dx = s.run([y, dx], {x: xv})
            np.testing.assert_array_equal(got_y, want_y)
            np.testing.assert_allclose(got_dx, 2 * np.sin(xv) * np.cos(xv), rtol=1e-5, atol=1e-6)


def test_unsplittable_dimensions_arrive_whole_and_several_outputs():
    graph, x = graph_with_x()
    seen = []

    def stats(a):
        seen.append(a.shape)
        return a.sum(axis=1), a.argmax(axis=1).astype(np.int32)

    total, where = mtf.slicewise(stats, [x], output_shape=["b:4", "b:4"],
                                 output_dtype=[mtf.float32, mtf.int32],
                                 splittable_dims=[mtf.Dimension("b", 4)], grad_function=0)
    assert where.dtype == mtf.int32
    xv = np.random.default_rng(2).normal(size=(4, 6)).astype(np.float32)
    s = mtf.Session(graph, mesh_shape="rows:2;cols:2", layout="b:rows;h:cols")
    got_total, got_where = s.run([total, where], {x: xv})
    np.testing.assert_allclose(got_total, xv.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(got_where, xv.argmax(axis=1))
    assert set(seen) == {(2, 6)}  # b split in two, h whole
    # grad_function=0: no gradient flows through the op.
    [dx] = mtf.gradients([mtf.reduce_sum(total)], [x])
    np.testing.assert_array_equal(mtf.Session(graph).run(dx, {x: xv}), np.zeros((4, 6)))


def test_bfloat16_crosses_as_float32():
    graph, x = graph_with_x()
    xb = mtf.cast(x, mtf.bfloat16)
    dtypes = []
    y = mtf.cwise(lambda a: (dtypes.append(a.dtype), a * 2)[1], [xb])
    assert y.dtype == mtf.bfloat16
    xv = np.full((4, 6), 1.5, np.float32)
    np.testing.assert_array_equal(mtf.Session(graph).run(y, {x: xv}), np.full((4, 6), 3.0))
    assert dtypes == [np.float32]


def test_misbehaving_functions_are_clear_errors():
    graph, x = graph_with_x()
    wrong_shape = mtf.cwise(lambda a: a[:2], [x], name="wrong_shape")
    raises = mtf.cwise(lambda a: 1 / 0, [x], name="raises")
    no_grad = mtf.cwise(np.exp, [x], name="no_grad")
    s = mtf.Session(graph)
    xv = np.ones((4, 6), np.float32)
    with pytest.raises(mtf.ValueError, match="wrong_shape"):
        s.run(wrong_shape, {x: xv})
    with pytest.raises(mtf.ValueError, match="ZeroDivisionError"):
        s.run(raises, {x: xv})
    with pytest.raises(mtf.ValueError, match="has no gradient"):
        mtf.gradients([mtf.reduce_sum(no_grad)], [x])
    with pytest.raises(mtf.ValueError, match="is in no input"):
        mtf.slicewise(np.exp, [x], splittable_dims=["w"])
    # The session still runs after the errors.
    np.testing.assert_allclose(s.run(no_grad, {x: xv}), np.exp(xv), rtol=1e-6)


def test_custom_gradient_replaces_the_gradient_through_its_ops():
    graph, x = graph_with_x()
    y = mtf.custom_gradient(lambda a: mtf.log(mtf.exp(a) + 1.0),
                            lambda op, dy: [dy * 2.0 * mtf.sigmoid(op.inputs[0])], [x])
    [dx] = mtf.gradients([mtf.reduce_sum(y)], [x])
    xv = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    got_y, got_dx = mtf.Session(graph).run([y, dx], {x: xv})
    np.testing.assert_allclose(got_y, np.log1p(np.exp(xv)), rtol=1e-5)
    np.testing.assert_allclose(got_dx, 2 / (1 + np.exp(-xv)), rtol=1e-5)  # the given one


def test_custom_gradient_takes_mesh_tensorflows_grad_fn():
    # Mesh TensorFlow's grad_fn, called by keyword: w, read by fn from outside,
    # is in all_inputs after x and gets the gradient grad_fn gives it.
    graph, x = graph_with_x()
    mesh = x.mesh
    w = mtf.get_variable(mesh, "w", "h:6", initializer=mtf.Initializer.constant(0.5))
    seen = {}

    def grad_fn(explicit_inputs, all_inputs, forward_operations, outputs, output_grads):
        seen.update(explicit=len(explicit_inputs), all=len(all_inputs),
                    ops=[op.type for op in forward_operations], outputs=len(outputs))
        dy = output_grads[0]
        return [dy * all_inputs[1] * 3.0,
                mtf.reduce_sum(dy * all_inputs[0], output_shape="h:6") * 3.0]

    y = mtf.custom_gradient(lambda a: a * w, grad_fn, [x])
    dx, dw = mtf.gradients([mtf.reduce_sum(y)], [x, w])
    assert seen["explicit"] == 1 and seen["all"] == 2 and seen["outputs"] == 1
    assert "multiply" in seen["ops"]
    xv = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    got_y, got_dx, got_dw = mtf.Session(graph).run([y, dx, dw], {x: xv})
    np.testing.assert_allclose(got_y, xv * 0.5, rtol=1e-6)
    np.testing.assert_allclose(got_dx, np.full_like(xv, 1.5), rtol=1e-6)
    np.testing.assert_allclose(got_dw, 3 * xv.sum(axis=0), rtol=1e-5, atol=1e-5)
    # **kwargs counts as Mesh TensorFlow's form too; a wrong count is a clear error.
    z = mtf.custom_gradient(lambda a: a * w, lambda **kw: [kw["output_grads"][0]] * 3,
                            explicit_inputs=[x])
    with pytest.raises(mtf.ValueError, match="3 gradients for 1 inputs"):
        mtf.gradients([mtf.reduce_sum(z)], [x])


def test_assign_slice_writes_its_positions_only():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    v = mtf.get_variable(mesh, "v", "a:6;b:2", initializer=mtf.Initializer.constant(1.0))
    x = mtf.placeholder(mesh, "a:2;b:2")
    op = mtf.assign_slice(v, x, 3, "a")
    s = mtf.Session(graph)
    s.run([], {x: np.full((2, 2), 5, np.float32)}, targets=[op])
    want = np.ones((6, 2), np.float32)
    want[3:5] = 5
    np.testing.assert_array_equal(s.variable_value("v"), want)
