"""Mesh TensorFlow's Funnel Transformer layer stack
(transformer/funnel_transformer.py): an encoder whose sequences shorten
block by block.

Blocks run in order; block b has block_param_size[b] layers of parameters,
each run block_repeat_size[b] times in a row (the repeats share the
parameters), and each layer is n_submodules sublayers' worth of the layers
list (SelfAttention, DenseReluDense, ...). The first submodule of the first
layer of every block after the first pools the sequence after it runs:
pooling_size neighbouring positions become one (mean, max or min), and the
context follows: its length dimension shortens, its sequence_id keeps the
first of each pool and its position the first positions. As in the
original, attention runs before the pooling rather than pooling only the
queries. Decoding with a funnel encoder (BitransformerFunnel) is not here.
"""

from .. import _mtf as _ops
from ..sequence_pooling import pool_tensor_1d, stride_tensor_1d
from .transformer import LayerStack, sublayer_mask_padding

__all__ = ["FunnelTransformerLayerStack"]

_POOLS = {"mean": _ops.reduce_mean, "max": _ops.reduce_max, "min": _ops.reduce_min}


class FunnelTransformerLayerStack(LayerStack):
    """See the module's description; sublayers as in LayerStack."""

    def __init__(self, layers, n_blocks, block_param_size, block_repeat_size, pooling_size=2,
                 sublayers_initial=None, sublayers_per_layer=None, sublayers_final=None,
                 pooling_type="mean", n_submodules=2, dropout_rate=0.0, norm_epsilon=1e-6):
        if len(block_param_size) != n_blocks or len(block_repeat_size) != n_blocks:
            raise ValueError("FunnelTransformerLayerStack: %d blocks, but block_param_size %s "
                             "and block_repeat_size %s must have one entry each"
                             % (n_blocks, list(block_param_size), list(block_repeat_size)))
        if len(layers) != sum(block_param_size) * n_submodules:
            raise ValueError("FunnelTransformerLayerStack: %d layers given; the blocks need "
                             "sum(block_param_size) * n_submodules = %d"
                             % (len(layers), sum(block_param_size) * n_submodules))
        if pooling_type not in _POOLS:
            raise ValueError("FunnelTransformerLayerStack: pooling_type %r is not one of %s"
                             % (pooling_type, sorted(_POOLS)))
        super(FunnelTransformerLayerStack, self).__init__(
            layers, dropout_rate=dropout_rate, norm_epsilon=norm_epsilon,
            sublayers_initial=sublayers_initial, sublayers_per_layer=sublayers_per_layer,
            sublayers_final=sublayers_final)
        self.n_blocks = n_blocks
        self.block_param_size = list(block_param_size)
        self.block_repeat_size = list(block_repeat_size)
        self.pooling_size = pooling_size
        self.pool_fn = _POOLS[pooling_type]
        self.n_submodules = n_submodules
        self._context = None

    def update_context(self, context, x, pool_dim_name):
        """The context after pooling x along pool_dim_name: the shorter
        length dimension, the strided sequence_id, the first positions."""
        pooled = x.shape.get_dim_by_name(pool_dim_name)
        context.position = _ops.slice(context.position, 0, pooled.size, pool_dim_name)
        if isinstance(context.sequence_id, _ops.Tensor):
            context.sequence_id = stride_tensor_1d(context.sequence_id, context.length_dim,
                                                   self.pooling_size)
        context.length_dim = pooled

    def call(self, context, x):
        x = self.call_sublayers(self._sublayers_initial, x, context)
        context.layer_outputs.append(x)
        if context.layer_index != 0:
            raise ValueError("FunnelTransformerLayerStack.call: the context has run layers "
                             "already (layer_index %d); give each call a new Context"
                             % context.layer_index)
        # Layers of the same position in the repeats of a block share a name,
        # hence their variables.
        first = 0
        for block in range(self.n_blocks):
            repeats = self.block_repeat_size[block]
            for param in range(self.block_param_size[block]):
                for repeat in range(repeats):
                    for sub in range(self.n_submodules):
                        layer = self._layers[first + param * self.n_submodules + sub]
                        layer.set_name("funnel_block_%03d/param_idx_%03d/submodule_%03d"
                                       % (block, param, sub))
                        x = self.call_layer(x, layer, context)
                        if block > 0 and param == 0 and repeat == 0 and sub == 0:
                            x = pool_tensor_1d(x, context.length_dim, self.pool_fn,
                                               self.pooling_size)
                            self.update_context(context, x, context.length_dim.name)
                        context.layer_outputs.append(x)
                        context.layer_index += 1
            first += self.block_param_size[block] * self.n_submodules
        context.current_layer = context.current_layer_input = None
        x = self.call_sublayers(self._sublayers_final, x, context)
        x = sublayer_mask_padding(x, self, context)  # the pooled padding: always
        context.layer_outputs[-1] = x
        self._context = context
        return x

    @property
    def context(self):
        """The context of the last call: its sequence_id and position are
        the pooled ones an encoder-decoder's decoder attends with."""
        return self._context
