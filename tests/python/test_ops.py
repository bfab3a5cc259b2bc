"""Every op of the module, against NumPy on one processor and on a 2x2 mesh."""

import numpy as np
import pytest

import mtf

RNG = np.random.default_rng(0)
A = mtf.Dimension("a", 4)
B = mtf.Dimension("b", 6)
C = mtf.Dimension("c", 2)


def evaluate(fetches, feeds=None, **kwargs):
    """Values on one processor, and checked equal (to float rounding) on a 2x2 mesh."""
    graph = (fetches[0] if isinstance(fetches, list) else fetches).graph
    one = mtf.Session(graph).run(fetches, feeds)
    mesh = mtf.Session(graph, mesh_shape="r:2;k:2", layout=kwargs.get("layout", "a:r;b:k")).run(
        fetches, feeds)
    for x, y in zip(one if isinstance(one, list) else [one], mesh if isinstance(mesh, list) else [mesh]):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    return one


@pytest.fixture
def mesh():
    return mtf.Mesh(mtf.Graph(), "mesh")


@pytest.fixture
def xv():
    return RNG.standard_normal((4, 6)).astype(np.float32)


def test_unary_ops(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    pos = np.abs(xv) + 0.5
    p = mtf.placeholder(mesh, [A, B], name="positive")
    cases = {
        mtf.relu(x): np.maximum(xv, 0), mtf.exp(x): np.exp(xv), mtf.log(p): np.log(pos),
        mtf.tanh(x): np.tanh(xv), mtf.sigmoid(x): 1 / (1 + np.exp(-xv)),
        mtf.sqrt(p): np.sqrt(pos), mtf.rsqrt(p): 1 / np.sqrt(pos), mtf.square(x): xv ** 2,
        mtf.abs(x): np.abs(xv), mtf.negative(x): -xv, mtf.reciprocal(p): 1 / pos,
        mtf.sin(x): np.sin(xv), mtf.cos(x): np.cos(xv), mtf.softplus(x): np.log1p(np.exp(xv)),
        mtf.sign(x): np.sign(xv), mtf.identity(x): xv, mtf.stop_gradient(x): xv,
        mtf.to_float(mtf.to_int32(p)): np.trunc(pos), mtf.cast(x, mtf.float32): xv,
        mtf.gelu(x): 0.5 * xv * (1 + np.tanh(np.sqrt(2 / np.pi) * (xv + 0.044715 * xv ** 3))),
    }
    got = evaluate(list(cases), {x: xv, p: pos})
    for g, want in zip(got, cases.values()):
        np.testing.assert_allclose(g, want, rtol=2e-5, atol=1e-5)


def test_binary_ops_broadcast_by_name(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    yv = RNG.standard_normal(6).astype(np.float32)
    y = mtf.placeholder(mesh, [B], name="y")
    cases = {
        mtf.add(x, y): xv + yv, mtf.subtract(x, y): xv - yv, mtf.sub(x, 1.0): xv - 1,
        mtf.multiply(x, y): xv * yv, mtf.mul(x, 2.0): xv * 2, mtf.divide(x, 2.0): xv / 2,
        mtf.div(x, y): xv / yv, mtf.minimum(x, y): np.minimum(xv, yv),
        mtf.maximum(x, y): np.maximum(xv, yv), mtf.pow(mtf.abs(x), 2.0): xv ** 2,
        mtf.less(x, y): xv < yv, mtf.less_equal(x, y): xv <= yv, mtf.greater(x, y): xv > yv,
        mtf.greater_equal(x, y): xv >= yv, mtf.equal(x, x): np.ones_like(xv),
        mtf.not_equal(x, y): xv != yv, mtf.where(mtf.greater(x, y), x, y): np.maximum(xv, yv),
        mtf.add_n([x, x, y]): 2 * xv + yv, mtf.broadcast(y, [A, B]): np.broadcast_to(yv, (4, 6)),
        mtf.add(y, x, output_shape=[B, A]): (xv + yv).T,
    }
    got = evaluate(list(cases), {x: xv, y: yv})
    for g, want in zip(got, cases.values()):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_einsum_and_reductions(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    wv = RNG.standard_normal((6, 2)).astype(np.float32)
    w = mtf.placeholder(mesh, [B, C], name="w")
    cases = {
        mtf.einsum([x, w], [A, C]): xv @ wv, mtf.einsum([x, w]): xv @ wv,
        mtf.matmul(x, w): xv @ wv, mtf.matmul(x, w, output_shape=[C, A]): (xv @ wv).T,
        mtf.reduce_sum(x): xv.sum(), mtf.reduce_sum(x, reduced_dim=B): xv.sum(1),
        mtf.reduce_sum(x, output_shape=[B]): xv.sum(0), mtf.reduce_mean(x, reduced_dim="a"): xv.mean(0),
        mtf.reduce_max(x, reduced_dim=B): xv.max(1), mtf.reduce_min(x): xv.min(),
        mtf.reduce_logsumexp(x, reduced_dim=B): np.log(np.exp(xv).sum(1)),
        mtf.softmax(x, B): np.exp(xv) / np.exp(xv).sum(1, keepdims=True),
        mtf.log_softmax(x, "b"): xv - np.log(np.exp(xv).sum(1, keepdims=True)),
        mtf.nth_largest_element(x, 1, B): np.sort(xv, 1)[:, -2],
        mtf.nth_smallest_element(x, 0, B): xv.min(1),
        mtf.argmax(x, B): xv.argmax(1),
        mtf.weights_nonzero(mtf.relu(x)): (xv > 0).astype(np.float32),
    }
    got = evaluate(list(cases), {x: xv, w: wv})
    for g, want in zip(got, cases.values()):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
    values, indices = mtf.top_k(x, B, mtf.Dimension("k", 2))
    v, i = evaluate([values, indices], {x: xv})
    np.testing.assert_allclose(v, -np.sort(-xv, 1)[:, :2], rtol=1e-6)
    np.testing.assert_array_equal(i, np.argsort(-xv, 1, kind="stable")[:, :2])
    with pytest.raises(mtf.ValueError, match="not both"):
        mtf.reduce_sum(x, output_shape=[A], reduced_dim=B)
    # An optimizer's statistics: the sum of squares of x * r * c, in one pass.
    r = mtf.import_fully_replicated(mesh, np.array([1.0, 2.0, 0.5, 3.0], np.float32), [A], "r")
    c = mtf.import_fully_replicated(mesh, np.linspace(0.5, 1.5, 6).astype(np.float32), [B], "c")
    scaled = xv * np.array([1.0, 2.0, 0.5, 3.0], np.float32)[:, None] * np.linspace(0.5, 1.5, 6)
    got = evaluate([mtf.reduce_sum_of_squares([x], [A]), mtf.reduce_sum_of_squares([x, r, c], [])],
                   {x: xv})
    np.testing.assert_allclose(got[0], (xv ** 2).sum(1), rtol=1e-5)
    np.testing.assert_allclose(got[1], (scaled ** 2).sum(), rtol=1e-5)
    with pytest.raises(mtf.ShapeError):
        mtf.reduce_sum_of_squares([x], [C])


def test_layout_ops(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    parts = mtf.split(x, B, 2)
    sized = mtf.split(x, "b", [2, 4])
    unstacked = mtf.unstack(x, A)
    cases = {
        mtf.reshape(x, "a:4;b2:3;b3:2"): xv.reshape(4, 3, 2),
        mtf.rename_dimension(x, "b", "bb"): xv, mtf.transpose(x, [B, A]): xv.T,
        mtf.slice(x, 1, 3, "b"): xv[:, 1:4], mtf.pad(x, [1, 2], "b"): np.pad(xv, ((0, 0), (1, 2))),
        mtf.concat([x, x], "b"): np.concatenate([xv, xv], 1), parts[1]: xv[:, 3:],
        sized[1]: xv[:, 2:], mtf.stack(unstacked, "a", 0): xv, unstacked[2]: xv[2],
        mtf.shift(x, 1, "b", wrap=True): np.roll(xv, 1, 1),
        mtf.shift(x, 2, B, wrap=False): np.pad(xv, ((0, 0), (2, 0)))[:, :6],
        mtf.cumsum(x, B): np.cumsum(xv, 1), mtf.cumprod(x, A, exclusive=True, reverse=False):
            np.concatenate([np.ones((1, 6)), np.cumprod(xv, 0)[:-1]]),
    }
    got = evaluate(list(cases), {x: xv}, layout="a:r")
    for g, want in zip(got, cases.values()):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_creation_indices_and_randomness(mesh):
    ids = mtf.placeholder(mesh, [A], mtf.int32, name="ids")
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    weights = mtf.constant(mesh, table, [B, C])
    idv = np.array([0, 5, 2, 7], np.int32)
    cases = {
        mtf.constant(mesh, 2.5, [A]): np.full(4, 2.5), mtf.zeros(mesh, [A]): np.zeros(4),
        mtf.ones(mesh, [A], mtf.int32): np.ones(4),
        mtf.import_fully_replicated(mesh, table, [B, C]): table,
        mtf.range(mesh, A): np.arange(4), mtf.one_hot(ids, B): np.eye(6)[[0, 5, 2]].tolist() + [[0] * 6],
        mtf.gather(weights, ids, B): np.concatenate([table[[0, 5, 2]], np.zeros((1, 2))]),
    }
    got = evaluate(list(cases), {ids: idv})
    for g, want in zip(got, cases.values()):
        np.testing.assert_allclose(g, np.array(want, dtype=np.float64), atol=1e-6)
    u = mtf.random_uniform(mesh, [A, B], minval=2, maxval=3, seed=5)
    n = mtf.random_normal(mesh, [A, B], mean=1, stddev=0.1)
    x = mtf.ones(mesh, [A, B])
    d = mtf.dropout(x, 0.5, seed=3)
    d2 = mtf.dropout(x, rate=0.5, noise_shape=[B])
    uv, nv, dv, d2v = evaluate([u, n, d, d2])  # the same numbers under every layout
    assert ((uv >= 2) & (uv < 3)).all() and abs(nv.mean() - 1) < 0.1
    assert set(np.unique(dv)) <= {0.0, 2.0} and (d2v == d2v[0:1]).all()
    with pytest.raises(mtf.ValueError, match="exactly one"):
        mtf.dropout(x)
    with pytest.raises(mtf.ValueError, match="shape="):
        mtf.constant(mesh, table)


def test_convolutions_and_pooling(mesh):
    xv = RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)
    fv = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    x = mtf.placeholder(mesh, "a:2;h:8;w:8;ch:3")
    f = mtf.constant(mesh, fv, "fh:3;fw:3;ch:3;out:4")
    y = mtf.conv(x, f, padding="VALID")
    t = mtf.conv_transpose(y, mtf.constant(mesh, fv, "fh:3;fw:3;ch:3;out:4"), padding="VALID")
    mp = mtf.max_pool(x, [2, 2])
    ap = mtf.avg_pool(x, [2, 2], strides=[2, 2])
    yv, tv, mpv, apv = evaluate([y, t, mp, ap], {x: xv}, layout="a:r")
    want = np.zeros((2, 6, 6, 4), np.float32)
    for i in range(6):
        for j in range(6):
            want[:, i, j] = np.einsum("bhwc,hwco->bo", xv[:, i:i + 3, j:j + 3], fv)
    np.testing.assert_allclose(yv, want, rtol=1e-4, atol=1e-4)
    assert tv.shape == (2, 8, 8, 3)
    np.testing.assert_allclose(mpv, xv.reshape(2, 4, 2, 4, 2, 3).max((2, 4)), rtol=1e-6)
    np.testing.assert_allclose(apv, xv.reshape(2, 4, 2, 4, 2, 3).mean((2, 4)), rtol=1e-5)


def test_cross_entropy(mesh):
    logits_v = RNG.standard_normal((4, 6)).astype(np.float32)
    labels = np.array([1, 0, 5, 3], np.int32)
    logits = mtf.placeholder(mesh, [A, B])
    ids = mtf.placeholder(mesh, [A], mtf.int32, name="labels")
    xent = mtf.softmax_cross_entropy_with_logits(logits, mtf.one_hot(ids, B), B)
    mean = mtf.layers.softmax_cross_entropy_mean(logits, ids, B)
    lxent = mtf.layers.softmax_cross_entropy_with_logits(logits, mtf.one_hot(ids, B), B, z_loss=0)
    got, m, lx = evaluate([xent, mean, lxent], {logits: logits_v, ids: labels})
    lse = np.log(np.exp(logits_v).sum(1))
    want = lse - logits_v[np.arange(4), labels]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(m, want.mean(), rtol=1e-5)
    np.testing.assert_allclose(lx, want, rtol=1e-5)


def test_mesh_tensorflow_activations_and_floor_arithmetic(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    sigmoid = 1 / (1 + np.exp(-xv.astype(np.float64)))
    cases = {
        mtf.swish(x): xv * sigmoid,
        mtf.elu(x): np.where(xv > 0, xv, np.expm1(np.minimum(xv, 0))),
        mtf.selu(x): scale * np.where(xv > 0, xv, alpha * np.expm1(np.minimum(xv, 0))),
        mtf.leaky_relu(x): np.where(xv > 0, xv, 0.2 * xv),
        mtf.leaky_relu(x, alpha=0.5): np.maximum(xv, 0.5 * xv),
        mtf.zeros_like(x): np.zeros_like(xv),
        mtf.ones_like(x): np.ones_like(xv),
        mtf.floordiv(x, 0.3): np.floor_divide(xv, np.float32(0.3)),
        mtf.mod(x, -0.7): np.mod(xv, np.float32(-0.7)),
        x // 0.3: np.floor_divide(xv, np.float32(0.3)),
        x % 0.7: np.mod(xv, np.float32(0.7)),
        2.0 % (x * x + 0.5): np.mod(2.0, xv * xv + np.float32(0.5)),
    }
    got = evaluate(list(cases), {x: xv})
    for value, want in zip(got, cases.values()):
        np.testing.assert_allclose(value, want, rtol=2e-5, atol=2e-5)

    # int32 floor division and modulo: Python's semantics for every sign.
    iv = np.array([[7, -7, 7, -7, 0, 5]] * 4, np.int32)
    jv = np.array([[2, 2, -2, -2, 3, -3]] * 4, np.int32)
    i = mtf.constant(mesh, iv, shape=[A, B], dtype=mtf.int32)
    j = mtf.constant(mesh, jv, shape=[A, B], dtype=mtf.int32)
    q, r = evaluate([i // j, mtf.mod(i, j)])
    np.testing.assert_array_equal(q, iv // jv)
    np.testing.assert_array_equal(r, iv % jv)
    with pytest.raises(mtf.ValueError, match="division by zero"):
        mtf.Session(mesh.graph).run(i % mtf.zeros_like(j))
    with pytest.raises(mtf.ValueError, match="alpha"):
        mtf.leaky_relu(x, alpha=2.0)


def test_sigmoid_cross_entropy_and_activation_gradients(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    z = mtf.placeholder(mesh, [A, B], name="z")
    zv = RNG.uniform(0, 1, (4, 6)).astype(np.float32)
    loss = mtf.layers.sigmoid_cross_entropy_with_logits(x * 10.0, z)
    want = np.maximum(10 * xv, 0) - 10 * xv * zv + np.log1p(np.exp(-np.abs(10 * xv)))
    np.testing.assert_allclose(evaluate(loss, {x: xv, z: zv}), want, rtol=1e-5, atol=1e-6)
    # d/dx of sum(swish(x)) = sigmoid(x) (1 + x (1 - sigmoid(x))).
    (dx,) = mtf.gradients([mtf.reduce_sum(mtf.swish(x))], [x])
    s = 1 / (1 + np.exp(-xv.astype(np.float64)))
    np.testing.assert_allclose(evaluate(dx, {x: xv}), s * (1 + xv * (1 - s)), rtol=1e-5, atol=1e-6)


def test_mesh_tensorflow_selections_and_call_shapes(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    index, value = mtf.top_1(x, B)
    lse = mtf.reduce_logsumexp(x, B, extra_logit=0.0)
    sm = mtf.softmax(x, B, extra_logit=mtf.constant(mesh, 0.0))
    lsm = mtf.log_softmax(x, "b", extra_logit=0.0)
    first = mtf.reduce_first(x, output_shape=[A])
    summed = mtf.einsum([x, x], reduced_dims=[B])
    d, e = mtf.Dimension("d", 2), mtf.Dimension("e", 3)
    replaced = mtf.replace_dimensions(x, B, [d, e])
    got = evaluate([index, value, lse, sm, lsm, first, summed, replaced], {x: xv})
    last_max = 5 - np.argmax(xv[:, ::-1], axis=1)
    np.testing.assert_array_equal(got[0], last_max)
    np.testing.assert_allclose(got[1], xv.max(axis=1), rtol=1e-6)
    z = 1 + np.exp(xv.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(got[2], np.log(z), rtol=1e-5)
    np.testing.assert_allclose(got[3], np.exp(xv) / z[:, None], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[4], xv - np.log(z)[:, None], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[5], xv[:, 0])
    np.testing.assert_allclose(got[6], (xv * xv).sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(got[7], xv.reshape(4, 2, 3))
    assert mtf.replace_dimensions(mtf.Shape([A, B]), A, mtf.Dimension("z", 4)) == "z:4;b:6"
    with pytest.raises(mtf.ValueError, match="do not agree"):
        mtf.einsum([x, x], output_shape=[A, B], reduced_dims=[B])
    with pytest.raises(mtf.ShapeError, match="not a run"):
        mtf.replace_dimensions(x, [B, A], [d])
    ids = mtf.constant(mesh, np.array([1, 0], np.int32), shape=[mtf.Dimension("k", 2)],
                       dtype=mtf.int32)
    g = mtf.gather(x, ids, A, output_shape=[B, mtf.Dimension("k", 2)])
    np.testing.assert_array_equal(mtf.Session(mesh.graph).run(g, {x: xv}), xv[[1, 0]].T)
    draws = mtf.sample_with_temperature(x, B, temperature=0.0)
    np.testing.assert_array_equal(mtf.Session(mesh.graph).run(draws, {x: xv}), last_max)


def test_dynamic_shift(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    off = mtf.constant(mesh, np.array([0, 1, -2, 5], np.int32), shape=[A], dtype=mtf.int32)
    shifted, wrapped = evaluate([mtf.dynamic_shift(x, off, B, False),
                                 mtf.dynamic_shift(x, off, B, wrap=True)], {x: xv})
    for r, k in enumerate([0, 1, -2, 5]):
        np.testing.assert_array_equal(wrapped[r], np.roll(xv[r], k))
        want = np.zeros(6, np.float32)
        src = np.arange(6) - k
        ok = (src >= 0) & (src < 6)
        want[ok] = xv[r][src[ok]]
        np.testing.assert_array_equal(shifted[r], want)


def test_logical_ops_and_all_any(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    pos = mtf.greater(x, 0.0)
    got = evaluate([mtf.logical_not(pos), mtf.logical_and(pos, x), mtf.logical_or(pos, x * 0.0),
                    mtf.reduce_all(pos, reduced_dim=B), mtf.reduce_any(pos, reduced_dim=B),
                    mtf.reduce_all(x)], {x: xv})
    p = xv > 0
    np.testing.assert_array_equal(got[0], ~p)
    np.testing.assert_array_equal(got[1], p & (xv != 0))
    np.testing.assert_array_equal(got[2], p)
    np.testing.assert_array_equal(got[3], p.all(axis=1))
    np.testing.assert_array_equal(got[4], p.any(axis=1))
    assert got[5] == (xv != 0).all()


def test_bool_tensors_are_numpy_bools_both_ways(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    m = mtf.placeholder(mesh, [A, B], dtype=mtf.bool, name="m")
    mv = RNG.standard_normal((4, 6)) > 0
    pos = mtf.greater(x, 0.0)
    assert pos.dtype == mtf.bool == mtf.bool_ and mtf.bool.size == 1 and mtf.bool.name == "bool"
    kept = mtf.import_fully_replicated(mesh, np.array([True, False, True, True]), [A])
    assert kept.dtype == mtf.bool
    assert mtf.constant(mesh, np.array([1, 0, 2, 0]), [A], dtype=mtf.bool).dtype == mtf.bool
    got = evaluate([pos, mtf.logical_and(pos, m), mtf.where(m, x, -x), mtf.cast(m, mtf.float32),
                    mtf.logical_and(kept, m), mtf.transpose(m, [B, A])], {x: xv, m: mv})
    assert got[0].dtype == np.bool_ and got[1].dtype == np.bool_
    np.testing.assert_array_equal(got[0], xv > 0)
    np.testing.assert_array_equal(got[1], (xv > 0) & mv)
    np.testing.assert_array_equal(got[2], np.where(mv, xv, -xv))
    np.testing.assert_array_equal(got[3], mv.astype(np.float32))
    np.testing.assert_array_equal(got[4], np.array([True, False, True, True])[:, None] & mv)
    np.testing.assert_array_equal(got[5], mv.T)
    ops = evaluate([pos & m, pos | m, ~m], {x: xv, m: mv})
    np.testing.assert_array_equal(ops[0], (xv > 0) & mv)
    np.testing.assert_array_equal(ops[1], (xv > 0) | mv)
    np.testing.assert_array_equal(ops[2], ~mv)
    # Integers feed a bool placeholder as "nonzero".
    ints = mtf.Session(mesh.graph).run(m, {m: np.arange(24).reshape(4, 6) % 3})
    np.testing.assert_array_equal(ints, np.arange(24).reshape(4, 6) % 3 != 0)
    with pytest.raises(TypeError, match="is bool, which takes no arithmetic"):
        pos * 2.0
    with pytest.raises(TypeError, match="cast"):
        mtf.reduce_sum(pos)


def test_comparisons_take_python_numbers_on_either_side(mesh, xv):
    x = mtf.placeholder(mesh, [A, B])
    got = evaluate([mtf.greater(x, 0.5), mtf.less(0.5, x), mtf.equal(x * 0.0, 0)], {x: xv})
    np.testing.assert_array_equal(got[0], xv > 0.5)
    np.testing.assert_array_equal(got[1], xv > 0.5)
    assert got[2].all()
    with pytest.raises(mtf.ValueError, match="at least one"):
        mtf.greater(1.0, 2.0)
