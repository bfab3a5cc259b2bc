"""Mesh TensorFlow's transformer/adaptive_softmax_test.py (tensorflow/mesh),
ported case by case: the same clusters, inputs, initial values (set by
shape in the Session, where the original mocks tf.random_normal_initializer)
and expected losses and logits. The original's mock decoder and context
become the small classes below."""
import numpy as np
import pytest

import mtf
from mtf.transformer import adaptive_softmax

from initial_values import initialize_by_shape, new_graph, run


def _log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    top = np.max(logits)
    return logits - (top + np.log(np.sum(np.exp(logits - top))))


def _softmax_cross_entropy_with_logits(logits, target):
    soft_target = np.zeros(len(logits))
    soft_target[target] = 1
    return -np.sum(_log_softmax(logits) * soft_target)


class Decoder(object):
    z_loss = 0.0

    def loss_denominator(self, targets, num_microbatches):
        del targets, num_microbatches
        return 1.0


class Context(object):
    def __init__(self, mode="train", embedding=None):
        self.mode = mode
        self.activation_dtype = mtf.float32
        self.shared_params = {"embedding": embedding}


TARGETS = [2, 4, 4, 6, 2, 5, 7, 5, 2, 1, 6, 7, 0, 0, 3, 2]
HIDDEN = [[p, -10 - p] for p in range(16)]
VALUES = initialize_by_shape({
    (5, 2): [[1, 6], [2, 7], [3, 8], [4, 9], [5, 10]],
    (3, 2): [[11, 14], [12, 15], [13, 16]],
    (2, 1): [[17, 18]],
    (1, 2): [[19], [20]],
})
FACTOR = 2 ** -0.5  # model_dim.size ** -0.5


def three_clusters(last_projection_factor):
    return [{"token_count": 3, "embedding_size": 2},
            {"token_count": 3, "embedding_size": 2, "length_projection_factor": 0.5},
            {"token_count": 2, "embedding_size": 1,
             "length_projection_factor": last_projection_factor}]


def loss_of(last_projection_factor):
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(16, 8, 2)
    targets = mtf.placeholder(mesh, mtf.Shape([length_dim]), dtype=mtf.int32)
    hidden = mtf.placeholder(mesh, mtf.Shape([length_dim, model_dim]))
    embedding = adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, clusters=three_clusters(last_projection_factor))
    loss = adaptive_softmax.adaptive_softmax_loss_fn(
        Decoder(), Context(embedding=embedding), hidden, targets, output_vocab_dim=None)
    feeds = {targets: np.array(TARGETS, np.int32), hidden: np.array(HIDDEN, np.float32)}
    return run(loss, feeds, VALUES)


def expected_head_loss():
    def one(position, label):
        logits = [FACTOR * (a * position - b * (10 + position))
                  for a, b in [(1, 6), (2, 7), (3, 8), (4, 9), (5, 10)]]
        return _softmax_cross_entropy_with_logits(logits, label)

    labels = [2, 3, 3, 4, 2, 3, 4, 3, 2, 1, 4, 4, 0, 0, 3, 2]
    return sum(one(position, label) for position, label in enumerate(labels) if label)


def expected_tail_1_loss(position):
    logits = [FACTOR * (a * position - b * (10 + position)) for a, b in [(11, 14), (12, 15),
                                                                         (13, 16)]]
    return _softmax_cross_entropy_with_logits(logits, TARGETS[position] - 3)


def expected_tail_2_loss(position):
    logits = [FACTOR * (17 * 19 * position - 17 * 20 * (10 + position)),
              FACTOR * (18 * 19 * position - 18 * 20 * (10 + position))]
    return _softmax_cross_entropy_with_logits(logits, TARGETS[position] - 6)


def test_adaptive_softmax_loss_fn_tail_clusters_all_project_correctly_computes_the_loss():
    actual = loss_of(0.125)
    tail_1 = sum(expected_tail_1_loss(p) for p in [1, 2, 5, 7, 14])
    # A projection factor of 1/8 keeps 2 of the cluster's 4 tokens.
    tail_2 = sum(expected_tail_2_loss(p) for p in [3, 6])
    np.testing.assert_allclose(actual, expected_head_loss() + tail_1 + tail_2, rtol=1e-6)


