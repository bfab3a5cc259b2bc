"""Mesh TensorFlow's local-attention family against NumPy references built
from the same weights: masked_local_attention_1d (blocks, halo, mask),
its incremental step (a ring buffer of keys and values), attention within
1-D and 2-D spatial blocks, memory-compressed attention, and the halo
exchanges; the same values on a split layout."""
import numpy as np
import pytest

import mtf

RNG = np.random.default_rng(7)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def weights(session, name):
    return [session.variable_value(f"{name}/{w}") for w in "qkvo"]  # q,k,v [io,h,kv]; o [h,kv,io]


def attention_np(xq, xm, w, mask, extra_zero_logit=False):
    """x [..., lq, io], memory [..., lm, io]; mask [lq, lm] additive."""
    wq, wk, wv, wo = w
    q = np.einsum("...li,ihk->...hlk", xq, wq)
    k = np.einsum("...mi,ihk->...hmk", xm, wk)
    v = np.einsum("...mi,ihk->...hmk", xm, wv)
    logits = np.einsum("...hlk,...hmk->...hlm", q, k) + mask
    if extra_zero_logit:
        logits = np.concatenate([logits, np.zeros(logits.shape[:-1] + (1,))], axis=-1)
        p = softmax(logits)[..., :-1]
    else:
        p = softmax(logits)
    o = np.einsum("...hlm,...hmk->...hlk", p, v)
    return np.einsum("...hlk,hki->...li", o, wo)


def test_halo_exchanges_concatenate_the_neighbours_positions():
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    x = mtf.placeholder(mesh, "blocks:3;pos:2")
    both = mtf.halo_exchange(x, "blocks", "pos", 3)
    left = mtf.left_halo_exchange(x, "blocks", "pos", 1, wrap=True)
    xv = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    b, lw = mtf.Session(g).run([both, left], {x: xv})
    np.testing.assert_array_equal(b, [[0, 0, 0, 1, 2, 3, 4, 5],
                                      [0, 1, 2, 3, 4, 5, 6, 0],
                                      [2, 3, 4, 5, 6, 0, 0, 0]])
    np.testing.assert_array_equal(lw, [[6, 1, 2], [2, 3, 4], [4, 5, 6]])


@pytest.mark.parametrize("mesh_shape,layout", [("", ""), ("rows:2;cols:2", "length:rows;heads:cols")])
def test_masked_local_attention_1d_matches_its_definition(mesh_shape, layout):
    L, B_, W, io = 16, 8, 3, 6
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    x = mtf.placeholder(mesh, f"batch:2;length:{L};io:{io}")
    y = mtf.layers.masked_local_attention_1d(x, mtf.Dimension("kv", 4), mtf.Dimension("heads", 2),
                                             window_size=W, length_per_split=B_, name="local")
    s = mtf.Session(g, mesh_shape=mesh_shape, layout=layout)
    xv = RNG.normal(size=(2, L, io)).astype(np.float32)
    got = s.run(y, {x: xv})
    # Memory: W zero positions, then the sequence; query p of block b sees
    # memory m' in its block's extended range with m' - b*B in
    # (i + W - B, i + W], i = p - b*B. (block_length: the greatest divisor of
    # 8 up to max(W, 128) is 8.)
    mem = np.concatenate([np.zeros((2, W, io), np.float32), xv], axis=1)
    mask = np.full((L, L + W), -1e9)
    for p in range(L):
        b, i = divmod(p, B_)
        for m in range(b * B_, b * B_ + B_ + W):
            if i + W - B_ < m - b * B_ <= i + W:
                mask[p, m] = 0
    # The zero positions are keys of value zero (logit 0), as the halo makes them.
    want = attention_np(xv, mem, weights(s, "local"), mask)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_incremental_steps_attend_over_a_ring_buffer():
    W, io, T = 3, 5, 5
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    x = mtf.placeholder(mesh, f"batch:2;io:{io}")
    prev_k = mtf.placeholder(mesh, f"batch:2;heads:2;window:{W};kv:4")
    prev_v = mtf.placeholder(mesh, f"batch:2;heads:2;window:{W};kv:4")
    step = mtf.placeholder(mesh, "", dtype=mtf.int32)
    y, k, v = mtf.layers.masked_local_attention_1d_incremental(x, prev_k, prev_v, step, name="inc")
    s = mtf.Session(g)
    wq, wk, wv, wo = weights(s, "inc")
    kc = np.zeros((2, 2, W, 4), np.float32)
    vc = np.zeros((2, 2, W, 4), np.float32)
    for t in range(T):
        xt = RNG.normal(size=(2, io)).astype(np.float32)
        got_y, kc2, vc2 = s.run([y, k, v], {x: xt, prev_k: kc, prev_v: vc, step: np.int32(t)})
        kc[:, :, t % W] = np.einsum("bi,ihk->bhk", xt, wk)
        vc[:, :, t % W] = np.einsum("bi,ihk->bhk", xt, wv)
        np.testing.assert_allclose(kc2, kc, rtol=1e-5, atol=1e-6)
        q = np.einsum("bi,ihk->bhk", xt, wq)
        p = softmax(np.einsum("bhk,bhwk->bhw", q, kc))
        want = np.einsum("bhk,hki->bi", np.einsum("bhw,bhwk->bhk", p, vc), wo)
        np.testing.assert_allclose(got_y, want, rtol=2e-4, atol=2e-5)
        kc, vc = kc2, vc2


