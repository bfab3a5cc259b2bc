"""Product-key memory (Lample et al., 2019), Mesh TensorFlow's
transformer/memory_layers.py: a layer whose output for each position is a
softmax-weighted sum of the `knn` best of n_keys ** 2 learned values, found
through two half-keys per head without scoring every value.

ProductKeyValueMemory(key_size, n_keys, n_heads, knn).call(context, x) reads
`context.mesh` and `context.variable_dtype` (a DType or a VariableDType) and
returns a tensor of x's shape: x's last dimension is the values' dimension.
"""

from .. import _mtf as _ops
from .._mtf import layers as _layers

__all__ = ["ProductKeyValueMemory"]


def _variable_dtype(dtype):
    if isinstance(dtype, _ops.VariableDType):
        return dtype
    return _ops.VariableDType(dtype, dtype, dtype)


class ProductKeyValueMemory(object):
    """n_heads heads, each with two sets of n_keys half-keys of key_size // 2;
    a head's score for value i * n_keys + j is the sum of its query halves'
    scores against half-key i of the first set and j of the second."""

    def __init__(self, key_size, n_keys, n_heads, knn):
        if key_size < 2:
            raise ValueError("ProductKeyValueMemory: key_size must be at least 2 (each half-key "
                             "has key_size // 2 elements), not %r" % (key_size,))
        if not 0 < knn <= n_keys:
            raise ValueError("ProductKeyValueMemory: knn must be in [1, n_keys = %d], not %r" %
                             (n_keys, knn))
        self.key_size, self.n_keys, self.n_heads, self.knn = key_size, n_keys, n_heads, knn
        self.n_values = n_keys ** 2

    def call(self, context, x):
        mesh, dtype = context.mesh, _variable_dtype(context.variable_dtype)
        n_key_dim = _ops.Dimension("n_keys", self.n_keys)
        n_value_dim = _ops.Dimension("n_values", self.n_values)
        key_dim = _ops.Dimension("key", self.key_size // 2)
        head_dim = _ops.Dimension("n_heads", self.n_heads)
        product_dim = _ops.Dimension("product_key", 2)
        value_dim = x.shape.dims[-1]
        keys = _ops.get_variable(mesh, "keys",
                                 _ops.Shape([head_dim, product_dim, n_key_dim, key_dim]),
                                 dtype=dtype)
        values = _layers.embedding_weights(mesh, n_value_dim, value_dim, variable_dtype=dtype,
                                           name="values")
        query = _layers.dense(x, [head_dim, product_dim, key_dim], reduced_dims=[value_dim],
                              use_bias=True, variable_dtype=dtype, name="query")
        # Layer norm normalizes the queries, as in the original (not batch norm).
        query = _layers.layer_norm(query, key_dim)
        scores, indices = self.get_indices(keys, query)  # [..., heads, knn]
        scores = _ops.softmax(scores, scores.shape.dims[-1])
        top_values = _ops.gather(values, indices, n_value_dim)  # [..., heads, knn, value]
        return _ops.einsum([top_values, scores], reduced_dims=scores.shape.dims[-2:])

    def get_indices(self, keys, query):
        """The knn best scores of each head over all n_keys ** 2 products of
        half-keys, and the products' value indices."""
        score_shape = _ops.Shape(query.shape.dims[:-1] + keys.shape.dims[2:3])
        scores = _ops.einsum([query, keys], output_shape=score_shape)  # [..., 2, n_keys]
        knn_dim = _ops.Dimension("knn", self.knn)
        scores, indices = _ops.top_k(scores, score_shape.dims[-1], knn_dim)  # [..., 2, knn]
        # Every pair (a, b) of the two halves' best: score a + b, index a * n_keys + b.
        pairs_dim = _ops.Dimension("knn_square_dim", self.knn ** 2)
        first, second = _ops.unstack(scores, scores.shape.dims[-2])
        second = _ops.rename_dimension(second, "knn", "knn2")
        pair_shape = _ops.Shape(first.shape.dims + second.shape.dims[-1:])
        pair_scores = _ops.replace_dimensions(_ops.add(first, second, output_shape=pair_shape),
                                              pair_shape.dims[-2:], pairs_dim)
        first, second = _ops.unstack(indices, indices.shape.dims[-2])
        second = _ops.rename_dimension(second, "knn", "knn2")
        pair_indices = _ops.replace_dimensions(
            _ops.add(first * self.n_keys, second, output_shape=pair_shape),
            pair_shape.dims[-2:], pairs_dim)
        scores, best = _ops.top_k(pair_scores, pairs_dim, knn_dim)
        return scores, _ops.gather(pair_indices, best, pairs_dim)
