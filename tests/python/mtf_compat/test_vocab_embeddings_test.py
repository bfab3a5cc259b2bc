"""Mesh TensorFlow's transformer/vocab_embeddings_test.py (tensorflow/mesh),
ported case by case: the same embeddings, shapes, initial values and
expected numbers. The original mocks tf.random_normal_initializer to give
each variable a value chosen by its shape; here the variables are set by
shape in the Session before the run (those the original leaves to
tf.zeros_initializer keep their zeros). import_tf_tensor becomes a
placeholder fed a NumPy array, the PlacementMeshImpl lowering a
one-processor Session."""
import numpy as np
import pytest

import mtf
from mtf.transformer import vocab_embeddings

from initial_values import initialize_by_shape, new_graph, one_plus_range, run


def softmax(x):  # scipy.softmax, which the original calls
    e = np.exp(np.asarray(x, np.float64) - np.max(x))
    return e / e.sum()


class Context(object):  # what the original's mock context carries
    train = False


def ids_input(mesh, length_dim, ids):
    x = mtf.placeholder(mesh, mtf.Shape([length_dim]), dtype=mtf.int32)
    return x, {x: np.array(ids, np.int32)}


def embeddings_input(mesh, length_dim, model_dim, values):
    x = mtf.placeholder(mesh, mtf.Shape([length_dim, model_dim]))
    return x, {x: np.array(values, np.float32)}


def test_factorized_ids_to_embedding_correctly_embeds():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(4, 3, 2)
    ids, feeds = ids_input(mesh, length_dim, [0, 1, 2, 1])
    embedding = vocab_embeddings.FactorizedVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, inner_dimension_size=1)
    actual = run(embedding.ids_to_embedding(ids, context=None), feeds, one_plus_range)
    np.testing.assert_allclose(actual, [[1, 2], [2, 4], [3, 6], [2, 4]])


def test_factorized_hidden_to_logits_computes_logits_correctly():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(4, 3, 2)
    hidden, feeds = embeddings_input(mesh, length_dim, model_dim,
                                     [[1, 0], [0, 1], [1, 1], [2, 1]])
    embedding = vocab_embeddings.FactorizedVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, inner_dimension_size=1)
    actual = run(embedding.hidden_to_logits(hidden, context=None), feeds, one_plus_range)
    np.testing.assert_allclose(
        actual, 2 ** -0.5 * np.array([[1, 2, 3], [2, 4, 6], [3, 6, 9], [4, 8, 12]]), rtol=1e-6)


ADAPTIVE_CLUSTERS = [{"token_count": 2, "embedding_size": 2},
                     {"token_count": 3, "embedding_size": 1}]
ADAPTIVE_VALUES = initialize_by_shape({
    (2, 2): [[0, 1], [2, 0]],
    (3, 1): [[1], [2], [3]],
    (1, 2): [[1], [2]],
})


def test_adaptive_constructor_token_counts_dont_sum_to_vocab_size_raises_value_error():
    mesh, (_, model_dim, _), variable_dtype = new_graph(1, 5, 2)
    with pytest.raises(ValueError):
        vocab_embeddings.AdaptiveVocabEmbedding(
            mesh, mtf.Dimension("vocab", 5), output_dim=model_dim, variable_dtype=variable_dtype,
            name="embedding", ensemble_dim=None,
            clusters=[{"token_count": 3, "embedding_size": 2},
                      {"token_count": 3, "embedding_size": 1}])


def test_adaptive_ids_to_embedding_correctly_embeds():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(6, 5, 2)
    ids, feeds = ids_input(mesh, length_dim, [0, 1, 2, 3, 4, 0])
    embedding = vocab_embeddings.AdaptiveVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, clusters=ADAPTIVE_CLUSTERS)
    actual = run(embedding.ids_to_embedding(ids, context=None), feeds, ADAPTIVE_VALUES)
    np.testing.assert_allclose(actual, [[0, 1], [2, 0], [1, 2], [2, 4], [3, 6], [0, 1]])


def test_adaptive_hidden_to_logits_computes_logits_correctly():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(4, 5, 2)
    hidden, feeds = embeddings_input(mesh, length_dim, model_dim,
                                     [[1, 0], [0, 1], [1, 1], [2, 1]])
    embedding = vocab_embeddings.AdaptiveVocabEmbedding(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, clusters=ADAPTIVE_CLUSTERS)
    actual = run(embedding.hidden_to_logits(hidden, context=None), feeds, ADAPTIVE_VALUES)
    np.testing.assert_allclose(
        actual, 2 ** -0.5 * np.array([[0, 2, 1, 2, 3], [1, 0, 2, 4, 6], [1, 2, 3, 6, 9],
                                      [1, 4, 4, 8, 12]]), rtol=1e-6)