def test_adaptive_softmax_loss_fn_tail_cluster_does_not_project_correctly_computes_the_loss():
    actual = loss_of(1)
    tail_1 = sum(expected_tail_1_loss(p) for p in [1, 2, 5, 7, 14])
    tail_2 = sum(expected_tail_2_loss(p) for p in [3, 6, 10, 11])
    np.testing.assert_allclose(actual, expected_head_loss() + tail_1 + tail_2, rtol=1e-6)


def test_hidden_to_logits_returns_hidden_during_training():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(2, 3, 2)
    embeddings = mtf.placeholder(mesh, mtf.Shape([length_dim, model_dim]))
    embedding = adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, clusters=[{"token_count": 3, "embedding_size": 2}])
    logits = embedding.hidden_to_logits(embeddings, context=Context(mode="train"))
    assert logits is embeddings


def test_hidden_to_logits_returns_correct_logits_during_eval():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(2, 8, 2)
    embeddings = mtf.placeholder(mesh, mtf.Shape([length_dim, model_dim]))
    embedding = adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, clusters=three_clusters(0.125))
    logits = embedding.hidden_to_logits(embeddings, context=Context(mode="eval"))
    actual = run(logits, {embeddings: np.array([[1, 0], [0, 2]], np.float32)}, VALUES)

    def scaled_log_softmax(a):
        return _log_softmax(np.array(a, dtype=float) * FACTOR)

    head1 = scaled_log_softmax([1, 2, 3, 4, 5])
    head2 = scaled_log_softmax([2 * 6, 2 * 7, 2 * 8, 2 * 9, 2 * 10])
    expected = [
        np.concatenate([head1[:3], head1[3] + scaled_log_softmax([11, 12, 13]),
                        head1[4] + scaled_log_softmax([17 * 19, 18 * 19])]),
        np.concatenate([head2[:3], head2[3] + scaled_log_softmax([2 * 14, 2 * 15, 2 * 16]),
                        head2[4] + scaled_log_softmax([2 * 17 * 20, 2 * 18 * 20])]),
    ]
    np.testing.assert_allclose(actual, expected, atol=5e-5)


def test_ids_to_embedding_correctly_embeds():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(6, 5, 2)
    ids = mtf.placeholder(mesh, mtf.Shape([length_dim]), dtype=mtf.int32)
    embedding = adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, clusters=[{"token_count": 2, "embedding_size": 2},
                                     {"token_count": 3, "embedding_size": 1}])
    values = initialize_by_shape({
        (3, 2): [[0, 1], [2, 0], [-1000, -4000]],
        (3, 1): [[1], [2], [3]],
        (1, 2): [[1], [2]],
    })
    actual = run(embedding.ids_to_embedding(ids, context=None),
                 {ids: np.array([0, 1, 2, 3, 4, 0], np.int32)}, values)
    np.testing.assert_allclose(actual, [[0, 1], [2, 0], [1, 2], [2, 4], [3, 6], [0, 1]])


def test_constructor_token_counts_dont_sum_to_vocab_size_raises_value_error():
    mesh, (_, model_dim, _), variable_dtype = new_graph(1, 5, 2)
    with pytest.raises(ValueError):
        adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
            mesh, mtf.Dimension("vocab", 5), output_dim=model_dim, variable_dtype=variable_dtype,
            name="embedding", ensemble_dim=None,
            clusters=[{"token_count": 3, "embedding_size": 2},
                      {"token_count": 3, "embedding_size": 1}])


def test_constructor_project_factor_not_within_zero_and_one_raises_value_error():
    mesh, (_, model_dim, _), variable_dtype = new_graph(1, 3, 2)
    with pytest.raises(ValueError):
        adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
            mesh, mtf.Dimension("vocab", 3), output_dim=model_dim, variable_dtype=variable_dtype,
            name="embedding", ensemble_dim=None,
            clusters=[{"token_count": 3, "embedding_size": 2, "length_projection_factor": 1.1}])
