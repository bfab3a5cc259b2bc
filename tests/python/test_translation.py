"""mtf.models' sequence-to-sequence Transformer from Python: trained on packed
batches, decoded with caches (greedy equals recomputation, beams), and the data
around it (TSV and Bible corpora, split, SentencePiece, BLEU)."""

import os

import numpy as np
import pytest

import mtf

TINY = dict(encoder_layers=1, decoder_layers=1, d_model=16, d_ff=32, heads=2, d_kv=8, vocab=12,
            batch=4, input_length=6, target_length=5, dropout=0.0, label_smoothing=0.0)
SWORD = os.path.isdir("/usr/share/sword/modules/texts/ztext/engWEB2015eb")


def test_config_fields_and_errors():
    c = mtf.models.EncDecConfig(**TINY, norm="layer", ffn="gated_gelu", position="absolute")
    assert "norm='layer'" in repr(c) and c.d_model == 16
    c.validate()
    with pytest.raises(mtf.ValueError, match="no field \"depth\""):
        mtf.models.EncDecConfig(depth=3)
    c.norm = "batch"
    with pytest.raises(mtf.ValueError, match="norm must be rms or layer"):
        c.validate()


def test_stack_dropout_is_its_own_rate_at_the_stacks_edges():
    ids = np.random.default_rng(4).integers(2, 12, (4, 6)).astype(np.int32)

    def training_loss(**rates):
        model = mtf.models.TransformerEncDec(mtf.models.EncDecConfig(**{**TINY, **rates}))
        return float(mtf.Session(model.graph).run(model.loss, model.feeds(ids, ids[:, :5])))

    assert mtf.models.EncDecConfig(**TINY).stack_dropout == -1.0  # follows dropout
    none = training_loss(stack_dropout=0.0)
    assert training_loss() == none  # TINY has no dropout, and the edges follow it
    assert training_loss(stack_dropout=0.5) != none
    with pytest.raises(mtf.ValueError, match="stack_dropout"):
        mtf.models.EncDecConfig(**TINY, stack_dropout=1.0).validate()


def test_adam_trains_the_model_and_needs_a_rate():
    ids = np.random.default_rng(3).integers(2, 12, (4, 6)).astype(np.int32)
    losses = {}
    for optimizer, rate in [("adafactor", 0.0), ("adam", "0.01*warmup(2)")]:
        config = mtf.models.EncDecConfig(**TINY, optimizer=optimizer, learning_rate=rate)
        model = mtf.models.TransformerEncDec(config)
        session = mtf.Session(model.graph)
        feeds = model.feeds(ids, ids[:, :5])
        losses[optimizer] = [float(session.run(model.loss, feeds, targets=model.train_ops))
                             for _ in range(30)]
        # Adam's slots are Adam's: the optimizer really is the one chosen.
        assert any(name.endswith("/adam_m") for name in session.variable_names) == (
            optimizer == "adam")
    assert losses["adam"][-1] < 0.5 * losses["adam"][0]
    assert losses["adam"] != losses["adafactor"]
    with pytest.raises(mtf.ValueError, match="optimizer adam needs a learning rate above 0"):
        mtf.models.EncDecConfig(**TINY, optimizer="adam").validate()
    with pytest.raises(mtf.ValueError, match="optimizer must be adafactor or adam"):
        mtf.models.EncDecConfig(**TINY, optimizer="sgd").validate()


def test_cached_decoding_translates_as_recomputation_does():
    config = mtf.models.EncDecConfig(**TINY)
    model = mtf.models.TransformerEncDec(config)
    decoder = mtf.models.EncDecDecoder(model, batch=4)
    session = mtf.Session(model.graph)
    sources = [[3, 4, 1], [5, 1], [6, 7, 8, 1], [9, 1]]
    greedy = decoder.translate(session, sources)
    assert greedy == mtf.models.translate_greedy(model, session, sources)
    assert len(decoder.translate(session, sources, beams=2)) == 4
    # The steps by hand: the logits after the start id equal the whole
    # sequence's first position's.
    decoder.encode(session, sources)
    logits = decoder.step(session, [0, 0, 0, 0], 0)
    assert logits.shape == (4, 12) and np.all(np.isneginf(logits[:, 0]))
    inputs = np.zeros((4, 6), np.int32)
    for b, s in enumerate(sources):
        inputs[b, :len(s)] = s
    whole = session.run(model.eval_logits, model.feeds(inputs, np.zeros((4, 5), np.int32)))
    np.testing.assert_allclose(logits[:, 1:], whole[:, 0, 1:], atol=1e-4)
    decoder.reorder(session, [0, 1, 2, 3])
    with pytest.raises(mtf.ValueError, match="decodes another source"):
        decoder.reorder(session, [1, 1, 2, 3])
    assert decoder.length == 6 and len(decoder.caches) > 0 and decoder.batch.size == 4


