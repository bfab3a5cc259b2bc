"""Session: meshes and implementations agree, variables, programs, errors."""

import numpy as np
import pytest

import mtf


def mlp(hidden=8):
    g = mtf.Graph()
    m = mtf.Mesh(g, "mesh")
    batch, io, h = mtf.Dimension("batch", 8), mtf.Dimension("io", 4), mtf.Dimension("hidden", hidden)
    x = mtf.placeholder(m, [batch, io], name="x")
    y = mtf.layers.dense(x, h, activation=mtf.relu, name="d1")
    loss = mtf.reduce_mean(mtf.square(mtf.layers.dense(y, io, name="d2") - x))
    return g, x, loss, mtf.optimize.SgdOptimizer(0.05).minimize(loss)


XV = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)


def train(steps=3, **kwargs):
    g, x, loss, ops = mlp()
    s = mtf.Session(g, **kwargs)
    losses = [s.run(loss, {x: XV}, targets=ops) for _ in range(steps)]
    return losses, s.variable_value("d1/kernel")


def test_layouts_and_implementations_give_the_same_bits_when_reproducible():
    want = train(reproducible=True)
    for kwargs in [dict(mesh_shape="r:2;c:2", layout="batch:r;hidden:c"),
                   dict(mesh_shape="r:2;c:2", layout="batch:r;hidden:c", mesh_impl="placement"),
                   dict(mesh_shape="r:4", layout="hidden:r", execution="threads"),
                   dict(mesh_shape="r:2", layout="batch:r", execution="fibers", fuse=False)]:
        got = train(reproducible=True, **kwargs)
        assert [float(l) for l in got[0]] == [float(l) for l in want[0]], kwargs
        np.testing.assert_array_equal(got[1], want[1])


def test_run_takes_tensors_operations_and_lists():
    g, x, loss, ops = mlp()
    s = mtf.Session(g)
    out = s.run([loss, ops[0], x], {x: XV})
    assert out[1] is None and out[0].shape == () and out[2].shape == (8, 4)
    assert s.run(ops[0], {x: XV}) is None
    before = s.run_counter
    s.run((loss,), {x: XV})
    assert s.run_counter == before + 1
    s.run_counter = 0
    assert s.run_counter == 0
    with pytest.raises(mtf.ValueError, match="fetches"):
        s.run("loss")
    with pytest.raises(mtf.ValueError, match="targets"):
        s.run(loss, {x: XV}, targets=[loss])


def test_variables_get_and_set():
    g, x, loss, ops = mlp()
    s = mtf.Session(g, mesh_shape="r:2", layout="hidden:r")
    assert s.variable_names == ["d1/kernel", "d1/bias", "d2/kernel", "d2/bias"]
    s.set_variable_value("d1/bias", np.full(8, 0.5))
    np.testing.assert_array_equal(s.variable_value("d1/bias"), np.full(8, 0.5, np.float32))
    with pytest.raises(mtf.ValueError, match="no variable named"):
        s.variable_value("nope")
    with pytest.raises(mtf.ValueError, match=r"\(8,\)"):
        s.set_variable_value("d1/bias", np.ones(3))


def test_program_counters_check_and_profile():
    g, x, loss, ops = mlp()
    s = mtf.Session(g, mesh_shape="r:2;c:2", layout="batch:r;hidden:c", profile=True)
    s.check([loss], ops)
    assert "allreduce" in s.program_text([loss], ops)
    assert "flops" in s.counters_text([loss], ops).lower()
    s.run(loss, {x: XV}, targets=ops)
    assert s.local_feed_block(x) == ((0, 0), (8, 4))  # one process: the whole tensor
    assert s.last_fed_bytes == 8 * 4 * 4
    explained = s.explain([loss], ops)
    assert "variable d1/kernel" in explained and "| p0 p2" in explained, explained
    assert "collectives per op" in explained
    s.run(loss, {x: XV}, targets=ops)
    assert "einsum" in s.profile()
    s.reset_profile()
    assert s.process_rank == 0 and s.process_count == 1