def test_mixture_of_softmaxes_ids_to_embedding_correctly_embeds():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(4, 4, 3)
    ids, feeds = ids_input(mesh, length_dim, [0, 1, 2, 3])
    values = initialize_by_shape({
        (4, 3): [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 2]],  # embedding weights
        (1, 3): [[1, 0, 0]],  # mixture weights
        (1, 3, 3): [[[1, 0, 0], [0, 1, 0], [0, 0, 1]]],  # context weights
    })
    embedding = vocab_embeddings.MixtureOfSoftmaxes(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, num_softmaxes=1)
    actual = run(embedding.ids_to_embedding(ids, context=None), feeds, values)
    np.testing.assert_allclose(actual, [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 2]])


def test_mixture_of_softmaxes_hidden_to_logits_computes_logits_correctly():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(1, 4, 3)
    hidden, feeds = embeddings_input(mesh, length_dim, model_dim,
                                     np.array([[1.0, 1.0, 2.0]]) / 3 ** -0.5)
    values = initialize_by_shape({
        (4, 3): [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]],  # embedding weights
        (2, 3): [[1, 0, 0], [0, 1, 1]],  # mixture weights
        (2, 3, 3): [[[1, 0, 0], [0, 1, 0], [0, 0, 1]],  # context weights
                    [[0, 0, 1], [0, 1, 0], [1, 0, 0]]],
    })
    embedding = vocab_embeddings.MixtureOfSoftmaxes(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, num_softmaxes=2)
    actual = run(embedding.hidden_to_logits(hidden, context=None), feeds, values)
    priors = softmax([1, 3])
    probs = (priors[0] * softmax(np.tanh([1, 1, 2, 2])) +
             priors[1] * softmax(np.tanh([2, 1, 1, 1])))
    np.testing.assert_allclose(actual, [np.log(probs)], rtol=1e-5)


def test_mixtape_ids_to_embedding_correctly_embeds():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(5, 5, 2)
    ids, feeds = ids_input(mesh, length_dim, [0, 1, 2, 3, 4])
    values = initialize_by_shape({
        (5, 2): list(range(10)),  # embedding weights
        (4, 2, 2): list(range(16)),  # context weights
        (3, 1, 2): list(range(6)),  # prior weights
        (2, 1): list(range(2)),  # prior vocab vector
        (3, 2): list(range(6)),  # prior gates vector
        (2, 3): list(range(6)),  # prior bias
    })
    embedding = vocab_embeddings.Mixtape(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, gate_embedding_size=1, frequent_token_fraction=0.4)
    actual = run(embedding.ids_to_embedding(ids, context=None), feeds, values)
    np.testing.assert_allclose(actual, np.reshape(list(range(10)), (5, 2)))


def test_mixtape_hidden_to_logits_computes_logits_correctly():
    mesh, (vocab_dim, model_dim, length_dim), variable_dtype = new_graph(1, 5, 2)
    hidden, feeds = embeddings_input(mesh, length_dim, model_dim,
                                     np.array([[1.0, 2.0]]) / 2 ** -0.5)
    values = initialize_by_shape({
        (5, 2): list(range(10)),  # embedding weights
        (4, 2, 2): [[[1, 0], [0, 1]], [[0, 1], [1, 0]],  # context weights
                    [[1, 0], [0, 0]], [[0, 0], [0, 1]]],
        (3, 1, 2): [[[1, 0]], [[0, 1]], [[1, 1]]],  # prior weights
        (2, 1): [[1], [1]],  # prior vocab vector
        (3, 2): [[1, 0], [0, 1], [1, 1]],  # prior gates vector
        (2, 3): [[1, 2, 3], [3, 4, 5]],  # prior bias
    })
    embedding = vocab_embeddings.Mixtape(
        mesh, vocab_dim, output_dim=model_dim, variable_dtype=variable_dtype, name="embedding",
        ensemble_dim=None, gate_embedding_size=1, frequent_token_fraction=0.4,
        noise_std_dev=0.0)
    actual = run(embedding.hidden_to_logits(hidden, context=Context()), feeds, values)
    np.testing.assert_allclose(actual, [[0.905462, 4.390559, 6.575162, 9.513036, 12.450909]],
                               rtol=1e-5)
