"""mtf.models: the Transformer LM trained, checkpointed and decoded from Python."""

import gc

import numpy as np
import pytest

import mtf

SMALL = dict(layers=2, d_model=32, d_ff=64, heads=4, d_kv=8, vocab=16, length=8, batch=2)


def windows(rng, config):
    """A batch of random windows: (inputs, targets), targets shifted by one."""
    seq = rng.integers(0, config.vocab, size=(config.batch, config.length + 1), dtype=np.int32)
    return seq[:, :-1], seq[:, 1:]


def trained_lm(steps=20, **overrides):
    config = mtf.models.TransformerConfig(**{**SMALL, **overrides})
    lm = mtf.models.TransformerLm(config)
    session = mtf.Session(lm.graph)
    # A repeating pattern the model can learn, so greedy decoding is not trivial.
    pattern = np.array([(3 * i + 1) % config.vocab for i in range(config.length + 1)], np.int32)
    feeds = {lm.inputs: np.tile(pattern[:-1], (config.batch, 1)),
             lm.targets: np.tile(pattern[1:], (config.batch, 1))}
    first = session.run(lm.loss, feeds)
    for _ in range(steps):
        session.run(lm.train_ops, feeds)
    assert session.run(lm.loss, feeds) < first
    return config, lm, session


def test_config_fields_and_errors():
    c = mtf.models.TransformerConfig(d_model=64, heads=2)
    assert (c.d_model, c.heads, c.layers) == (64, 2, 2)
    assert "d_model=64" in repr(c)
    with pytest.raises(ValueError, match='no field "d_models"'):
        mtf.models.TransformerConfig(d_models=64)
    c.layers = 0
    with pytest.raises(mtf.ValueError, match="layers"):
        c.validate()
    paper = mtf.models.TransformerConfig.paper(d_ff=8192, heads=32)
    d, f, h, k, v, n = 1024, 8192, 32, 256, 32768, 6
    per_layer = 4 * d * h * k + 2 * d * f + 4 * d  # attention, ffn, two layer_norms
    assert paper.num_parameters == 2 * v * d + 256 * d + n * per_layer + 2 * d


def test_decoder_steps_equal_the_whole_window():
    config, lm, session = trained_lm()
    decoder = mtf.models.TransformerDecoder(lm, batch=config.batch)
    assert decoder.batch.size == config.batch and len(decoder.write_caches) == 2 * config.layers
    rng = np.random.default_rng(1)
    inputs, _ = windows(rng, config)
    whole = session.run(lm.eval_logits, {lm.inputs: inputs})
    assert whole.shape == (config.batch, config.length, config.vocab)
    for p in range(config.length):
        logits = decoder.step(session, inputs[:, p].tolist(), p)
        assert logits.shape == (config.batch, config.vocab) and logits.dtype == np.float32
        np.testing.assert_allclose(logits, whole[:, p], atol=1e-5, rtol=0)
    # The same through the decoder's own tensors.
    logits = session.run(decoder.logits, {decoder.token: inputs[:, 0], decoder.position: 0},
                         targets=decoder.write_caches)
    np.testing.assert_allclose(logits, whole[:, 0], atol=1e-5, rtol=0)


def test_prefill_reorder_and_beam_search():
    config, lm, session = trained_lm()
    decoder = mtf.models.TransformerDecoder(lm, batch=config.batch)
    rng = np.random.default_rng(2)
    inputs, _ = windows(rng, config)
    whole = session.run(lm.eval_logits, {lm.inputs: inputs})
    np.testing.assert_allclose(decoder.prefill(session, inputs[:, :3].tolist()), whole[:, 2],
                               atol=1e-5, rtol=0)
    # After a reorder, sequence 0 continues sequence 1's window.
    decoder.reorder(session, [1, 1])
    logits = decoder.step(session, [int(inputs[1, 3])] * 2, 3)
    np.testing.assert_allclose(logits[0], whole[1, 3], atol=1e-5, rtol=0)
    assert len(decoder.prefill_caches) == len(decoder.reorder_caches) == len(decoder.caches)
    assert decoder.prompt.shape[1].size == config.length and decoder.parents.shape[0].size == 2
    # Beam search: one prompt, two beams; one beam is greedy.
    out = decoder.beam_search(session, [[1, 4]], 5, beams=2, alpha=0.0)
    assert set(out) == {"sequences", "log_probs", "scores"} and len(out["sequences"][0]) == 7
    one = mtf.models.TransformerDecoder(lm, batch=1, batch_name="sequences")
    assert one.batch.name == "sequences"
    assert one.beam_search(session, [[1, 4]], 5, beams=1, alpha=0.0)["sequences"] == \
        one.greedy(session, [[1, 4]], 5)
    with pytest.raises(ValueError, match="make it with batch 2"):
        one.beam_search(session, [[1, 4]], 5, beams=2)


