"""Vocabulary embeddings beside the plain table (Mesh TensorFlow's
transformer/vocab_embeddings.py, the same classes and arguments):

- FactorizedVocabEmbedding: the table as the product of two smaller ones
  through an inner dimension (ALBERT's factorization);
- AdaptiveVocabEmbedding: contiguous clusters of ids, each with its own
  capacity (a full table, or a factorized one with a smaller inner size);
- MixtureOfSoftmaxes: the output distribution as a weighted mixture of
  softmaxes, each over its own context of the final state;
- Mixtape: a cheaper mixture, its gates shared by the rare ids and computed
  by a sigmoid tree.

Each has ids_to_embedding(ids, context) and hidden_to_logits(hidden,
context). `context` may be None (not training) or any object with `train`
(and, for Mixtape's dropout, `length_dim`), as Mesh TensorFlow's
transformer.Context.
"""

from .. import _mtf as _ops
from .._mtf import layers as _layers
from . import VocabEmbedding

__all__ = ["FactorizedVocabEmbedding", "AdaptiveVocabEmbedding", "MixtureOfSoftmaxes", "Mixtape"]


def _ensemble(ensemble_dim):
    if ensemble_dim is None:
        return []
    return list(ensemble_dim) if isinstance(ensemble_dim, (list, tuple)) else [ensemble_dim]


def _training(context):
    return bool(context is not None and getattr(context, "train", False))


class FactorizedVocabEmbedding(object):
    """[vocab, inner] x [inner, output] in place of one [vocab, output] table;
    both factors start normal with stddev inner_dimension_size ** -0.25, so
    their product has unit variance per inner term."""

    def __init__(self, mesh, vocab_dim, output_dim, variable_dtype, name, ensemble_dim,
                 inner_dimension_size):
        if inner_dimension_size is None or inner_dimension_size < 1:
            raise ValueError("FactorizedVocabEmbedding %r: inner_dimension_size must be a "
                             "positive integer, not %r" % (name, inner_dimension_size))
        self._vocab_dim = vocab_dim
        self._output_dim = output_dim
        self._inner_dim = _ops.Dimension("inner_vocab", inner_dimension_size)
        init = _ops.Initializer.normal(stddev=inner_dimension_size ** -0.25)
        self._factor1 = _layers.embedding_weights(
            mesh, vocab_dim, self._inner_dim, variable_dtype=variable_dtype, name=name + "1",
            ensemble_dim=ensemble_dim, initializer=init)
        self._factor2 = _layers.embedding_weights(
            mesh, self._inner_dim, output_dim, variable_dtype=variable_dtype, name=name + "2",
            ensemble_dim=ensemble_dim, initializer=init)

    def ids_to_embedding(self, ids, context=None):
        del context
        rows = _ops.gather(self._factor1, ids, self._vocab_dim)
        return _ops.einsum([rows, self._factor2], reduced_dims=[self._inner_dim])

    def hidden_to_logits(self, hidden, context=None):
        del context
        hidden = hidden * self._output_dim.size ** -0.5
        inner = _ops.einsum([hidden, self._factor2], reduced_dims=[self._output_dim])
        return _ops.einsum([inner, self._factor1], reduced_dims=[self._inner_dim])


def check_cluster_counts(kind, name, clusters, vocab_dim):
    """ValueError unless the clusters' token counts sum to the vocabulary."""
    counts = [c["token_count"] for c in clusters]
    if sum(counts) != vocab_dim.size:
        raise ValueError("%s %r: the clusters' token counts %s sum to %d, not to the "
                         "vocabulary's size %d" % (kind, name, counts, sum(counts), vocab_dim.size))


def cluster_embedding(mesh, cluster_vocab, output_dim, variable_dtype, name, ensemble_dim, size):
    """A cluster's table: plain when its embedding size is output_dim's,
    else factorized through an inner dimension of that size."""
    if size == output_dim.size:
        return VocabEmbedding(mesh, cluster_vocab, output_dim, variable_dtype, name, ensemble_dim)
    return FactorizedVocabEmbedding(mesh, cluster_vocab, output_dim, variable_dtype, name,
                                    ensemble_dim, inner_dimension_size=size)


class _Cluster(object):
    """One cluster's embedding over ids [start, end): ids outside it embed to
    zeros (gather gives zeros for ids out of its table's range)."""

    def __init__(self, embedding, start, end):
        self.embedding, self.start, self.end = embedding, start, end

    def ids_to_embedding(self, ids, context):
        local = ids - self.start
        local = _ops.where(_ops.greater_equal(local, 0), local, self.end)
        return self.embedding.ids_to_embedding(local, context)

    def hidden_to_logits(self, hidden, context):
        return self.embedding.hidden_to_logits(hidden, context)


