"""AdamW, every Adafactor option and global-norm clipping against NumPy."""

import re

import numpy as np
import pytest

import mtf

A, B = mtf.Dimension("a", 3), mtf.Dimension("b", 4)
STEPS = 4


def run(optimizer, names=("w", "ln/scale"), mesh_shape="", layout=""):
    """Minimises sum over names of 0.5 * sum((w - target)^2); returns the
    start values, the targets and the values after STEPS updates."""
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    targets, loss, ws = {}, None, {}
    for k, name in enumerate(names):
        w = mtf.get_variable(m, name, [A, B], initializer=mtf.random_normal_initializer(0, 1))
        targets[name] = np.cos(np.arange(12.0) + k).reshape(3, 4).astype(np.float32) * 0.3
        part = mtf.reduce_sum(mtf.square(w - mtf.constant(m, targets[name], [A, B]))) * 0.5
        loss = part if loss is None else loss + part
        ws[name] = w
    updates = optimizer.minimize(loss)
    s = mtf.Session(g, mesh_shape=mesh_shape, layout=layout)
    start = {n: s.run(w).astype(np.float64) for n, w in ws.items()}
    for _ in range(STEPS):
        s.run(updates)
    return start, targets, {n: s.run(w) for n, w in ws.items()}


def adamw_reference(start, targets, lr, wd, b1, b2, eps, exclude, bias_correction):
    w = {n: v.copy() for n, v in start.items()}
    m = {n: np.zeros_like(v) for n, v in w.items()}
    v2 = {n: np.zeros_like(v) for n, v in w.items()}
    for t in range(1, STEPS + 1):
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) if bias_correction else lr
        for n in w:
            g = w[n] - targets[n]
            m[n] = b1 * m[n] + (1 - b1) * g
            v2[n] = b2 * v2[n] + (1 - b2) * g * g
            update = lr_t * m[n] / (np.sqrt(v2[n]) + eps)
            if not any(re.search(p, n) for p in exclude):
                update = update + lr * wd * w[n]
            w[n] = w[n] - update
    return w


@pytest.mark.parametrize("layout", ["", "b:x"])
def test_adamw_is_mesh_tensorflows(layout):
    opt = mtf.optimize.AdamWeightDecayOptimizer(0.05, weight_decay_rate=0.2,
                                                exclude_from_weight_decay=["/scale$"])
    start, targets, got = run(opt, mesh_shape="x:2" if layout else "", layout=layout)
    want = adamw_reference(start, targets, 0.05, 0.2, 0.9, 0.999, 1e-6, ["/scale$"], False)
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-4, atol=2e-5)
    assert np.abs(got["w"] - start["w"]).max() > 0.05  # it trained
    with pytest.raises(ValueError, match="is not a regular expression"):
        run(mtf.optimize.AdamWeightDecayOptimizer(0.1, 0.1, exclude_from_weight_decay=["(x"]))


def adafactor_reference(start, targets, o):
    """Mesh TensorFlow's Adafactor in NumPy (variables [a:3, b:4]: b is the
    largest dimension, so vr keeps the mean over b and vc the mean over a)."""
    w = {n: v.copy() for n, v in start.items()}
    vr = {n: np.zeros(3) for n in w}
    vc = {n: np.zeros(4) for n in w}
    v = {n: np.zeros((3, 4)) for n in w}
    m = {n: np.zeros((3, 4)) for n in w}
    factored = o.get("factored", True) and 3 >= o.get("min_dim_size_to_factor", 32)
    for t in range(1, STEPS + 1):
        rate = o.get("decay_rate")
        if rate is None:
            decay = 1 - t ** -o.get("decay_exponent", 0.8)
        elif str(rate).startswith("pow("):
            decay = 1 - t ** -float(rate[4:-1])
        elif str(rate).startswith("adam("):
            b = float(rate[5:-1])
            decay = b * (1 - b ** (t - 1)) / (1 - b ** t)
        else:
            decay = float(rate)
        lr = o["learning_rate"]
        for n in w:
            g = w[n] - targets[n]
            g2 = g * g + o.get("epsilon1", 1e-30)
            if factored:
                vr[n] = vr[n] * decay + g2.mean(axis=1) * (1 - decay)
                vc[n] = vc[n] * decay + g2.mean(axis=0) * (1 - decay)
                x = g / np.sqrt(vr[n] / vr[n].mean())[:, None] / np.sqrt(vc[n])[None, :]
            else:
                v[n] = v[n] * decay + g2 * (1 - decay)
                x = g / np.sqrt(v[n])
            clip = o.get("clipping_threshold", 1.0)
            if clip > 0:
                x = x / max(1.0, np.sqrt((x * x).mean()) / clip)
            scale = lr
            excluded = any(re.search(p, n) for p in o.get("exclude_from_parameter_scale", []))
            if o.get("multiply_by_parameter_scale", True) and not excluded:
                scale = max(np.sqrt((w[n] ** 2).mean()), o.get("epsilon2", 1e-3)) * lr
            sub = x * scale
            beta1 = o.get("beta1", 0.0)
            if beta1 > 0:
                m[n] = beta1 * m[n] + (1 - beta1) * sub
                sub = m[n]
            w[n] = w[n] - sub
    return w


