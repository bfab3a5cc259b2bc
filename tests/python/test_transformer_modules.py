"""mtf.transformer's modules beyond the ported cases: every vocabulary
embedding, the adaptive softmax and the product-key memory give the
one-processor values on layouts that split the vocabulary, the model
dimension or the batch, in training (gradients reach every variable) too."""
import numpy as np
import pytest

import mtf
from mtf.transformer import VocabEmbedding, adaptive_softmax, memory_layers, vocab_embeddings

VOCAB, MODEL, LENGTH, BATCH = 12, 8, 6, 4


def build(kind):
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    batch, length = mtf.Dimension("batch", BATCH), mtf.Dimension("length", LENGTH)
    vocab, model = mtf.Dimension("vocab", VOCAB), mtf.Dimension("model", MODEL)
    ids = mtf.placeholder(mesh, mtf.Shape([batch, length]), dtype=mtf.int32)
    dtype = mtf.VariableDType()
    args = (mesh, vocab, model, dtype, "emb", None)
    embedding = {
        "plain": lambda: VocabEmbedding(*args),
        "factorized": lambda: vocab_embeddings.FactorizedVocabEmbedding(
            *args, inner_dimension_size=3),
        "adaptive": lambda: vocab_embeddings.AdaptiveVocabEmbedding(
            *args, clusters=[{"token_count": 4, "embedding_size": MODEL},
                             {"token_count": 8, "embedding_size": 2}]),
        "mixture": lambda: vocab_embeddings.MixtureOfSoftmaxes(*args, num_softmaxes=3),
        "mixtape": lambda: vocab_embeddings.Mixtape(
            *args, gate_embedding_size=2, frequent_token_fraction=0.5, extra_ids=2),
    }[kind]()
    hidden = mtf.tanh(embedding.ids_to_embedding(ids, None))
    logits = embedding.hidden_to_logits(hidden, None)
    targets = mtf.placeholder(mesh, mtf.Shape([batch, length]), dtype=mtf.int32)
    loss = mtf.reduce_mean(mtf.layers.softmax_cross_entropy_with_logits(
        logits, mtf.one_hot(targets, vocab), vocab))
    variables = graph.trainable_variables
    grads = mtf.gradients([loss], list(variables))
    rng = np.random.default_rng(3)
    feeds = {ids: rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int32),
             targets: rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int32)}
    return graph, [logits, loss] + grads, feeds


@pytest.mark.parametrize("kind", ["plain", "factorized", "adaptive", "mixture", "mixtape"])
@pytest.mark.parametrize("layout", ["batch:p", "vocab:p", "model:p"])
def test_layouts_give_the_one_processor_values(kind, layout):
    graph, fetches, feeds = build(kind)
    want = mtf.Session(graph).run(fetches, feeds)
    got = mtf.Session(graph, mesh_shape="p:2", layout=layout).run(fetches, feeds)
    assert len(want) >= 3  # logits, loss and a gradient per variable
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    assert all(np.abs(g).sum() > 0 for g in want[2:])  # every variable gets a gradient


def test_bad_arguments_say_what_to_fix():
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    vocab, model = mtf.Dimension("vocab", 10), mtf.Dimension("model", 4)
    with pytest.raises(ValueError, match="inner_dimension_size"):
        vocab_embeddings.FactorizedVocabEmbedding(mesh, vocab, model, mtf.VariableDType(), "f",
                                                  None, inner_dimension_size=0)
    with pytest.raises(ValueError, match="frequent_token_fraction"):
        vocab_embeddings.Mixtape(mesh, vocab, model, mtf.VariableDType(), "m", None,
                                 gate_embedding_size=1, frequent_token_fraction=0.01)
    with pytest.raises(ValueError, match="sum to 9"):
        vocab_embeddings.AdaptiveVocabEmbedding(
            mesh, vocab, model, mtf.VariableDType(), "a", None,
            clusters=[{"token_count": 4, "embedding_size": 4},
                      {"token_count": 5, "embedding_size": 2}])


