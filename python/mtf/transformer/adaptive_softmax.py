"""The adaptive softmax (Grave et al., 2016; with per-cluster embedding sizes
as in Baevski & Auli, 2018), Mesh TensorFlow's transformer/adaptive_softmax.py
with the same classes, arguments and losses.

p(id | h) = p(cluster | h) p(id | cluster, h). The first cluster is the head:
its softmax runs over its own ids plus one entry per tail cluster. Training
never forms logits over the whole vocabulary: hidden_to_logits returns the
states while training, and adaptive_softmax_loss_fn computes each cluster's
loss only where the targets fall in it (optionally on a shorter length: a
tail cluster's length_projection_factor keeps the first ceil(factor *
length) of its targets in each sequence, as the original does). Outside
training, hidden_to_logits gives full log-probabilities.

`context` is any object with `mode` ("train" or another mode, as
tf.estimator.ModeKeys) or `train`, `activation_dtype`, `num_microbatches`
and `shared_params` (the loss function's embedding under "embedding");
`decoder` any object with `z_loss` and `loss_denominator(targets,
num_microbatches)`, as Mesh TensorFlow's Unitransformer.
"""

import math

from .. import _mtf as _ops
from .._mtf import layers as _layers
from .vocab_embeddings import check_cluster_counts, cluster_embedding

__all__ = ["AdaptiveSoftmaxVocabEmbedding", "adaptive_softmax_loss_fn"]


def _training(context):
    mode = getattr(context, "mode", None)
    if isinstance(mode, str):
        return mode == "train"
    return bool(context is not None and getattr(context, "train", False))


def _dim(tensor, name):
    return next(d for d in tensor.shape.dims if d.name == name)


class _Cluster(object):
    """One cluster: its embedding over ids [start, end) and its vocab_dim (the
    head's includes the tail clusters' entries)."""

    def __init__(self, embedding, start, end, length_projection_factor, vocab_dim):
        self.embedding, self.start, self.end = embedding, start, end
        self.length_projection_factor = length_projection_factor
        self.vocab_dim = vocab_dim

    def ids_to_embedding(self, ids, context):
        # Ids outside [start, end) point past the table: gather gives zeros.
        local = ids - self.start
        local = _ops.where(_ops.greater_equal(local, 0), local, self.vocab_dim.size)
        local = _ops.where(_ops.less(local, self.end - self.start), local, self.vocab_dim.size)
        return self.embedding.ids_to_embedding(local, context)

    def mask(self, targets):
        return _ops.logical_and(_ops.greater_equal(targets, self.start),
                                _ops.less(targets, self.end))

    def project_to_cluster_length(self, mask, targets, hidden):
        """The targets and states of this cluster's positions, packed to the
        front of a length of ceil(factor * length); later ones are dropped."""
        length = _dim(mask, "length")
        short = _ops.Dimension("length", int(math.ceil(self.length_projection_factor *
                                                       length.size)))
        full = "_adaptive_softmax_full_length"
        mask = _ops.rename_dimension(mask, "length", full)
        position = _ops.cumsum(_ops.cast(mask, _ops.int32), full) - 1
        projection = _ops.cast(mask, _ops.int32) * _ops.one_hot(position, short,
                                                                dtype=_ops.int32)
        full_dim = _dim(projection, full)
        targets = _ops.einsum([projection, _ops.rename_dimension(targets, "length", full)],
                              reduced_dims=[full_dim])
        hidden = _ops.einsum([_ops.cast(projection, hidden.dtype),
                              _ops.rename_dimension(hidden, "length", full)],
                             reduced_dims=[full_dim])
        return targets, hidden

    def loss(self, decoder, hidden, targets, context):
        """Summed cross-entropy over nonzero targets, over the denominator."""
        logits = self.embedding.hidden_to_logits(hidden, context)
        soft_targets = _ops.one_hot(targets - self.start, self.vocab_dim,
                                    dtype=context.activation_dtype)
        loss = _layers.softmax_cross_entropy_with_logits(logits, soft_targets, self.vocab_dim,
                                                         z_loss=decoder.z_loss)
        padding = _layers.weights_nonzero(targets, dtype=context.activation_dtype)
        denominator = decoder.loss_denominator(targets, getattr(context, "num_microbatches", 1))
        return _ops.reduce_sum(loss * padding) / denominator

    def log_softmax(self, hidden, context):
        return _ops.log_softmax(self.embedding.hidden_to_logits(hidden, context), self.vocab_dim)