def test_a_decoder_made_for_beams_encodes_each_sentence_once():
    model = mtf.models.TransformerEncDec(mtf.models.EncDecConfig(**TINY))
    shared = mtf.models.EncDecDecoder(model, batch=4, beams=2)
    per_row = mtf.models.EncDecDecoder(model, batch=4, batch_name="rows")
    session = mtf.Session(model.graph, reproducible=True)
    sources = [[3, 4, 1], [5, 1], [6, 7, 8, 1]]
    assert shared.beams == 2 and per_row.beams == 1
    assert (shared.translate(session, sources, beams=2) ==
            per_row.translate(session, sources, beams=2))
    shared.encode(session, sources[:2])  # one source per sentence of two beams
    with pytest.raises(mtf.ValueError, match="one per sentence of 2 beams: 2"):
        shared.encode(session, sources)
    with pytest.raises(mtf.ValueError, match="beams must be a divisor of the batch"):
        mtf.models.EncDecDecoder(model, batch=4, beams=3)


def test_packed_training_lowers_the_loss_and_data_round_trips(tmp_path):
    words = ["sol", "luna", "mar", "cielo", "tierra", "agua", "fuego", "viento"]
    english = ["sun", "moon", "sea", "sky", "earth", "water", "fire", "wind"]
    pairs = [mtf.models.SentencePair(f"line {i}", f"the {english[i % 8]} and the "
                                     f"{english[(i * 3) % 8]}",
                                     f"el {words[i % 8]} y el {words[(i * 3) % 8]}")
             for i in range(64)]
    path = str(tmp_path / "pairs.tsv")
    mtf.models.write_tsv_pairs(path, pairs)
    back = mtf.models.read_tsv_pairs(path)
    assert [(p.source, p.target) for p in back] == [(p.source, p.target) for p in pairs]
    train, dev, test = mtf.models.split_corpus(back, 100, 100)
    assert len(train) + len(dev) + len(test) == 64
    vocab = mtf.models.Vocabulary.train([s for p in back for s in (p.source, p.target)],
                                        size=40, cache_dir=str(tmp_path / "vocab"))
    assert vocab.size == 40 and vocab.fingerprint.startswith("spm40-")
    assert vocab.decode(vocab.encode("el sol y la luna")) == "el sol y la luna"
    assert isinstance(vocab.piece(3), str)
    (tmp_path / "v.model").write_bytes(vocab.serialized)
    assert mtf.models.Vocabulary.load(str(tmp_path / "v.model")).fingerprint == vocab.fingerprint

    config = mtf.models.EncDecConfig(**{**TINY, "vocab": vocab.size, "input_length": 16,
                                        "target_length": 16, "packed": True})
    model = mtf.models.TransformerEncDec(config)
    session = mtf.Session(model.graph, mesh_shape="rows:2", layout="batch:rows")
    encoded = mtf.models.encode_pairs(vocab, back, 16, 16)
    assert all(e.source[-1] == 1 and e.target[-1] == 1 for e in encoded)
    batcher = mtf.models.TranslationBatcher(encoded, config, seed=1)
    before = mtf.models.mean_token_loss(model, session, encoded[:8])
    for _ in range(30):
        feeds = batcher.next(model)
        assert model.inputs_segmentation in feeds
        session.run(model.loss, feeds, targets=model.train_ops)
    assert batcher.last_target_tokens > 0
    assert mtf.models.mean_token_loss(model, session, encoded[:8]) < before


def test_bleu():
    same = mtf.models.corpus_bleu(["el sol y la luna"], ["el sol y la luna"])
    assert same.bleu == pytest.approx(100.0) and same.brevity_penalty == 1.0
    half = mtf.models.corpus_bleu(["el sol y la luna brilla hoy"], ["el sol y la luna brillan hoy"])
    assert 0 < half.bleu < 100 and len(half.precisions) == 4 and "BLEU = " in repr(half)
    with pytest.raises(mtf.ValueError):
        mtf.models.corpus_bleu(["a"], [])


@pytest.mark.skipif(not SWORD, reason="sword-text-web not installed")
def test_bible_pairs():
    pairs = mtf.models.read_sword_pairs(limit=3)
    assert len(pairs) == 3 and pairs[0].key.startswith("Genesis 1:1")
    assert "God" in pairs[0].source and "Dios" in pairs[0].target