@pytest.mark.parametrize("mask_right", [False, True])
def test_spatial_blocks_1d_and_2d_match_full_attention_with_their_masks(mask_right):
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    x1 = mtf.placeholder(mesh, "batch:1;wb:3;w:2;io:4")
    x2 = mtf.placeholder(mesh, "batch:1;hb:2;wb:2;h:2;w:2;io:4")
    kv, heads = mtf.Dimension("kv", 3), mtf.Dimension("heads", 2)
    y1 = mtf.layers.local_self_attention_spatial_blocks(x1, kv, heads, mask_right=mask_right,
                                                        name="a1")
    y2 = mtf.layers.local_2d_self_attention_spatial_blocks(x2, kv, heads, mask_right=mask_right,
                                                           name="a2")
    s = mtf.Session(g)
    v1 = RNG.normal(size=(1, 3, 2, 4)).astype(np.float32)
    v2 = RNG.normal(size=(1, 2, 2, 2, 2, 4)).astype(np.float32)
    g1, g2 = s.run([y1, y2], {x1: v1, x2: v2})
    # 1-D: positions 0..5 in blocks of 2; block b sees blocks b-1, b (and b+1
    # without mask_right), causally within its own block when masked. Halo
    # positions past the ends are zero keys (logit 0).
    seq = v1.reshape(1, 6, 4)
    mem = np.concatenate([np.zeros((1, 2, 4)), seq, np.zeros((1, 2, 4))], axis=1)  # m' = m + 2
    mask = np.full((6, 10), -1e9)
    for p in range(6):
        b = p // 2
        for m in range(2 * b, 2 * b + (4 if mask_right else 6)):  # padded index m'
            if not mask_right or m - 2 <= p:
                mask[p, m] = 0
    want1 = attention_np(seq, mem, weights(s, "a1"), mask).reshape(1, 3, 2, 4)
    np.testing.assert_allclose(g1, want1, rtol=2e-4, atol=2e-5)
    # 2-D: a 4x4 image in 2x2 blocks, zero-padded by a block on every side.
    img = v2.transpose(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 4)  # [batch, row, col, io]
    pad = np.zeros((1, 8, 8, 4))
    pad[:, 2:6, 2:6] = img
    mask = np.full((16, 64), -1e9)
    for r in range(4):
        for c in range(4):
            br, bc = r // 2 * 2, c // 2 * 2
            rows = range(br, br + (4 if mask_right else 6))  # padded rows
            cols = range(bc, bc + (4 if mask_right else 6))
            for mr in rows:
                for mc in cols:
                    if not mask_right or (mr - 2 < r or (mr - 2 == r and mc - 2 <= c)):
                        mask[r * 4 + c, mr * 8 + mc] = 0
    want2 = attention_np(img.reshape(1, 16, 4), pad.reshape(1, 64, 4), weights(s, "a2"), mask)
    want2 = want2.reshape(1, 2, 2, 2, 2, 4).transpose(0, 1, 3, 2, 4, 5)
    np.testing.assert_allclose(g2, want2, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("mask_right", [False, True])
def test_memory_compressed_attention_matches_its_definition(mask_right):
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    x = mtf.placeholder(mesh, "batch:2;length:8;io:4")
    y = mtf.layers.multihead_self_attention_memory_compressed(
        x, mask_right, 2, mtf.Dimension("kv", 3), mtf.Dimension("heads", 2), name="mc")
    s = mtf.Session(g)
    xv = RNG.normal(size=(2, 8, 4)).astype(np.float32)
    mem = xv.reshape(2, 4, 2, 4).mean(axis=2)
    mask = np.zeros((8, 4))
    if mask_right:
        for p in range(8):
            for m in range(4):
                if 2 * m + 1 > p:
                    mask[p, m] = -1e9
    want = attention_np(xv, mem, weights(s, "mc"), mask, extra_zero_logit=True)
    np.testing.assert_allclose(s.run(y, {x: xv}), want, rtol=2e-4, atol=2e-5)


def test_bad_arguments_are_clear_errors():
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    x = mtf.placeholder(mesh, "batch:2;length:6;io:4")
    with pytest.raises(mtf.ValueError, match="length_per_split"):
        mtf.layers.masked_local_attention_1d(x, mtf.Dimension("kv", 2), mtf.Dimension("heads", 1),
                                             window_size=2, length_per_split=4)
    with pytest.raises(mtf.ValueError, match="must divide"):
        mtf.layers.compress_mean(x, "length", 4)
    with pytest.raises(mtf.ValueError, match="halo_size"):
        mtf.halo_exchange(x, "length", "length", 1)


def test_local_block_biases():
    g = mtf.Graph()
    mesh = mtf.Mesh(g, "m")
    block, memory = mtf.Dimension("block", 2), mtf.Dimension("memory", 2)
    b1 = mtf.layers.attention_bias_local_block(mesh, block, memory)
    h, w = mtf.Dimension("h", 2), mtf.Dimension("w", 2)
    b2 = mtf.layers.attention_bias_local_2d_block(mesh, h, w, mtf.Dimension("mh", 2),
                                                  mtf.Dimension("mw", 2))
    v1, v2 = mtf.Session(g).run([b1, b2])
    # The previous block, then this one up to the position.
    np.testing.assert_array_equal(v1, [[0, 0, 0, -1e9], [0, 0, 0, 0]])
    assert v2.shape == (2, 2, 4, 4)
    # Position (0, 1) sees the rows above its own, and its row up to itself.
    visible = v2[0, 1] == 0
    assert visible[:2].all() and visible[2, :4].all() and not visible[3].any()
