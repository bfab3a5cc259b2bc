"""Transformer layers as classes with call(context, x), Mesh TensorFlow's
transformer/transformer_layers.py: SelfAttention, DenseReluDense and
Conv1DLayer.

`context` is any object with `mode`, `inputs` (the ids, 0 for padding) and
`activation_dtype`, as Mesh TensorFlow's transformer.Context. mtf's own
incremental decoding is mtf.models.IncrementalDecoder; the "incremental" and
"first_part" modes of Mesh TensorFlow's decoder loop are not taken here.
"""

from .. import _mtf as _ops
from .._mtf import layers as _layers

from .transformer import TransformerLayer, scoped_name

__all__ = ["Conv1DLayer", "DenseReluDense", "SelfAttention"]


def _weights(context, layer, kind, what, dims, stddev):
    return _layers.get_or_create_variable(
        context.mesh, scoped_name(layer, kind, what), _ops.Shape(dims),
        _ops.Initializer.normal(0.0, stddev), dtype=context.variable_dtype)


def _dropout(x, context, rate):
    return _ops.dropout(x, is_training=True, rate=rate) if context.train and rate else x


def _segments(sequence_id, keep):
    """sequence_id with only the dimensions in `keep` (a padded or packed
    position's id is the same along any other, as when it was built
    np.ones_like the states): the largest along the others."""
    extra = [d for d in sequence_id.shape.dims if d.name not in keep]
    if extra:
        sequence_id = _ops.reduce_max(sequence_id, output_shape=_ops.Shape(
            [d for d in sequence_id.shape.dims if d.name in keep]))
    return sequence_id


class SelfAttention(TransformerLayer):
    """Multi-head attention of the positions of x over each other: variables
    q, k, v [d_model, heads, d_kv] and o [heads, d_kv, d_model], as Mesh
    TensorFlow initialises them; a position attends to positions of its own
    sequence (context.sequence_id), and only to earlier ones when the model
    is autoregressive."""

    def __init__(self, num_heads=8, key_value_size=128, dropout_rate=0.0, **unsupported):
        if unsupported:
            raise ValueError("SelfAttention: %s not supported here (mtf.layers has the local, "
                             "compressed and relative-position forms)" % sorted(unsupported))
        self.num_heads, self.key_value_size, self.dropout_rate = (num_heads, key_value_size,
                                                                  dropout_rate)

    def call(self, context, x):
        model_dim, length = x.shape.dims[-1], context.length_dim
        if length.name not in x.shape.dimension_names:
            raise ValueError("SelfAttention: x %s lacks the context's length dimension %r"
                             % (x.shape, length.name))
        heads = _ops.Dimension("heads", self.num_heads)
        kv = _ops.Dimension("d_kv", self.key_value_size)
        memory = _ops.Dimension("memory_length", length.size)
        d, hk = model_dim.size, self.num_heads * self.key_value_size
        wq = _weights(context, self, "SelfAttention", "q", [model_dim, heads, kv],
                      (d * self.key_value_size) ** -0.5)
        wk = _weights(context, self, "SelfAttention", "k", [model_dim, heads, kv], d ** -0.5)
        wv = _weights(context, self, "SelfAttention", "v", [model_dim, heads, kv], d ** -0.5)
        wo = _weights(context, self, "SelfAttention", "o", [heads, kv, model_dim], hk ** -0.5)
        memory_x = _ops.rename_dimension(x, length.name, memory.name)
        q = _ops.einsum([x, wq], reduced_dims=[model_dim])
        k = _ops.einsum([memory_x, wk], reduced_dims=[model_dim])
        v = _ops.einsum([memory_x, wv], reduced_dims=[model_dim])
        logits = _ops.einsum([q, k], reduced_dims=[kv])
        if isinstance(context.sequence_id, _ops.Tensor):
            segment = _segments(context.sequence_id, [b.name for b in x.shape.dims[:-1]])
            if segment.dtype != _ops.int32:
                segment = _ops.cast(segment, _ops.int32)
            bias = _layers.attention_mask_same_segment(
                segment, _ops.rename_dimension(segment, length.name, memory.name))
            logits = logits + _ops.cast(bias, logits.dtype)
        if getattr(context.model, "autoregressive", False):
            bias = _layers.attention_mask_autoregressive(context.mesh, length, memory)
            logits = logits + _ops.cast(bias, logits.dtype)
        weights = _dropout(_ops.softmax(logits, memory), context, self.dropout_rate)
        out = _ops.einsum([weights, v], reduced_dims=[memory])
        return _ops.einsum([out, wo], output_shape=x.shape)


class DenseReluDense(TransformerLayer):
    """relu(x wi) wo with hidden_size channels between, dropout on the
    hidden states while training; variables wi [d_model, d_ff] and wo
    [d_ff, d_model]."""

    def __init__(self, hidden_size=4096, dropout_rate=0.0):
        self.hidden_size, self.dropout_rate = hidden_size, dropout_rate

    def call(self, context, x):
        model_dim = x.shape.dims[-1]
        hidden = _ops.Dimension("d_ff", self.hidden_size)
        wi = _weights(context, self, "DenseReluDense", "wi", [model_dim, hidden],
                      model_dim.size ** -0.5)
        wo = _weights(context, self, "DenseReluDense", "wo", [hidden, model_dim],
                      self.hidden_size ** -0.5)
        h = _ops.relu(_ops.einsum([x, wi], reduced_dims=[model_dim]))
        h = _dropout(h, context, self.dropout_rate)
        return _ops.einsum([h, wo], output_shape=x.shape)


class Conv1DLayer(TransformerLayer):
    """A 1-D convolution over the length, the model dimension as channels
    (padding positions zeroed first, "SAME" padding, glorot-uniform filters);
    the output keeps the model dimension's name with output_size channels.
    activation: "linear" or the name of an mtf function (say "relu").
    Nothing stops information crossing packed examples, as in the original."""

    def __init__(self, filter_size, output_size, activation="linear"):
        if activation != "linear" and not callable(getattr(_ops, activation, None)):
            raise ValueError("Conv1DLayer: activation %r is neither \"linear\" nor an mtf "
                             "function" % (activation,))
        self._filter_size, self._output_size = filter_size, output_size
        self._activation = activation

    @property
    def filter_size(self):
        return self._filter_size

    def call(self, context, x, losses=None):
        del losses
        if getattr(context, "mode", None) in ("incremental", "first_part"):
            raise ValueError("Conv1DLayer: mode %r (Mesh TensorFlow's step-by-step decoding) is "
                             "not supported; decode with mtf.models.IncrementalDecoder" % (context.mode,))
        mask = _ops.cast(_ops.not_equal(context.inputs, 0), context.activation_dtype)
        x = x * mask
        model_dim = x.shape.dims[-1]
        x = _ops.replace_dimensions(x, model_dim, _ops.Dimension("input_dim", model_dim.size))
        output = _layers.conv1d(x, output_dim=_ops.Dimension(model_dim.name, self._output_size),
                                filter_size=self._filter_size, padding="SAME",
                                filter_initializer=_ops.Initializer.glorot_uniform())
        if self._activation != "linear":
            output = getattr(_ops, self._activation)(output)
        return output