class _Decoder(object):
    z_loss = 1e-4

    def loss_denominator(self, targets, num_microbatches):
        del num_microbatches
        return float(targets.shape.size)


class _Context(object):
    def __init__(self, mode, embedding):
        self.mode, self.activation_dtype = mode, mtf.float32
        self.shared_params = {"embedding": embedding}


@pytest.mark.parametrize("layout", ["batch:p", "vocab:p", "model:p"])
def test_adaptive_softmax_layouts_give_the_one_processor_values(layout):
    """Its training loss (a tail cluster projected to half the length) and
    gradients, and its evaluation log-probabilities, which sum to one."""
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    batch, length = mtf.Dimension("batch", BATCH), mtf.Dimension("length", LENGTH)
    vocab, model = mtf.Dimension("vocab", VOCAB), mtf.Dimension("model", MODEL)
    ids = mtf.placeholder(mesh, mtf.Shape([batch, length]), dtype=mtf.int32)
    embedding = adaptive_softmax.AdaptiveSoftmaxVocabEmbedding(
        mesh, vocab, model, mtf.VariableDType(), "emb", None,
        clusters=[{"token_count": 4},
                  {"token_count": 4, "embedding_size": 2, "length_projection_factor": 0.5},
                  {"token_count": 4, "embedding_size": 4}])
    hidden = mtf.tanh(embedding.ids_to_embedding(ids, None))
    loss = adaptive_softmax.adaptive_softmax_loss_fn(
        _Decoder(), _Context("train", embedding),
        embedding.hidden_to_logits(hidden, _Context("train", embedding)), ids)
    log_probs = embedding.hidden_to_logits(hidden, _Context("eval", embedding))
    grads = mtf.gradients([loss], list(graph.trainable_variables))
    rng = np.random.default_rng(4)
    feeds = {ids: rng.integers(1, VOCAB, (BATCH, LENGTH)).astype(np.int32)}
    want = mtf.Session(graph).run([loss, log_probs] + grads, feeds)
    got = mtf.Session(graph, mesh_shape="p:2", layout=layout).run([loss, log_probs] + grads,
                                                                   feeds)
    np.testing.assert_allclose(np.exp(want[1]).sum(axis=-1), 1.0, rtol=1e-5)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    assert all(np.abs(g).sum() > 0 for g in want[2:])


class _MemoryContext(object):
    def __init__(self, mesh):
        self.mesh, self.variable_dtype = mesh, mtf.VariableDType()


@pytest.mark.parametrize("layout", ["batch:p", "model:p", "n_heads:p", "n_values:p"])
def test_product_key_memory_layouts_give_the_one_processor_values(layout):
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    batch, length = mtf.Dimension("batch", BATCH), mtf.Dimension("length", LENGTH)
    model = mtf.Dimension("model", MODEL)
    x = mtf.placeholder(mesh, mtf.Shape([batch, length, model]))
    memory = memory_layers.ProductKeyValueMemory(key_size=4, n_keys=4, n_heads=2, knn=3)
    y = memory.call(_MemoryContext(mesh), x)
    loss = mtf.reduce_mean(mtf.square(y))
    grads = mtf.gradients([loss], list(graph.trainable_variables))
    feeds = {x: np.random.default_rng(5).standard_normal((BATCH, LENGTH, MODEL))
             .astype(np.float32)}
    want = mtf.Session(graph).run([y] + grads, feeds)
    got = mtf.Session(graph, mesh_shape="p:2", layout=layout).run([y] + grads, feeds)
    assert want[0].shape == (BATCH, LENGTH, MODEL)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    assert all(np.abs(g).sum() > 0 for g in want[1:])


