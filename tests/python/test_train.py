"""Variables, initializers, assignments, gradients, recompute_grad, optimizers."""

import numpy as np
import pytest

import mtf

A, B = mtf.Dimension("a", 3), mtf.Dimension("b", 4)


def test_initializers_and_assignments():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    inits = {
        "zeros": (mtf.zeros_initializer(), lambda v: (v == 0).all()),
        "ones": (mtf.ones_initializer(), lambda v: (v == 1).all()),
        "const": (mtf.constant_initializer(2.5), lambda v: (v == 2.5).all()),
        "normal": (mtf.random_normal_initializer(0, 1), lambda v: v.std() > 0.1),
        "trunc": (mtf.truncated_normal_initializer(1.0), lambda v: (np.abs(v) <= 2).all()),
        "uniform": (mtf.random_uniform_initializer(1, 2), lambda v: ((v >= 1) & (v < 2)).all()),
        "glorot": (mtf.glorot_uniform_initializer(), lambda v: (np.abs(v) <= np.sqrt(6 / 7)).all()),
        "static": (mtf.Initializer.normal(stddev=0.5), lambda v: v.std() > 0.05),
        "varsc": (mtf.layers.variance_scaling_initializer([A]), lambda v: v.std() > 0.05),
    }
    for name, (init, _) in inits.items():
        mtf.get_variable(m, name, [A, B], initializer=init)
    assert "zeros" in repr(mtf.Initializer.zeros()) and mtf.Initializer.ones() is not None
    assert mtf.Initializer.constant(1) is not None and mtf.Initializer.uniform() is not None
    assert mtf.Initializer.truncated_normal() is not None and mtf.Initializer.glorot_uniform()
    c = mtf.get_variable(m, "counter", [], initializer=mtf.zeros_initializer(), dtype=mtf.int32,
                         trainable=False)
    z = g.find_operation("zeros").outputs[0]
    assert mtf.is_variable(c) and not mtf.is_variable(z + 1.0)
    inc = mtf.assign_add(c, mtf.ones(m, [], mtf.int32))
    s = mtf.Session(g)
    for name, (_, ok) in inits.items():
        assert ok(s.variable_value(name)), name
    s.run(inc)
    s.run(inc)
    assert s.variable_value("counter") == 2
    s.run(mtf.assign(z, z + 1.0))
    s.run(mtf.assign_sub(z, mtf.constant(m, 0.5, [B])))
    np.testing.assert_array_equal(s.variable_value("zeros"), np.full((3, 4), 0.5))
    with pytest.raises(mtf.ValueError, match="unique|already"):
        mtf.get_variable(m, "zeros", [A])


def test_gradients_match_finite_differences():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    x = mtf.placeholder(m, [A, B])
    w = mtf.get_variable(m, "w", [B], initializer=mtf.random_normal_initializer(0, 1))
    y = mtf.reduce_sum(mtf.tanh(x * w) ** 2.0)
    gx, gw = mtf.gradients([y], [x, w])
    (gx2,) = mtf.gradients([y], [x], grad_ys=[mtf.constant(m, 2.0)])
    s = mtf.Session(g)
    xv = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    wv = s.variable_value("w")
    got, got_w, got2 = s.run([gx, gw, gx2], {x: xv})
    want = 2 * np.tanh(xv * wv) * (1 - np.tanh(xv * wv) ** 2) * wv
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got2, 2 * want, rtol=1e-4, atol=1e-5)
    assert got_w.shape == (4,)


def test_recompute_grad_gives_the_plain_gradients():
    def model(recompute):
        g = mtf.Graph()
        m = mtf.Mesh(g, "m")
        x = mtf.constant(m, np.linspace(-1, 1, 12).reshape(3, 4), [A, B])

        def block(xs):
            return [mtf.layers.dense(mtf.relu(xs[0]), mtf.Dimension("h", 5), name="inner")]
        y = mtf.recompute_grad(block, [x])[0] if recompute else block([x])[0]
        loss = mtf.reduce_sum(y * y)
        grads = mtf.gradients([loss], g.trainable_variables)
        return mtf.Session(g).run(grads)
    for a, b in zip(model(True), model(False)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("optimizer", [
    lambda: mtf.optimize.SgdOptimizer(1.0),
    lambda: mtf.optimize.MomentumOptimizer(0.5, 0.5),
    lambda: mtf.optimize.AdamOptimizer(0.05),
    lambda: mtf.optimize.AdafactorOptimizer(learning_rate=0.05),
    lambda: mtf.optimize.AdamOptimizer("0.1*warmup(5)*rsqrt(5)"),
    lambda: mtf.optimize.AdafactorOptimizer(learning_rate="0.1*cosine(30, 0.1)"),
])
def test_optimizers_reduce_the_loss(optimizer):
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    w = mtf.get_variable(m, "w", [A, B])
    target = mtf.constant(m, 0.3, [A, B])
    loss = mtf.reduce_mean(mtf.square(w - target))
    opt = optimizer()
    updates = opt.apply_grads(mtf.gradients([loss], [w]), [w])
    s = mtf.Session(g, mesh_shape="r:3", layout="a:r")
    first = s.run(loss)
    for _ in range(30):
        s.run(updates)
    assert s.run(loss) < first / 2


def test_learning_rate_schedules_follow_the_step():
    lr = mtf.optimize.LearningRate("0.5*warmup(2) until 3 then 0.1")
    assert [lr.at(s) for s in range(1, 6)] == [0.25, 0.5, 0.5, 0.1, 0.1]
    assert not lr.is_constant and mtf.optimize.LearningRate(0.5).is_constant
    assert str(mtf.optimize.LearningRate(str(lr))) == str(lr)
    # SGD on sum(w) moves w by the step's rate: the graph's schedule.
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    w = mtf.get_variable(m, "w", [A], initializer=mtf.zeros_initializer())
    updates = mtf.optimize.SgdOptimizer(lr).minimize(mtf.reduce_sum(w))
    s = mtf.Session(g)
    for step in range(1, 6):
        s.run(updates)
        np.testing.assert_allclose(-s.run(w)[0], sum(lr.at(k) for k in range(1, step + 1)),
                                   rtol=1e-6)
    with pytest.raises(ValueError, match=r'at character 5, expected a finite number'):
        mtf.optimize.SgdOptimizer("0.1*")
    with pytest.raises(ValueError, match="not 'warmpu'"):
        mtf.optimize.LearningRate("warmpu(3)")
