"""Transformer layers as classes with call(context, x), Mesh TensorFlow's
transformer/transformer_layers.py: Conv1DLayer.

`context` is any object with `mode`, `inputs` (the ids, 0 for padding) and
`activation_dtype`, as Mesh TensorFlow's transformer.Context. mtf's own
incremental decoding is mtf.models.IncrementalDecoder; the "incremental" and
"first_part" modes of Mesh TensorFlow's decoder loop are not taken here.
"""

from .. import _mtf as _ops
from .._mtf import layers as _layers

__all__ = ["Conv1DLayer"]


class Conv1DLayer(object):
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