def build_unitransformer(funnel=False, autoregressive=True):
    """A 2-layer Unitransformer (SelfAttention + DenseReluDense per layer) or
    a 2-block funnel encoder, its loss and its gradients."""
    from mtf.transformer import funnel_transformer, transformer, transformer_layers
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    batch, length = mtf.Dimension("batch", BATCH), mtf.Dimension("length", LENGTH - 2)
    layers = [transformer_layers.SelfAttention(num_heads=2, key_value_size=4),
              transformer_layers.DenseReluDense(hidden_size=16)] * 2
    stack = (funnel_transformer.FunnelTransformerLayerStack(layers, 2, [1, 1], [1, 2])
             if funnel else transformer.LayerStack(layers))
    model = transformer.Unitransformer(stack, d_model=MODEL, input_vocab_size=VOCAB,
                                       autoregressive=autoregressive, max_length=LENGTH)
    ids = mtf.placeholder(mesh, mtf.Shape([batch, length]), dtype=mtf.int32)
    targets = mtf.placeholder(mesh, mtf.Shape([batch, length]), dtype=mtf.int32)
    if funnel:  # shorter outputs than targets: a loss of the logits themselves
        logits, _ = model.call_simple(ids, mode="eval")
        loss = mtf.reduce_mean(mtf.square(logits))
    else:
        logits, loss = model.call_simple(ids, targets, compute_loss=True, mode="eval")
    variables = graph.trainable_variables
    grads = mtf.gradients([loss], list(variables))
    rng = np.random.default_rng(5)
    feeds = {ids: rng.integers(1, VOCAB, (BATCH, LENGTH - 2)).astype(np.int32),
             targets: rng.integers(1, VOCAB, (BATCH, LENGTH - 2)).astype(np.int32)}
    return graph, ids, [logits, loss] + grads, feeds


@pytest.mark.parametrize("funnel", [False, True])
@pytest.mark.parametrize("layout", ["batch:p", "heads:p;d_ff:p", "d_model:p"])
def test_unitransformer_layouts_give_the_one_processor_values(funnel, layout):
    graph, _, fetches, feeds = build_unitransformer(funnel=funnel, autoregressive=not funnel)
    want = mtf.Session(graph).run(fetches, feeds)
    got = mtf.Session(graph, mesh_shape="p:2", layout=layout).run(fetches, feeds)
    assert len(want) > 10 and all(np.abs(g).max() > 0 for g in want[2:])
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_unitransformer_is_causal_and_a_funnel_shortens_the_sequence():
    graph, ids, fetches, feeds = build_unitransformer()
    session = mtf.Session(graph)
    logits = session.run(fetches[0], feeds)
    changed = dict(feeds)
    changed[ids] = feeds[ids].copy()
    changed[ids][:, -1] = (feeds[ids][:, -1] % (VOCAB - 1)) + 1
    assert not np.array_equal(changed[ids], feeds[ids])
    other = session.run(fetches[0], changed)
    np.testing.assert_array_equal(other[:, :-1], logits[:, :-1])  # earlier positions unchanged
    assert np.abs(other[:, -1] - logits[:, -1]).max() > 0
    funnel_graph, _, funnel_fetches, funnel_feeds = build_unitransformer(funnel=True,
                                                                         autoregressive=False)
    assert mtf.Session(funnel_graph).run(funnel_fetches[0], funnel_feeds).shape == (
        BATCH, (LENGTH - 2) // 2, VOCAB)
    # The second block's two repeats share their variables: one attention's four.
    names = [v.name for v in funnel_graph.all_variables if "SelfAttention" in v.name]
    assert len(names) == 8, names


def test_layer_stacks_say_what_to_fix():
    from mtf.transformer import funnel_transformer, transformer_layers
    layers = [transformer_layers.SelfAttention(), transformer_layers.DenseReluDense()]
    with pytest.raises(ValueError, match="sum\\(block_param_size\\) \\* n_submodules = 4"):
        funnel_transformer.FunnelTransformerLayerStack(layers, 2, [1, 1], [1, 1])
    with pytest.raises(ValueError, match="pooling_type 'median'"):
        funnel_transformer.FunnelTransformerLayerStack(layers, 1, [1], [1],
                                                       pooling_type="median")
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    x = mtf.ones(mesh, mtf.Shape([mtf.Dimension("length", 5), mtf.Dimension("d", 2)]))
    with pytest.raises(ValueError, match="does not divide into pools of 2"):
        mtf.pool_tensor_1d(x, "length")
