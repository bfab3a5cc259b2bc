"""Every layer of mtf.layers, run on one processor and on a mesh."""

import numpy as np
import pytest

import mtf

BATCH, LEN, MODEL = mtf.Dimension("batch", 4), mtf.Dimension("length", 6), mtf.Dimension("d_model", 8)


def run_both(fetches, feeds=None, layout="batch:r"):
    g = fetches[0].graph
    one = mtf.Session(g).run(fetches, feeds)
    two = mtf.Session(g, mesh_shape="r:2", layout=layout).run(fetches, feeds)
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    return one


def test_dense_norms_embedding_dropout():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    x = mtf.random_normal(m, [BATCH, LEN, MODEL], seed=1)
    d = mtf.layers.dense(x, [mtf.Dimension("h", 5)], reduced_dims=[MODEL], use_bias=False,
                         activation=mtf.relu, kernel_initializer=mtf.ones_initializer(), name="d")
    ln = mtf.layers.layer_norm(x, MODEL)
    bn, updates = mtf.layers.batch_norm(x, True, [BATCH, LEN], name="bn")
    ids = mtf.cast(mtf.range(m, LEN), mtf.int32)
    emb = mtf.layers.embedding(ids, mtf.Dimension("vocab", 10), MODEL, name="emb")
    drop = mtf.layers.dropout(x, keep_prob=1.0)
    rd = mtf.layers.dense_relu_dense(x, mtf.Dimension("d_ff", 16), name="ffn")
    reused = mtf.layers.get_or_create_variable(m, "d/kernel", "d_model:8;h:5", mtf.zeros_initializer())
    dv, lnv, bnv, embv, dropv, rdv, xv, kv = run_both([d, ln, bn, emb, drop, rd, x, reused])
    np.testing.assert_allclose(dv, np.maximum(xv.sum(-1, keepdims=True), 0) * np.ones(5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lnv.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(bnv.mean((0, 1)), 0, atol=1e-5)
    assert embv.shape == (6, 8) and rdv.shape == xv.shape and (kv == 1).all()
    np.testing.assert_array_equal(dropv, xv)
    assert len(updates) == 2 and all(isinstance(u, mtf.Operation) for u in updates)
    with pytest.raises(mtf.ShapeError, match="d/kernel"):
        mtf.layers.get_or_create_variable(m, "d/kernel", "d_model:3", mtf.zeros_initializer())


def test_attention_and_mixture_of_experts():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    x = mtf.random_normal(m, [BATCH, LEN, MODEL], seed=2)
    mem_dim = mtf.Dimension("memory_length", 6)
    mask = mtf.layers.attention_mask_autoregressive(m, LEN, mem_dim)
    mem = mtf.rename_dimension(x, "length", "memory_length")
    heads, kv = mtf.Dimension("heads", 2), mtf.Dimension("d_kv", 4)
    att = mtf.layers.multihead_attention(x, mem, mask, kv, heads, mem_dim, name="att")
    dpa = mtf.layers.dot_product_attention(x, mem, mem, None, MODEL, mem_dim)
    y, loss = mtf.layers.moe(x, "length", experts_dim=mtf.Dimension("experts", 2),
                             hidden_dim=mtf.Dimension("expert_hidden", 8), name="moe")
    maskv, attv, dpav, yv, lossv = run_both([mask, att, dpa, y, loss], layout="heads:r")
    assert maskv[0, 1] < -1e8 and maskv[1, 0] == 0 and attv.shape == (4, 6, 8)
    assert dpav.shape == (4, 6, 8) and yv.shape == (4, 6, 8) and lossv > 0


def test_convolution_and_pooling_layers():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    img = mtf.random_normal(m, "batch:2;h:8;w:8;ch:3", seed=3)
    vol = mtf.random_normal(m, "batch:2;d:4;h:4;w:4;ch:2", seed=4)
    seq = mtf.random_normal(m, "batch:2;t:8;ch:3", seed=5)
    out = mtf.Dimension("out", 4)
    outs = [
        mtf.layers.conv(img, out, [3, 3], name="c"),
        mtf.layers.conv1d(seq, out, 3, name="c1"),
        mtf.layers.conv2d(img, out, [3, 3], strides=[2, 2], activation=mtf.relu, name="c2"),
        mtf.layers.conv3d(vol, out, [3, 3, 3], padding="VALID", name="c3"),
        mtf.layers.conv_transpose(img, out, [2, 2], strides=[2, 2], name="ct"),
        mtf.layers.conv2d_transpose(img, out, [2, 2], strides=[2, 2], use_bias=False, name="ct2"),
        mtf.layers.conv3d_transpose(vol, out, [2, 2, 2], strides=[2, 2, 2], name="ct3",
                                    filter_initializer=mtf.ones_initializer()),
        mtf.layers.max_pool2d(img), mtf.layers.avg_pool2d(img, [4, 4]),
        mtf.layers.max_pool3d(vol), mtf.layers.avg_pool3d(vol),
    ]
    shapes = [v.shape for v in run_both(outs, layout="batch:r")]
    assert shapes == [(2, 8, 8, 4), (2, 8, 4), (2, 4, 4, 4), (2, 2, 2, 2, 4), (2, 16, 16, 4),
                      (2, 16, 16, 4), (2, 8, 8, 8, 4), (2, 4, 4, 3), (2, 2, 2, 3), (2, 2, 2, 2, 2),
                      (2, 2, 2, 2, 2)]


def test_t5_pieces():
    g = mtf.Graph()
    m = mtf.Mesh(g, "m")
    x = mtf.random_normal(m, [BATCH, LEN, MODEL], seed=3)
    y = mtf.layers.rms_norm(x, MODEL, name="rms")
    mem_dim = mtf.Dimension("memory_length", 6)
    ids = mtf.import_fully_replicated(m, np.array([[5, 7, 0, 0, 3, 0]] * 4, dtype=np.int32),
                          [BATCH, mem_dim])
    pad = mtf.layers.attention_mask_ignore_padding(ids)
    seg_q = mtf.import_fully_replicated(m, np.array([1, 1, 2, 2, 2, 0], dtype=np.int32), [LEN])
    seg_m = mtf.import_fully_replicated(m, np.array([1, 1, 2, 2, 2, 0], dtype=np.int32), [mem_dim])
    same = mtf.layers.attention_mask_same_segment(seg_q, seg_m)
    rel = mtf.layers.relative_position_bias(mtf.range(m, LEN), mtf.range(m, mem_dim),
                                            mtf.Dimension("heads", 2), bidirectional=True)
    yv, padv, samev, relv = run_both([y, pad, same, rel], layout="heads:r")
    xv = mtf.Session(g).run(x)
    want = xv / np.sqrt((xv ** 2).mean(axis=-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(yv, want, rtol=1e-4, atol=1e-5)
    assert padv[0, 2] < -1e8 and padv[0, 0] == 0
    assert samev[0, 1] == 0 and samev[0, 2] < -1e8 and samev[5, 5] == 0
    assert relv.shape == (6, 6, 2) and np.all(relv == 0)  # the table starts at zero
    with pytest.raises(mtf.DTypeError, match="int32"):
        mtf.layers.attention_mask_ignore_padding(x)
    # T5's buckets of relative positions -3..2 (8 buckets, bidirectional).
    rel = mtf.import_fully_replicated(m, np.arange(-3, 3, dtype=np.int32), [LEN])
    buckets = mtf.layers.relative_position_bucket(rel, bidirectional=True, num_buckets=8,
                                                  max_distance=20)
    np.testing.assert_array_equal(mtf.Session(g).run(buckets), [2, 2, 1, 0, 5, 6])


def test_dense_takes_mesh_tensorflows_arguments():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    experts, batch = mtf.Dimension("experts", 2), mtf.Dimension("batch", 3)
    io, hidden = mtf.Dimension("io", 4), mtf.Dimension("hidden", 5)
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((2, 3, 4)).astype(np.float32)
    wv = rng.standard_normal((4, 5)).astype(np.float32)
    x = mtf.placeholder(mesh, [experts, batch, io])
    y = mtf.layers.dense(x, hidden, reduced_dims=[io], expert_dims=[experts], use_bias=False,
                         variable_dtype=mtf.VariableDType(mtf.float32, mtf.float32, mtf.float32),
                         kernel_initializer=mtf.layers.VarianceScalingInitializer(
                             scale=2.0, mode="fan_avg", distribution="uniform"),
                         name="moe_proj")
    w = mtf.constant(mesh, wv, shape=[io, hidden])
    z = mtf.layers.dense(x, hidden, reduced_dims=[io], kernel_weights=w, use_bias=False,
                         name="given")
    session = mtf.Session(graph, mesh_shape="m:2", layout="experts:m")
    kernel = session.variable_value("moe_proj/kernel")
    assert kernel.shape == (2, 4, 5)
    limit = np.sqrt(3 * 2.0 / ((4 + 5) / 2))
    assert np.abs(kernel).max() <= limit
    got_y, got_z = session.run([y, z], {x: xv})
    np.testing.assert_allclose(got_y, np.einsum("ebi,eih->ebh", xv, kernel), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_z, np.einsum("ebi,ih->ebh", xv, wv), rtol=1e-5, atol=1e-5)
    assert not any(n.startswith("given/") for n in session.variable_names)
    with pytest.raises(mtf.ValueError, match="fan_sideways"):
        mtf.layers.VarianceScalingInitializer(mode="fan_sideways")
    init = mtf.layers.VarianceScalingInitializer()([io], [hidden])
    assert isinstance(init, mtf.Initializer)


def test_embedding_takes_mesh_tensorflows_argument_order():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    vocab, model, pos = mtf.Dimension("vocab", 5), mtf.Dimension("model", 3), mtf.Dimension("pos", 4)
    ids = mtf.constant(mesh, np.array([4, 0, 2, 4], np.int32), shape=[pos], dtype=mtf.int32)
    vd = mtf.VariableDType(mtf.float32, mtf.float32, mtf.float32)
    y = mtf.layers.embedding(ids, vocab, model, vd, "emb")
    w = mtf.layers.embedding_weights(mesh, vocab, model, vd, "emb")
    table, got = mtf.Session(graph).run([w, y])
    np.testing.assert_array_equal(got, table[[4, 0, 2, 4]])


def test_mesh_tensorflow_call_shapes_of_dropout_norms_attention_and_loss():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    rng = np.random.default_rng(4)
    xv = rng.standard_normal((4, 6, 8)).astype(np.float32)
    x = mtf.placeholder(mesh, [BATCH, LEN, MODEL])
    off = mtf.dropout(x, False, rate=0.5)
    on = mtf.dropout(x, True, keep_prob=0.5)
    layer_off = mtf.layers.dropout(x, False, rate=0.9)
    ln = mtf.layers.layer_norm(x, MODEL, 1e-5, "ln")
    kv, heads = mtf.Dimension("d_kv", 2), mtf.Dimension("heads", 2)
    mem = mtf.rename_dimension(x, "length", "memory_length")
    att = mtf.layers.multihead_attention(x, mem, None, kv, heads, True, 0.0, name="att")
    vocab = mtf.Dimension("vocab", 8)
    ids = mtf.constant(mesh, rng.integers(0, 8, (4, 6)).astype(np.int32), shape=[BATCH, LEN],
                       dtype=mtf.int32)
    logits = mtf.rename_dimension(x, "d_model", "vocab")
    by_ids = mtf.softmax_cross_entropy_with_logits(logits, ids, vocab)
    by_rows = mtf.softmax_cross_entropy_with_logits(logits, mtf.one_hot(ids, vocab), vocab)
    got = mtf.Session(graph).run([off, on, layer_off, ln, att, by_ids, by_rows], {x: xv})
    np.testing.assert_array_equal(got[0], xv)
    np.testing.assert_array_equal(got[2], xv)
    kept = got[1] != 0
    np.testing.assert_allclose(got[1][kept], 2 * xv[kept], rtol=1e-6)
    assert 0.3 < kept.mean() < 0.7
    mean, var = xv.mean(-1, keepdims=True), xv.var(-1, keepdims=True)
    np.testing.assert_allclose(got[3], (xv - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    assert got[4].shape == (4, 6, 8)
    np.testing.assert_allclose(got[5], got[6], rtol=1e-6)
    with pytest.raises(mtf.ShapeError, match="class ids"):
        mtf.softmax_cross_entropy_with_logits(logits, mtf.cast(logits, mtf.int32), vocab)


def test_separable_conv1d():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    length, depth, out = mtf.Dimension("length", 5), mtf.Dimension("depth", 3), mtf.Dimension("out", 2)
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((4, 5, 3)).astype(np.float32)
    x = mtf.placeholder(mesh, [BATCH, length, depth])
    ws = [rng.standard_normal(3).astype(np.float32) for _ in range(2)]
    w = [mtf.constant(mesh, v, shape=[depth]) for v in ws]
    y = mtf.layers.separable_conv1d(x, out, 0, 1, name="sep", use_bias=False,
                                    kernel_depth_weights=w)
    session = mtf.Session(graph, mesh_shape="r:2", layout="batch:r")
    pw = session.variable_value("sep/pointwise_dense/kernel")
    shifted = np.concatenate([xv[:, 1:], np.zeros((4, 1, 3), np.float32)], axis=1)
    want = np.einsum("blc,co->blo", xv * ws[0] + shifted * ws[1], pw)
    np.testing.assert_allclose(session.run(y, {x: xv}), want, rtol=1e-5, atol=1e-5)
