"""Mesh TensorFlow's transformer/memory_layers_test.py (tensorflow/mesh),
ported case by case: the same layer, shapes, keys and expected scores and
indices. The original's mock context becomes the small class below; its
mocked initializer (1 + range) becomes variables set by shape in the
Session (initial_values.run)."""
import numpy as np

import mtf
from mtf.transformer import memory_layers

from initial_values import one_plus_range, run


class Context(object):
    def __init__(self, mesh):
        self.mesh = mesh
        self.variable_dtype = mtf.float32


def test_call_shape():
    key_size, value_size, n_keys, n_heads, knn = 5, 10, 6, 2, 3
    seq_len, batch = 4, 5
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mtf_mesh")
    model_dim = mtf.Dimension("model", value_size)
    seq_dim = mtf.Dimension("length", seq_len)
    batch_dim = mtf.Dimension("batch", batch)
    kv_memory = memory_layers.ProductKeyValueMemory(key_size, n_keys, n_heads, knn)
    mtf_x = mtf.ones(mesh, mtf.Shape([batch_dim, seq_dim, model_dim]))
    out_tensor = kv_memory.call(Context(mesh), mtf_x)
    # Dimensions should be untouched
    assert mtf_x.shape == out_tensor.shape
    # (Beyond the original: the layer runs, with its variables as the mock gives them.)
    out = run(out_tensor, {}, one_plus_range)
    assert out.shape == (batch, seq_len, value_size) and np.isfinite(out).all()


def test_get_indices():
    key_size, n_keys, product_size, head_size, batch, seq_len, knn = 2, 3, 2, 2, 2, 2, 2
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mtf_mesh")
    n_key_dim = mtf.Dimension("n_keys", n_keys)
    key_dim = mtf.Dimension("key", key_size // 2)
    seq_dim = mtf.Dimension("length", seq_len)
    batch_dim = mtf.Dimension("batch", batch)
    head_dim = mtf.Dimension("n_heads", head_size)
    product_dim = mtf.Dimension("product_key", product_size)
    knn_dim = mtf.Dimension("knn", knn)

    query_shape = mtf.Shape([batch_dim, seq_dim, head_dim, product_dim, key_dim])
    keys_shape = mtf.Shape([head_dim, product_dim, n_key_dim, key_dim])
    query = mtf.ones(mesh, query_shape)
    keys_vals = [
        [[[4], [1], [2]], [[2], [-1], [2]]],
        [[[1], [2], [5]], [[6], [1], [4]]],
    ]
    # h1: first scores [4, 2] and [2, 2]; cartesian sums [6, 6]; indices [0, 2].
    # h2: first scores [5, 2] and [6, 4]; cartesian sums [11, 9]; indices [6, 8].
    expected_scores = np.broadcast_to(np.array([[6, 6], [11, 9]]),
                                      [batch, seq_len, head_size, knn])
    expected_indices = np.broadcast_to(np.array([[0, 2], [6, 8]]),
                                       [batch, seq_len, head_size, knn])
    keys = mtf.constant(mesh, np.array(keys_vals, np.float32), keys_shape)

    pkm = memory_layers.ProductKeyValueMemory(key_size, n_keys, head_size, knn)
    mtf_scores, mtf_indices = pkm.get_indices(keys, query)

    expected_shape = mtf.Shape([batch_dim, seq_dim, head_dim, knn_dim])
    assert expected_shape == mtf_scores.shape
    assert expected_shape == mtf_indices.shape
    scores, indices = mtf.Session(graph, mesh_impl="placement").run([mtf_scores, mtf_indices])
    np.testing.assert_array_equal(expected_scores, scores)
    np.testing.assert_array_equal(expected_indices, indices)
