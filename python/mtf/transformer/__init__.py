"""mtf.transformer: the pieces of Mesh TensorFlow's transformer package that
model code builds on, with its names and arguments:

- VocabEmbedding, and the variants in vocab_embeddings (factorized,
  adaptive, mixture of softmaxes, Mixtape) and adaptive_softmax (with its
  loss function): int32 ids to model states (ids_to_embedding) and final
  states to logits (hidden_to_logits);
- transformer: the layer-class framework (Context, TransformerLayer,
  LayerStack and its sublayer functions, Unitransformer);
- transformer_layers (SelfAttention, DenseReluDense, Conv1DLayer),
  memory_layers.ProductKeyValueMemory and
  funnel_transformer.FunnelTransformerLayerStack, called as
  layer.call(context, x).

Each is built from mtf's own ops, so it lowers on every layout,
differentiates and runs in bfloat16 like any graph.
"""

from .. import _mtf as _ops
from .._mtf import layers as _layers

__all__ = ["VocabEmbedding", "vocab_embeddings", "adaptive_softmax", "memory_layers",
           "transformer", "transformer_layers", "funnel_transformer"]


class VocabEmbedding(object):
    """One table [ensemble..., vocab_dim, output_dim]: ids pick its rows, and
    logits are the states (scaled by output_dim.size ** -0.5) times the same
    table, as in Mesh TensorFlow's transformer.VocabEmbedding."""

    def __init__(self, mesh, vocab_dim, output_dim, variable_dtype, name, ensemble_dim,
                 initializer=None):
        self._vocab_dim = vocab_dim
        self._output_dim = output_dim
        self._weights = _layers.embedding_weights(
            mesh, vocab_dim, output_dim, variable_dtype=variable_dtype, name=name,
            ensemble_dim=ensemble_dim, initializer=initializer)

    @property
    def weights(self):
        return self._weights

    def ids_to_embedding(self, ids, context=None):
        del context
        return _ops.gather(self._weights, ids, self._vocab_dim)

    def hidden_to_logits(self, hidden, context=None):
        del context
        hidden = hidden * self._output_dim.size ** -0.5
        return _ops.einsum([hidden, self._weights], reduced_dims=[self._output_dim])


from . import vocab_embeddings  # noqa: E402  (it builds on VocabEmbedding)
from . import adaptive_softmax, memory_layers, transformer  # noqa: E402,F401
from . import transformer_layers, funnel_transformer  # noqa: E402,F401