def greedy_by_recomputation(session, lm, config, prompt, steps):
    """Greedy decoding by running the whole window for every new token."""
    seq = list(prompt)
    while len(seq) < min(len(prompt) + steps, config.length):
        window = np.zeros((config.batch, config.length), np.int32)
        window[0, :len(seq)] = seq
        logits = session.run(lm.eval_logits, {lm.inputs: window})
        seq.append(int(np.argmax(logits[0, len(seq) - 1])))
    return seq


def test_greedy_matches_recomputation_and_every_layout(tmp_path):
    config, lm, session = trained_lm()
    decoder = mtf.models.TransformerDecoder(lm, batch=1)
    prompt = [1, 4]
    tokens = decoder.greedy(session, [prompt], steps=10)[0]
    assert len(tokens) == config.length and tokens[:2] == prompt
    assert tokens == greedy_by_recomputation(session, lm, config, prompt, 10)
    # The trained variables restored into a new LM on a 2x2 mesh (heads and
    # vocab split as in the paper): the same tokens, bit for bit the logits.
    path = str(tmp_path / "lm.h5")
    mtf.save_checkpoint(session, path, step=20)
    lm2 = mtf.models.TransformerLm(config)
    decoder2 = mtf.models.TransformerDecoder(lm2, batch=1)
    mesh = mtf.Session(lm2.graph, mesh_shape="b:2;m:2", layout="heads:m;vocab:m;d_ff:m",
                       reproducible=True)
    mtf.restore_checkpoint(mesh, path, allow_missing=True)
    assert decoder2.greedy(mesh, [prompt], steps=10)[0] == tokens
    one = mtf.Session(lm2.graph, reproducible=True)
    mtf.restore_checkpoint(one, path, allow_missing=True)
    np.testing.assert_array_equal(decoder2.step(mesh, [3], 0), decoder2.step(one, [3], 0))


def test_sampling_options_and_errors():
    config, lm, session = trained_lm(steps=2)
    decoder = mtf.models.TransformerDecoder(lm, batch=2)
    prompts = [[1], [2]]
    a = decoder.generate(session, prompts, 6, temperature=1.0, top_k=4, seed=7)
    assert a == decoder.generate(session, prompts, 6, temperature=1.0, top_k=4, seed=7)
    assert all(len(s) == 7 for s in a)
    assert a != decoder.generate(session, prompts, 6, temperature=1.0, top_k=4, seed=8)
    # top_k 1 leaves one choice: greedy, whatever the temperature and seed.
    assert decoder.generate(session, prompts, 6, temperature=3.0, top_k=1, seed=8) == \
        decoder.greedy(session, prompts, 6)
    stopped = decoder.generate(session, prompts, 6, temperature=2.0, stop=a[0][1], seed=7)
    assert stopped[0] == a[0][:2] or a[0][1] in stopped[0]
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        decoder.generate(session, prompts, 3, temperature=-1)
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]"):
        decoder.generate(session, prompts, 3, top_p=0)
    with pytest.raises(ValueError, match="exceeds the model's length"):
        decoder.greedy(session, [[1] * 9, [1] * 9], 1)
    with pytest.raises(ValueError, match="2 tokens for a batch of 2|1 tokens for a batch of 2"):
        decoder.step(session, [1], 0)
    with pytest.raises(ValueError, match="position 8 is outside"):
        decoder.step(session, [1, 1], 8)
    with pytest.raises(ValueError, match="expected an mtf.Session"):
        decoder.step("session", [1, 1], 0)
    moe = mtf.models.TransformerLm(mtf.models.TransformerConfig(**SMALL, moe_experts=2))
    with pytest.raises(ValueError, match="mixture-of-experts"):
        mtf.models.TransformerDecoder(moe, batch=1)


def test_handles_keep_the_model_alive():
    config = mtf.models.TransformerConfig(**SMALL)
    decoder = mtf.models.TransformerDecoder(mtf.models.TransformerLm(config), batch=1)
    logits = decoder.logits
    del decoder
    gc.collect()
    # The tensor keeps the LM's graph alive, and a Session can still run it.
    graph = logits.graph
    assert logits.shape[-1].size == config.vocab and len(graph.operations) > 0
    session = mtf.Session(graph)
    out = session.run(logits, {graph.find_operation("decode_b1/token").outputs[0]: [3],
                               graph.find_operation("decode_b1/position").outputs[0]: 0})
    assert out.shape == (1, config.vocab)