class AdaptiveVocabEmbedding(object):
    """Clusters of contiguous ids, given in order as dicts {"token_count": n,
    "embedding_size": e}: a cluster whose e is output_dim's size gets a plain
    table, the others a factorized one through an inner dimension of e (more
    capacity for the frequent ids at the front of the vocabulary). Logits are
    the clusters' logits concatenated along the vocabulary."""

    def __init__(self, mesh, vocab_dim, output_dim, variable_dtype, name, ensemble_dim,
                 clusters):
        check_cluster_counts("AdaptiveVocabEmbedding", name, clusters, vocab_dim)
        self._vocab_dim = vocab_dim
        self._clusters = []
        start = 0
        for i, c in enumerate(clusters):
            count, size = c["token_count"], c["embedding_size"]
            cluster_vocab = _ops.Dimension(vocab_dim.name, count)
            embedding = cluster_embedding(mesh, cluster_vocab, output_dim, variable_dtype,
                                          "%s_%d" % (name, i), ensemble_dim, size)
            self._clusters.append(_Cluster(embedding, start, start + count))
            start += count

    def ids_to_embedding(self, ids, context=None):
        # The clusters are disjoint: each id gets one cluster's row, zeros elsewhere.
        parts = [c.ids_to_embedding(ids, context) for c in self._clusters]
        return parts[0] if len(parts) == 1 else _ops.add_n(parts)

    def hidden_to_logits(self, hidden, context=None):
        return _ops.concat([c.hidden_to_logits(hidden, context) for c in self._clusters],
                           self._vocab_dim.name)


class MixtureOfSoftmaxes(object):
    """Logits whose softmax is a mixture of num_softmaxes softmaxes: component
    k's logits come from tanh of its own linear map of the state, its weight
    from a softmax over the components (Yang et al., 2017). The ids embed
    through the plain table."""

    def __init__(self, mesh, vocab_dim, output_dim, variable_dtype, name, ensemble_dim,
                 num_softmaxes):
        self._vocab_dim = vocab_dim
        self._output_dim = output_dim
        self._copy_dim = _ops.Dimension("_%s_copy" % output_dim.name, output_dim.size)
        self._components_dim = _ops.Dimension("softmax_components", num_softmaxes)
        ensemble = _ensemble(ensemble_dim)
        self._embedding_weights = _layers.embedding_weights(
            mesh, vocab_dim, output_dim, variable_dtype=variable_dtype,
            name=name + "_embedding_weights", ensemble_dim=ensemble)
        self._mixture_weights = _layers.embedding_weights(
            mesh, self._components_dim, output_dim, variable_dtype=variable_dtype,
            name=name + "_mixture_weights", ensemble_dim=ensemble)
        self._context_weights = _layers.embedding_weights(
            mesh, self._copy_dim, output_dim, variable_dtype=variable_dtype,
            name=name + "_context_weights", ensemble_dim=ensemble + [self._components_dim])

    def ids_to_embedding(self, ids, context=None):
        del context
        return _ops.gather(self._embedding_weights, ids, self._vocab_dim)

    def hidden_to_logits(self, hidden, context=None):
        del context
        hidden = hidden * self._output_dim.size ** -0.5
        priors = _ops.einsum([hidden, self._mixture_weights], reduced_dims=[self._output_dim])
        contexts = _ops.tanh(_ops.einsum(
            [_ops.rename_dimension(hidden, self._output_dim.name, self._copy_dim.name),
             self._context_weights], reduced_dims=[self._copy_dim]))
        logits = _ops.einsum([contexts, self._embedding_weights],
                             reduced_dims=[self._output_dim])
        # log(sum_k prior_k softmax_k) = logsumexp_k(log prior_k + log softmax_k)
        mixed = (_ops.log_softmax(priors, self._components_dim) +
                 _ops.log_softmax(logits, self._vocab_dim))
        return _ops.reduce_logsumexp(mixed, self._components_dim)


