"""Mesh TensorFlow's layers_test.py (tensorflow/mesh), ported case by case:
the same graphs, names and assertions; only the TensorFlow plumbing is
replaced (import_tf_tensor -> a placeholder fed a NumPy array, the
PlacementMeshImpl lowering -> a one-processor mtf.Session, Keras reference
layers -> NumPy)."""
import numpy as np
import pytest

import mtf

RNG = np.random.default_rng(1234)


def random_normal(shape):
    return RNG.normal(size=shape).astype(np.float32)


def lower_and_run(fetches, feeds):
    """Stands for Lowering(graph, {mesh: PlacementMeshImpl(shape=[], ...)}) and
    evaluating the exported tensors."""
    graph = next(iter(feeds)).graph
    return mtf.Session(graph, mesh_impl="placement").run(fetches, feeds)


@pytest.mark.parametrize("units,use_bias", [(4, True), (8, False)])
def test_dense(units, use_bias):
    batch, channels = 2, 3
    inputs = random_normal([batch, channels])
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    channels_dim = mtf.Dimension("channels", channels)
    depth_dim = mtf.Dimension("depth", units)
    mtf_inputs = mtf.placeholder(mesh, mtf.Shape([batch_dim, channels_dim]))
    mtf_outputs = mtf.layers.dense(mtf_inputs, output_dim=depth_dim, reduced_dims=[channels_dim],
                                   activation=mtf.relu, use_bias=use_bias)
    actual = lower_and_run(mtf_outputs, {mtf_inputs: inputs})
    assert actual.shape == (batch, units)  # Keras' Dense gives this shape


def test_layer_norm():
    batch, channels = 2, 3
    inputs = random_normal([batch, channels])
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    channels_dim = mtf.Dimension("channels", channels)
    mtf_inputs = mtf.placeholder(mesh, mtf.Shape([batch_dim, channels_dim]))
    mtf_outputs = mtf.layers.layer_norm(mtf_inputs, dim=channels_dim)
    actual = lower_and_run(mtf_outputs, {mtf_inputs: inputs})
    assert actual.shape == inputs.shape