class AdaptiveSoftmaxVocabEmbedding(object):
    """Clusters of contiguous ids, given in order as dicts {"token_count": n,
    "embedding_size": e (default: output_dim's size), "length_projection_factor":
    f in (0, 1] (default 1; tail clusters, training only)}. The first is the
    head. Share it as the embedding and the softmax weights, and train with
    adaptive_softmax_loss_fn."""

    def __init__(self, mesh, vocab_dim, output_dim, variable_dtype, name, ensemble_dim,
                 clusters):
        check_cluster_counts("AdaptiveSoftmaxVocabEmbedding", name, clusters, vocab_dim)
        self._vocab_dim = vocab_dim
        clusters_made = []
        start = 0
        for i, spec in enumerate(clusters):
            factor = spec.get("length_projection_factor", 1)
            if not 0 < factor <= 1:
                raise ValueError("AdaptiveSoftmaxVocabEmbedding %r: cluster %d's "
                                 "length_projection_factor is %r; it must be in (0, 1]" %
                                 (name, i, factor))
            count = spec["token_count"]
            size = spec.get("embedding_size", output_dim.size)
            # The head's softmax also has an entry per tail cluster.
            cluster_vocab = _ops.Dimension(vocab_dim.name,
                                           count + (len(clusters) - 1 if i == 0 else 0))
            embedding = cluster_embedding(mesh, cluster_vocab, output_dim, variable_dtype,
                                          "%s_%d" % (name, i), ensemble_dim, size)
            clusters_made.append(_Cluster(embedding, start, start + count, factor, cluster_vocab))
            start += count
        self._head, self._tails = clusters_made[0], clusters_made[1:]

    def ids_to_embedding(self, ids, context=None):
        # Each id gets its own cluster's row, zeros from the others.
        parts = [c.ids_to_embedding(ids, context) for c in self._tails + [self._head]]
        return parts[0] if len(parts) == 1 else _ops.add_n(parts)

    def hidden_to_logits(self, hidden, context=None):
        """The states themselves while training (adaptive_softmax_loss_fn
        takes them), else log-probabilities over the whole vocabulary."""
        if _training(context):
            return hidden
        head_size = self._head.end
        head = self._head.log_softmax(hidden, context)
        logits = [_ops.slice(head, 0, head_size, self._vocab_dim.name)]
        for i, tail in enumerate(self._tails):
            # log p(cluster i | h): the head's entry head_size + i.
            index = _ops.constant(head.mesh, head_size + i, dtype=_ops.int32)
            entry = _ops.gather(head, index, self._head.vocab_dim)
            logits.append(entry + tail.log_softmax(hidden, context))
        return _ops.concat(logits, self._vocab_dim.name)

    def compute_loss(self, decoder, hidden, targets, context):
        """The loss of the whole softmax without forming it: each tail
        cluster's loss where the targets fall in it, and the head's loss with
        those targets replaced by their cluster's entry."""
        loss = None
        cluster_entries = None
        for i, tail in enumerate(self._tails):
            mask = tail.mask(targets)
            if tail.length_projection_factor == 1:
                tail_targets = _ops.where(mask, targets, 0)
                tail_hidden = _ops.where(mask, hidden, 0)
            else:
                tail_targets, tail_hidden = tail.project_to_cluster_length(mask, targets, hidden)
            part = tail.loss(decoder, tail_hidden, tail_targets, context)
            loss = part if loss is None else loss + part
            entry = (self._head.end + i) * _ops.cast(mask, targets.dtype)
            cluster_entries = entry if cluster_entries is None else cluster_entries + entry
        head_targets = targets
        if cluster_entries is not None:
            head_targets = _ops.where(_ops.cast(cluster_entries, _ops.bool), cluster_entries,
                                      targets)
        head_loss = self._head.loss(decoder, hidden, head_targets, context)
        return head_loss if loss is None else loss + head_loss


def adaptive_softmax_loss_fn(decoder, context, logits, targets, output_vocab_dim=None):
    """The training loss with an AdaptiveSoftmaxVocabEmbedding shared as
    context.shared_params["embedding"]; `logits` are the final states (what
    hidden_to_logits returns while training). Label smoothing and loss on
    targets only do not apply, as in Mesh TensorFlow."""
    del output_vocab_dim
    embedding = context.shared_params["embedding"]
    return embedding.compute_loss(decoder, hidden=logits, targets=targets, context=context)