@pytest.mark.parametrize("options", [
    dict(learning_rate=0.05, min_dim_size_to_factor=2),
    dict(learning_rate=0.05, factored=False),
    dict(learning_rate=0.05, min_dim_size_to_factor=2, decay_rate="pow(0.5)"),
    dict(learning_rate=0.05, factored=False, decay_rate="adam(0.99)"),
    dict(learning_rate=0.05, min_dim_size_to_factor=2, decay_rate=0.9),
    dict(learning_rate=0.05, min_dim_size_to_factor=2, decay_exponent=0.6),
    dict(learning_rate=0.05, min_dim_size_to_factor=2, beta1=0.8),
    dict(learning_rate=0.05, factored=False, clipping_threshold=0.3),
    dict(learning_rate=0.05, factored=False, clipping_threshold=0.0),
    dict(learning_rate=0.02, min_dim_size_to_factor=2, multiply_by_parameter_scale=False),
    dict(learning_rate=0.05, factored=False, epsilon1=1e-2, epsilon2=3.0),
    dict(learning_rate=0.05, min_dim_size_to_factor=2, exclude_from_parameter_scale=["scale"]),
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items() if k != "learning_rate"))
def test_adafactor_option_against_numpy(options):
    start, targets, got = run(mtf.optimize.AdafactorOptimizer(**options))
    want = adafactor_reference(start, targets, options)
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-5, atol=2e-6, err_msg=n)
        assert np.abs(got[n] - start[n]).max() > 1e-3


def test_adafactor_learning_rate_names_its_own_schedule():
    assert str(mtf.optimize.adafactor_learning_rate(0)) == "rsqrt(10000)"
    assert mtf.optimize.adafactor_learning_rate(0, False).at(1) == pytest.approx(0.0005)
    assert mtf.optimize.adafactor_learning_rate("0.1*warmup(2)").at(1) == pytest.approx(0.05)


def test_adafactor_bad_decay_rate_is_refused():
    with pytest.raises(ValueError, match=r'decay_rate "adma\(0.9\)" is not'):
        run(mtf.optimize.AdafactorOptimizer(decay_rate="adma(0.9)"))


def test_clipping_on_a_mesh_equals_one_core_and_reports_the_norm():
    def train(mesh_shape, layout):
        g = mtf.Graph()
        m = mtf.Mesh(g, "m")
        w = mtf.get_variable(m, "w", [A, B], initializer=mtf.random_normal_initializer(0, 1))
        loss = mtf.reduce_sum(mtf.square(w - 5.0))
        opt = mtf.optimize.SgdOptimizer(0.1)
        opt.clip_norm = 1.0
        updates = opt.minimize(loss)
        s = mtf.Session(g, mesh_shape=mesh_shape, layout=layout)
        w0 = s.run(w)
        norm = s.run(opt.gradient_norm())
        s.run(updates)
        return w0, norm, s.run(w)
    w0, norm, w1 = train("", "")
    grad = 2 * (w0 - 5.0)
    np.testing.assert_allclose(norm, np.sqrt((grad ** 2).sum()), rtol=1e-5)
    np.testing.assert_allclose(w1, w0 - 0.1 * grad / norm, rtol=1e-5, atol=1e-6)
    for mesh_shape, layout in [("x:2;y:2", "b:x"), ("x:2;y:3", "b:x;a:y"), ("x:3", "a:x")]:
        _, mnorm, mw1 = train(mesh_shape, layout)
        np.testing.assert_allclose(mnorm, norm, rtol=1e-6)
        np.testing.assert_allclose(mw1, w1, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="finite norm > 0"):
        mtf.optimize.SgdOptimizer(0.1).clip_norm = -1.0