class Mixtape(object):
    """Mixtape (Yang et al., 2019): four components whose per-id gates come
    from a sigmoid tree; the first frequent_token_fraction of the vocabulary
    gets gates of its own, the rare rest shares one set. With extra_ids, the
    last extra_ids ids (sentinels) count as frequent: the logits are computed
    with them at the front and moved back to the end."""

    def __init__(self, mesh, vocab_dim, output_dim, variable_dtype, name, ensemble_dim,
                 extra_ids=0, dropout_rate=0.0, gate_embedding_size=None,
                 frequent_token_fraction=0.1, noise_std_dev=0.0):
        if gate_embedding_size is None or gate_embedding_size < 1:
            raise ValueError("Mixtape %r: gate_embedding_size must be a positive integer, "
                             "not %r" % (name, gate_embedding_size))
        frequent = int(frequent_token_fraction * vocab_dim.size)
        if not 0 < frequent < vocab_dim.size:
            raise ValueError("Mixtape %r: frequent_token_fraction %r of %d ids leaves %d "
                             "frequent ids; it must leave at least one frequent and one rare" %
                             (name, frequent_token_fraction, vocab_dim.size, frequent))
        self._mesh = mesh
        self._extra_ids = extra_ids
        self._dropout_rate = dropout_rate
        self._noise_std_dev = noise_std_dev
        self._vocab_dim = vocab_dim
        self._frequent_dim = _ops.Dimension(vocab_dim.name, frequent)
        self._rare_dim = _ops.Dimension(vocab_dim.name, vocab_dim.size - frequent)
        self._output_dim = output_dim
        self._copy_dim = _ops.Dimension("_%s_copy" % output_dim.name, output_dim.size)
        self._pre_gates_dim = _ops.Dimension("gates", 3)
        self._gates_dim = _ops.Dimension("gates", 4)
        self._gate_embedding_dim = _ops.Dimension("gate_embedding", gate_embedding_size)
        ensemble = _ensemble(ensemble_dim)

        def table(vocab, output, suffix, extra):
            return _layers.embedding_weights(mesh, vocab, output, variable_dtype=variable_dtype,
                                             name=name + suffix, ensemble_dim=ensemble + extra)

        def variable(suffix, dims, initializer):
            return _ops.get_variable(mesh, name + suffix, _ops.Shape(ensemble + dims),
                                     initializer=initializer, dtype=variable_dtype)

        zeros, normal = _ops.Initializer.zeros(), _ops.Initializer.normal()
        self._embedding_weights = table(vocab_dim, output_dim, "_embedding_weights", [])
        self._context_weights = table(self._copy_dim, output_dim, "_context_weights",
                                      [self._gates_dim])
        self._context_weights_bias = variable("_context_weights_bias",
                                              [self._gates_dim, output_dim], zeros)
        self._prior_weights = table(self._gate_embedding_dim, output_dim, "_prior_weights",
                                    [self._pre_gates_dim])
        self._prior_weights_bias = variable(
            "_prior_weights_bias", [self._pre_gates_dim, self._gate_embedding_dim], zeros)
        self._prior_vocab_vector = variable(
            "_prior_vocab_vector", [self._frequent_dim, self._gate_embedding_dim], normal)
        self._prior_gates_vector = variable("_prior_gates_vector",
                                            [self._pre_gates_dim, output_dim], normal)
        self._prior_bias = variable("_prior_bias", [self._frequent_dim, self._pre_gates_dim],
                                    normal)

    def ids_to_embedding(self, ids, context=None):
        del context
        return _ops.gather(self._embedding_weights, ids, self._vocab_dim)

    def _sigmoid_tree(self, logits):
        """Four gates from three sigmoids: g0 splits the mass, g1 and g2 split
        each half."""
        g = _ops.split(_ops.sigmoid(logits), self._pre_gates_dim, self._pre_gates_dim.size)
        return _ops.concat([g[0] * g[1], g[0] * (1 - g[1]), (1 - g[0]) * g[2],
                            (1 - g[0]) * (1 - g[2])], self._gates_dim.name)

    def _dropout(self, x, context):
        if not _training(context) or self._dropout_rate == 0.0:
            return x
        return _layers.dropout(x, True, keep_prob=1.0 - self._dropout_rate,
                               noise_shape=x.shape - context.length_dim)

    def _sentinels_last(self, logits):
        if not self._extra_ids:
            return logits
        sentinels, others = _ops.split(logits, self._vocab_dim,
                                       [self._extra_ids, self._vocab_dim.size - self._extra_ids])
        return _ops.concat([others, sentinels], self._vocab_dim.name)

    def hidden_to_logits(self, hidden, context=None):
        hidden = hidden * self._output_dim.size ** -0.5
        contexts = _ops.einsum(
            [_ops.rename_dimension(hidden, self._output_dim.name, self._copy_dim.name),
             self._context_weights], reduced_dims=[self._copy_dim])
        contexts = _ops.tanh(contexts + self._context_weights_bias)
        component_logits = _ops.einsum([contexts, self._embedding_weights],
                                       reduced_dims=[self._output_dim])
        component_logits = self._dropout(component_logits, context)

        prior_tanh = _ops.tanh(
            _ops.einsum([self._prior_weights, hidden], reduced_dims=[self._output_dim]) +
            self._prior_weights_bias)
        prior_tanh = self._dropout(prior_tanh, context)
        shared = _ops.einsum([self._prior_gates_vector, hidden], reduced_dims=[self._output_dim])
        frequent = (_ops.einsum([self._prior_vocab_vector, prior_tanh],
                                reduced_dims=[self._gate_embedding_dim]) + shared +
                    self._prior_bias)
        rare = _ops.ones(self._mesh, _ops.Shape([self._rare_dim]), dtype=shared.dtype) * shared
        prior_logits = _ops.concat([frequent, rare], self._vocab_dim.name)
        if _training(context) and self._noise_std_dev != 0.0:
            prior_logits = prior_logits + _ops.random_normal(
                self._mesh, prior_logits.shape, stddev=self._noise_std_dev)
        gates = self._sigmoid_tree(prior_logits)
        logits = _ops.einsum([component_logits, gates], reduced_dims=[self._gates_dim])
        return self._sentinels_last(logits)