def test_batch_norm():
    batch, channels = 2, 3
    inputs = np.array([[0, 1, 2], [4, 5, 6]], dtype=np.float32)
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    channels_dim = mtf.Dimension("channels", channels)
    mtf_inputs = mtf.placeholder(mesh, mtf.Shape([batch_dim, channels_dim]))
    mtf_outputs_0, _ = mtf.layers.batch_norm(mtf_inputs, is_training=True, momentum=0.95,
                                             epsilon=1e-6, dims_idx_start=0, dims_idx_end=1,
                                             name="bn0")
    mtf_outputs_1, _ = mtf.layers.batch_norm(mtf_outputs_0 * 2 + 1, is_training=True,
                                             momentum=0.95, epsilon=1e-6, dims_idx_start=0,
                                             dims_idx_end=1, name="bn1")
    actual_0, actual_1 = lower_and_run([mtf_outputs_0, mtf_outputs_1], {mtf_inputs: inputs})
    expected = np.array([[-1, -1, -1], [1, 1, 1]])
    np.testing.assert_allclose(actual_0, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(actual_1, expected, rtol=1e-6, atol=1e-6)


def test_weights_nonzero():
    inputs = np.array([[3, 1, 0], [1, 0, 0]], dtype=np.int32)
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", inputs.shape[0])
    channels_dim = mtf.Dimension("channels", inputs.shape[1])
    mtf_inputs = mtf.placeholder(mesh, mtf.Shape([batch_dim, channels_dim]), dtype=mtf.int32)
    mtf_outputs = mtf.layers.weights_nonzero(mtf_inputs)
    actual = lower_and_run(mtf_outputs, {mtf_inputs: inputs})
    np.testing.assert_array_equal(actual, (inputs != 0).astype(np.float32))


def test_dense_relu_dense():
    batch, channels, hidden = 2, 3, 5
    inputs = random_normal([batch, channels])
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    channels_dim = mtf.Dimension("channels", channels)
    hidden_dim = mtf.Dimension("hidden", hidden)
    mtf_inputs = mtf.placeholder(mesh, mtf.Shape([batch_dim, channels_dim]))
    mtf_outputs = mtf.layers.dense_relu_dense(mtf_inputs, hidden_channels=hidden_dim)
    actual = lower_and_run(mtf_outputs, {mtf_inputs: inputs})
    assert actual.shape == inputs.shape


@pytest.mark.parametrize("batch,length,io_channels,kv_channels,heads,window_size",
                         [(2, 16, 3, 4, 2, 2), (1, 8, 5, 3, 1, 4)])
def test_masked_local_attention_1d(batch, length, io_channels, kv_channels, heads, window_size):
    length_q = length
    query = random_normal([batch, length_q, io_channels])
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    length_q_dim = mtf.Dimension("length_q", length_q)
    io_channels_dim = mtf.Dimension("io_channels", io_channels)
    kv_channels_dim = mtf.Dimension("kv_channels", kv_channels)
    heads_dim = mtf.Dimension("heads", heads)
    mtf_query = mtf.placeholder(mesh, mtf.Shape([batch_dim, length_q_dim, io_channels_dim]))
    mtf_outputs = mtf.layers.masked_local_attention_1d(
        mtf_query, kv_channels=kv_channels_dim, heads=heads_dim, window_size=window_size)
    actual = lower_and_run(mtf_outputs, {mtf_query: query})
    assert actual.shape == (batch, length_q, io_channels)


@pytest.mark.parametrize("batch,heads,length_q,length_kv,depth_k,depth_v", [(2, 4, 5, 7, 3, 1)])
def test_dot_product_attention(batch, heads, length_q, length_kv, depth_k, depth_v):
    query = random_normal([batch, heads, length_q, depth_k])
    key = random_normal([batch, heads, length_kv, depth_k])
    value = random_normal([batch, heads, length_kv, depth_v])
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    heads_dim = mtf.Dimension("heads", heads)
    length_q_dim = mtf.Dimension("length_q", length_q)
    length_kv_dim = mtf.Dimension("length_kv", length_kv)
    depth_k_dim = mtf.Dimension("depth_k", depth_k)
    depth_v_dim = mtf.Dimension("depth_v", depth_v)
    mtf_query = mtf.placeholder(mesh, mtf.Shape([batch_dim, heads_dim, length_q_dim, depth_k_dim]))
    mtf_key = mtf.placeholder(mesh, mtf.Shape([batch_dim, heads_dim, length_kv_dim, depth_k_dim]))
    mtf_value = mtf.placeholder(mesh,
                                mtf.Shape([batch_dim, heads_dim, length_kv_dim, depth_v_dim]))
    mtf_outputs = mtf.layers.dot_product_attention(mtf_query, mtf_key, mtf_value, mask=None)
    actual = lower_and_run(mtf_outputs, {mtf_query: query, mtf_key: key, mtf_value: value})
    assert actual.shape == (batch, heads, length_q, depth_v)


@pytest.mark.parametrize("kv_channels,heads", [(16, 4), (32, 8)])
def test_multihead_attention(kv_channels, heads):
    batch, length, channels = 2, 8, 3
    query = random_normal([batch, length, channels])
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    length_dim = mtf.Dimension("length", length)
    channels_dim = mtf.Dimension("channels", channels)
    kv_channels_dim = mtf.Dimension("kv_channels", kv_channels)
    heads_dim = mtf.Dimension("heads", heads)
    mtf_query = mtf.placeholder(mesh, mtf.Shape([batch_dim, length_dim, channels_dim]))
    mtf_outputs = mtf.layers.multihead_attention(mtf_query, memory_antecedent=None, mask=None,
                                                 kv_channels=kv_channels_dim, heads=heads_dim)
    actual = lower_and_run(mtf_outputs, {mtf_query: query})
    assert actual.shape == query.shape


def _pool_reference(x, ksize, op):
    """NumPy pooling of non-overlapping windows over the axes ksize names
    (from the end: ..., [d,] h, w, channels)."""
    nd = len(ksize)
    shape = list(x.shape)
    new = shape[:-1 - nd]
    for k, s in zip(ksize, shape[-1 - nd:-1]):
        new += [s // k, k]
    new += [shape[-1]]
    axes = tuple(len(shape) - 1 - nd + 2 * i + 1 for i in range(nd))
    return op(x.reshape(new), axis=axes)


@pytest.mark.parametrize("pooling_method", ["MAX_2D", "AVG_2D", "MAX_3D", "AVG_3D"])
def test_pool(pooling_method):
    batch, depth, height, width, channels = 2, 3, 4, 6, 3
    inputs = random_normal([batch, depth, height, width, channels])
    stride_d, stride_h, stride_w = 3, 2, 3
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "my_mesh")
    batch_dim = mtf.Dimension("batch", batch)
    depth_dim = mtf.Dimension("depth", depth)
    height_dim = mtf.Dimension("height", height)
    width_dim = mtf.Dimension("width", width)
    channels_dim = mtf.Dimension("channels", channels)
    mtf_inputs = mtf.placeholder(
        mesh, mtf.Shape([batch_dim, depth_dim, height_dim, width_dim, channels_dim]))
    if pooling_method == "MAX_2D":
        mtf_outputs = mtf.layers.max_pool2d(mtf_inputs, ksize=(stride_h, stride_w))
        expected = _pool_reference(inputs, (stride_h, stride_w), np.max)
    elif pooling_method == "AVG_2D":
        mtf_outputs = mtf.layers.avg_pool2d(mtf_inputs, ksize=(stride_h, stride_w))
        expected = _pool_reference(inputs, (stride_h, stride_w), np.mean)
    elif pooling_method == "MAX_3D":
        mtf_outputs = mtf.layers.max_pool3d(mtf_inputs, ksize=[stride_d, stride_h, stride_w])
        expected = _pool_reference(inputs, (stride_d, stride_h, stride_w), np.max)
    else:
        mtf_outputs = mtf.layers.avg_pool3d(mtf_inputs, ksize=[stride_d, stride_h, stride_w])
        expected = _pool_reference(inputs, (stride_d, stride_h, stride_w), np.mean)
    mtf_gradient = mtf.gradients([mtf_outputs], [mtf_inputs])[0]
    actual, actual_gradient = lower_and_run([mtf_outputs, mtf_gradient], {mtf_inputs: inputs})
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    if pooling_method == "MAX_2D":
        expected_non_zeros = batch * depth * height * width * channels / (stride_h * stride_w)
        assert np.count_nonzero(actual_gradient) == expected_non_zeros
    elif pooling_method == "AVG_2D":
        np.testing.assert_allclose(
            actual_gradient, np.ones(inputs.shape, np.float32) / stride_h / stride_w, rtol=1e-6)
    elif pooling_method == "MAX_3D":
        expected_non_zeros = (batch * depth * height * width * channels /
                              (stride_d * stride_h * stride_w))
        assert np.count_nonzero(actual_gradient) == expected_non_zeros
    else:
        np.testing.assert_allclose(
            actual_gradient,
            np.ones(inputs.shape, np.float32) / stride_d / stride_h / stride_w, rtol=1e-6)