def test_clip_by_global_norm_and_global_norm():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    a = mtf.constant(m, np.array([3.0, 0.0, 0.0]), [A])
    b = mtf.constant(m, np.array([4.0, 0.0, 0.0, 0.0]), [B])
    clipped, norm = mtf.optimize.clip_by_global_norm([a, b], 1.0)
    s = mtf.Session(g, mesh_shape="x:3", layout="a:x")
    np.testing.assert_allclose(s.run(norm), 5.0, rtol=1e-6)
    np.testing.assert_allclose(s.run(mtf.global_norm([a, b])), 5.0, rtol=1e-6)
    np.testing.assert_allclose(s.run(clipped[0])[0], 0.6, rtol=1e-6)
    np.testing.assert_allclose(s.run(clipped[1])[0], 0.8, rtol=1e-6)


def test_gradient_accumulation_equals_the_whole_batch():
    data = np.linspace(-1, 1, 24).reshape(8, 3).astype(np.float32)

    def train(microbatches):
        rows = 8 // microbatches
        g = mtf.Graph()
        m = mtf.Mesh(g, "m")
        n, c = mtf.Dimension("n", rows), mtf.Dimension("c", 3)
        x = mtf.placeholder(m, [n, c])
        w = mtf.get_variable(m, "w", [c], initializer=mtf.random_normal_initializer(0, 1))
        loss = mtf.reduce_sum(mtf.square(x * w - 1.0)) * (1.0 / rows)
        acc = mtf.optimize.GradientAccumulation(mtf.optimize.AdamOptimizer(0.1), loss,
                                                microbatches)
        assert acc.microbatches == microbatches
        s = mtf.Session(g, mesh_shape="x:2", layout="n:x")
        for _ in range(3):
            for k in range(microbatches):
                s.run(acc.accumulate_ops, feed_dict={x: data[k * rows:(k + 1) * rows]})
            if acc.apply_ops:
                s.run(acc.apply_ops)
        return s.run(w)
    whole = train(1)
    for n in (2, 4):
        np.testing.assert_allclose(train(n), whole, rtol=1e-5, atol=1e-6)

    # A mean over kept rows (a token mean): parts weighted by what they keep.
    keep_all = np.array([1, 1, 1, 0, 0, 0, 0, 0], np.float32)

    def train_masked(microbatches):
        rows = 8 // microbatches
        g = mtf.Graph()
        m = mtf.Mesh(g, "m")
        n, c = mtf.Dimension("n", rows), mtf.Dimension("c", 3)
        x = mtf.placeholder(m, [n, c])
        keep = mtf.placeholder(m, [n])
        w = mtf.get_variable(m, "w", [c], initializer=mtf.random_normal_initializer(0, 1))
        kept = mtf.reduce_sum(keep)
        per_row = mtf.reduce_sum(mtf.square(x * w - 1.0), output_shape=[n])
        loss = mtf.reduce_sum(per_row * keep) / mtf.maximum(kept, 1.0)
        acc = mtf.optimize.GradientAccumulation(mtf.optimize.SgdOptimizer(0.1), loss,
                                                microbatches, weight=kept)
        s = mtf.Session(g)
        for k in range(microbatches):
            part = slice(k * rows, (k + 1) * rows)
            s.run(acc.accumulate_ops, feed_dict={x: data[part], keep: keep_all[part]})
        if acc.apply_ops:
            s.run(acc.apply_ops)
        return s.run(w)
    np.testing.assert_allclose(train_masked(4), train_masked(1), rtol=1e-5, atol=1e-6)
    g = mtf.Graph()
    loss = mtf.reduce_sum(mtf.get_variable(mtf.Mesh(g, "m"), "v", [A]))
    with pytest.raises(ValueError, match="0 microbatches"):
        mtf.optimize.GradientAccumulation(mtf.optimize.SgdOptimizer(0.1), loss, 0)