def test_layout_errors_name_the_tensor():
    g, x, loss, ops = mlp()
    with pytest.raises(mtf.LayoutError, match="batch"):
        mtf.Session(g, mesh_shape="r:3", layout="batch:r").check([loss], ops)
    with pytest.raises(ValueError):  # a LayoutError is a ValueError
        mtf.Session(g, mesh_shape="r:2", layout="batch:q")
    with pytest.raises(mtf.ValueError, match="mesh_impl"):
        mtf.Session(g, mesh_impl="gpu")
    with pytest.raises(mtf.ValueError, match="execution|fibers"):
        mtf.Session(g, execution="many")
    with pytest.raises(mtf.ValueError, match="transport"):
        mtf.Session(g, transport="carrier-pigeon")
    assert mtf.process_transport_kind() == "none"


def test_the_gil_is_released_while_a_run_computes():
    import threading
    import time
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    d, e = mtf.Dimension("d", 1024), mtf.Dimension("e", 1024)
    h = mtf.random_normal(m, [d, e])
    w = mtf.random_normal(m, [e, mtf.Dimension("f", 1024)])
    for _ in range(40):  # one run of about a tenth of a second or more
        h = mtf.rename_dimension(mtf.tanh(mtf.einsum([h, w], [d, mtf.Dimension("f", 1024)])), "f", "e")
    total = mtf.reduce_sum(h)
    s = mtf.Session(g)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)
    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.01)
    start = time.perf_counter()
    s.run(total)
    end = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if start + 0.01 < x < end - 0.01]
    # Python's switch interval is 5 ms: holding the GIL would allow about
    # (end - start) / 5 ms ticks; released, the thread ticks every ~0.5 ms.
    assert end - start > 0.05
    assert len(during) > 3 * (end - start) / 0.005, (len(during), end - start)


def test_none_and_strangers_are_errors_not_crashes():
    # None where a graph belongs: an error naming the call, not a segfault.
    for call, what in ((lambda: mtf.Session(None), "mtf.Session"),
                       (lambda: mtf.Mesh(None, "m"), "mtf.Mesh"),
                       (lambda: mtf.simulate(None, [], mesh_shape="a:1"), "mtf.simulate"),
                       (lambda: mtf.auto_layout(None, []), "mtf.auto_layout")):
        with pytest.raises(mtf.ValueError, match=what + ": expected an mtf.Graph, got None"):
            call()
    # A placeholder of another graph is not a feed for this one.
    g, h = mtf.Graph(), mtf.Graph()
    a = mtf.Dimension("a", 2)
    p = mtf.placeholder(mtf.Mesh(g, "m"), [a], name="x")
    q = mtf.placeholder(mtf.Mesh(h, "m"), [a], name="x")
    with pytest.raises(mtf.ValueError, match="another graph"):
        mtf.Session(g).run(p * 2.0, feed_dict={q: np.ones(2, np.float32)})


def test_check_numerics_stops_at_the_op_that_made_a_nan():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    a = mtf.Dimension("a", 4)
    x = mtf.placeholder(m, [a], name="x")
    w = mtf.get_variable(m, "w", [a], initializer=mtf.ones_initializer())
    loss = mtf.reduce_sum(mtf.log(x) * w)
    train = mtf.optimize.SgdOptimizer(0.1).minimize(loss)
    s = mtf.Session(g, check_numerics=True)
    with pytest.raises(mtf.NumericsError, match="log.*-inf at \\[a 2\\]"):
        s.run(loss, feed_dict={x: np.array([1, 2, 0, 3], np.float32)}, targets=train)
    assert isinstance(mtf.NumericsError("x"), FloatingPointError)
    np.testing.assert_array_equal(s.run(w), np.ones(4, np.float32))
