"""NumPy arrays in and out: every dtype, conversions, one copy at most, errors."""

import numpy as np
import pytest

import mtf


def session_with(dtype, shape="a:2;b:3"):
    g = mtf.Graph()
    x = mtf.placeholder(mtf.Mesh(g, "m"), shape, dtype)
    return mtf.Session(g), x


@pytest.mark.parametrize("dtype,np_dtype", [(mtf.float32, np.float32), (mtf.int32, np.int32)])
def test_round_trip_of_every_dtype(dtype, np_dtype):
    s, x = session_with(dtype)
    v = (np.arange(6).reshape(2, 3) * 7 - 11).astype(np_dtype)
    out = s.run(mtf.identity(x), {x: v})
    assert out.dtype == np_dtype and out.shape == (2, 3)
    np.testing.assert_array_equal(out, v)
    scalar = s.run(mtf.reduce_sum(x), {x: v})
    assert scalar.shape == () and scalar == v.sum()


@pytest.mark.parametrize("source", [np.float64, np.float16, np.int64, np.int8, np.uint8, bool])
def test_feeds_convert_within_a_kind(source):
    s, x = session_with(mtf.float32)
    v = np.array([[1, 0, 1], [0, 1, 1]]).astype(source)
    np.testing.assert_array_equal(s.run(mtf.identity(x), {x: v}), v.astype(np.float32))
    s, i = session_with(mtf.int32)
    if np.dtype(source).kind != "f":
        np.testing.assert_array_equal(s.run(mtf.identity(i), {i: v}), v.astype(np.int32))


def test_non_contiguous_arrays_and_lists_are_fed():
    s, x = session_with(mtf.float32)
    big = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = big[::2, 1::2]  # strided
    np.testing.assert_array_equal(s.run(mtf.identity(x), {x: view}), view)
    np.testing.assert_array_equal(s.run(mtf.identity(x), {x: big[:3, :2].T}), big[:3, :2].T)
    np.testing.assert_array_equal(s.run(mtf.identity(x), {x: [[1, 2, 3], [4, 5, 6]]}),
                                  [[1, 2, 3], [4, 5, 6]])


def test_fetches_are_writable_and_never_alias_variables():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    v = mtf.get_variable(m, "v", "a:3", initializer=mtf.ones_initializer())
    s = mtf.Session(g)
    fetched = s.run(v)
    assert fetched.flags.writeable and fetched.flags.c_contiguous
    fetched[:] = 5
    np.testing.assert_array_equal(s.run(v), np.ones(3))
    value = s.variable_value("v")
    value[:] = 7
    np.testing.assert_array_equal(s.variable_value("v"), np.ones(3))
    fresh = s.run(v * 2.0)  # a fresh result is handed over without a copy
    assert fresh.base is not None and not isinstance(fresh.base, np.ndarray)


def test_bad_feeds_say_what_is_wrong():
    s, x = session_with(mtf.int32)
    with pytest.raises(mtf.DTypeError, match="int32.*float64.*astype"):
        s.run(mtf.identity(x), {x: np.ones((2, 3))})
    with pytest.raises(mtf.ValueError, match=r"\(2, 3\), not \(3, 2\)"):
        s.run(mtf.identity(x), {x: np.ones((3, 2), np.int32)})
    with pytest.raises(mtf.ValueError, match="feed_dict keys"):
        s.run(mtf.identity(x), {"x": 1})
    with pytest.raises(mtf.DTypeError, match="dtype"):
        s.run(mtf.identity(x), {x: np.array([["a"] * 3] * 2)})
    with pytest.raises(mtf.ValueError, match="placeholder"):
        s.run(mtf.identity(x))  # not fed
    g = mtf.Graph()
    i = mtf.placeholder(mtf.Mesh(g, "m"), "h:2;w:2;c:1", mtf.int32)
    with pytest.raises(mtf.DTypeError, match="max_pool.*float32 or bfloat16, not int32"):
        mtf.max_pool(i, [2, 2])


def test_bfloat16_feeds_and_fetches_are_floats_rounded_to_nearest_even():
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    b = mtf.placeholder(mesh, "a:4", mtf.bfloat16)
    doubled = mtf.cast(mtf.cast(b, mtf.float32) * 2.0, mtf.bfloat16)
    assert doubled.dtype == mtf.bfloat16
    s = mtf.Session(g, mesh_shape="x:2", layout="a:x")
    fed = np.array([1.0, 1.00390625, 1.01171875, -3.14159], np.float64)
    out = s.run([b, doubled], {b: fed})
    assert out[0].dtype == np.float32
    np.testing.assert_array_equal(out[0], [1.0, 1.0, 1.015625, -3.140625])
    np.testing.assert_array_equal(out[1], [2.0, 2.0, 2.03125, -6.28125])


def test_variable_dtype_keeps_float32_weights_read_as_bfloat16():
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    vd = mtf.VariableDType(mtf.float32, mtf.float32, mtf.bfloat16)
    assert vd.slice_dtype == mtf.float32 and "activation bfloat16" in repr(vd)
    w = mtf.get_variable(mesh, "w", "a:4", mtf.constant_initializer(1.0), dtype=vd)
    assert w.dtype == mtf.bfloat16
    loss = mtf.reduce_sum(mtf.cast(w * w, mtf.float32))
    train = mtf.optimize.SgdOptimizer(0.001).minimize(loss)
    s = mtf.Session(g)
    s.run(loss, targets=train)
    np.testing.assert_array_equal(s.variable_value("w"), np.full(4, np.float32(1.0) - np.float32(0.002)))
    with pytest.raises(mtf.DTypeError, match="bfloat16 master"):
        mtf.VariableDType(mtf.bfloat16)
