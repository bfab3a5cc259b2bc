#!/usr/bin/env python3
"""Trains the sequence-to-sequence Transformer to translate English to Spanish from Python.

The same model, data and batches as the C++ example (examples/translate):
Debian's verse-aligned Bibles read through libsword (or --corpus, a TSV file
of source<TAB>target lines), the deterministic train/dev/test split, a joint
SentencePiece vocabulary trained once and cached, padded or packed batches,
Adafactor. It prints the training loss and the development loss as it goes,
then the test set's BLEU, greedy and by beam search through the cached
decoder, beside the source-copy baseline's; then translates --text.

    PYTHONPATH=build/python python3 examples/python/translate.py --steps 300
"""

import argparse
import os
import sys
import time

import mtf


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default="bible", help='"bible" or a TSV file, source<TAB>target')
    p.add_argument("--vocab_size", type=int, default=8000, help="SentencePiece pieces")
    p.add_argument("--vocab_dir", default=os.path.expanduser("~/.cache/mtf"),
                   help="where trained vocabularies are cached")
    p.add_argument("--layers", type=int, default=3, help="blocks in the encoder and the decoder")
    p.add_argument("--d_model", type=int, default=256)
    p.add_argument("--d_ff", type=int, default=1024)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d_kv", type=int, default=64)
    p.add_argument("--length", type=int, default=64, help="source and target pieces per row")
    p.add_argument("--batch", type=int, default=32, help="rows per step")
    p.add_argument("--packed", action="store_true", help="pack several pairs into each row")
    p.add_argument("--steps", type=int, default=1000, help="training steps")
    p.add_argument("--lr", default="0.03",
                   help='Adafactor learning rate: a number or a schedule, e.g. "0.03*warmup(100)" '
                        "(docs/training.md; 0: Adafactor's own)")
    p.add_argument("--clip_norm", type=float, default=0.0,
                   help="clip the gradients to this global norm first (0: no clipping)")
    p.add_argument("--microbatches", type=int, default=1,
                   help="train each batch as this many equal parts, their gradients accumulated "
                        "(weighted by target tokens), then one update")
    p.add_argument("--summary_dir", default="", help="TensorBoard event files of each step here")
    p.add_argument("--metrics_jsonl", default="", help="the same scalars as JSON lines")
    p.add_argument("--eval_every", type=int, default=250, help="development loss every N steps")
    p.add_argument("--test_sentences", type=int, default=200, help="test sentences translated")
    p.add_argument("--beams", type=int, default=4, help="beam search's beams (1: greedy only)")
    p.add_argument("--decode_sentences", type=int, default=8, help="sentences decoded together")
    p.add_argument("--mesh_shape", default="", help='mesh of processors, e.g. "rows:2;cols:2"')
    p.add_argument("--layout", default="", help='e.g. "batch:rows;heads:cols;vocab:cols"')
    p.add_argument("--text", default="In the beginning God created the heavens and the earth.",
                   help="translated at the end")
    args = p.parse_args(argv)
    if args.steps < 0 or args.beams < 1 or args.decode_sentences < 1:
        p.error("--steps must be >= 0, --beams and --decode_sentences >= 1")
    return args


def load_data(args):
    pairs = (mtf.models.read_sword_pairs() if args.corpus == "bible"
             else mtf.models.read_tsv_pairs(args.corpus))
    train, dev, test = mtf.models.split_corpus(pairs)
    sentences = [s for p in train for s in (p.source, p.target)]
    vocab = mtf.models.Vocabulary.train(sentences, size=args.vocab_size, cache_dir=args.vocab_dir)
    print(f"data: {len(pairs)} pairs: {len(train)} train, {len(dev)} dev, {len(test)} test; "
          f"vocabulary {vocab.fingerprint}")
    return vocab, train, dev, test


def bleu(decoder, session, vocab, pairs, length, beams):
    sources = [e.source for e in mtf.models.encode_pairs(vocab, pairs, length, length, False)]
    hyps = [vocab.decode(ids) for ids in decoder.translate(session, sources, beams=beams)]
    return mtf.models.corpus_bleu(hyps, [p.target for p in pairs])


def train_step(session, model, batcher, fetch_norm):
    """One step: a run per microbatch, then (accumulating) the update run.
    Returns the loss (the parts' mean weighted by target tokens) and the
    gradient norm (0.0 when not fetched)."""
    parts = model.config.microbatches
    fetches = [model.loss] + ([model.gradient_norm] if fetch_norm and parts == 1 else [])
    weighted, tokens, norm = 0.0, 0, 0.0
    for _ in range(parts):
        out = session.run(fetches, batcher.next(model), targets=model.train_ops)
        weighted += float(out[0]) * batcher.last_target_tokens
        tokens += batcher.last_target_tokens
        norm = float(out[1]) if len(out) > 1 else norm
    if parts == 1:
        return float(out[0]), norm
    out = session.run([model.gradient_norm] if fetch_norm else [], targets=model.apply_ops)
    return weighted / max(tokens, 1), float(out[0]) if fetch_norm else 0.0


def main(argv):
    args = parse_args(argv)
    vocab, train, dev, test = load_data(args)
    config = mtf.models.EncDecConfig(
        encoder_layers=args.layers, decoder_layers=args.layers, d_model=args.d_model,
        d_ff=args.d_ff, heads=args.heads, d_kv=args.d_kv, vocab=vocab.size, batch=args.batch,
        input_length=args.length, target_length=args.length, packed=args.packed,
        learning_rate=args.lr, clip_norm=args.clip_norm, microbatches=args.microbatches)
    model = mtf.models.TransformerEncDec(config)
    decoder = mtf.models.EncDecDecoder(model, batch=args.decode_sentences * args.beams,
                                       batch_name="sequences", beams=args.beams)
    session = mtf.Session(model.graph, mesh_shape=args.mesh_shape, layout=args.layout)
    print(f'mesh: "{args.mesh_shape}", layout: "{args.layout}"')
    session.check([model.loss], model.train_ops)

    encoded = mtf.models.encode_pairs(vocab, train, args.length, args.length)
    dev_encoded = mtf.models.encode_pairs(vocab, dev, args.length, args.length, False)
    batcher = mtf.models.TranslationBatcher(encoded, config, seed=1)
    summaries = (mtf.SummaryWriter(args.summary_dir, args.metrics_jsonl)
                 if args.summary_dir or args.metrics_jsonl else None)
    rate = mtf.optimize.adafactor_learning_rate(args.lr)
    fetch_norm = args.clip_norm > 0 or summaries
    start, interval, norms, steps_in = time.perf_counter(), 0.0, 0.0, 0
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        loss, norm = train_step(session, model, batcher, fetch_norm)
        seconds = time.perf_counter() - t0
        interval += loss
        norms += norm
        steps_in += 1
        if summaries:
            summaries.write(step, {"loss": loss, "gradient_norm": norm,
                                   "learning_rate": rate.at(step), "step_time": seconds})
        if step % max(1, args.eval_every) == 0 or step == args.steps:
            dev_loss = mtf.models.mean_token_loss(model, session, dev_encoded)
            if summaries:
                summaries.write(step, {"dev_loss": dev_loss})
            norm = f" gradient norm {norms / steps_in:.4g}" if fetch_norm else ""
            print(f"step {step} loss {interval / steps_in:.4f} dev loss {dev_loss:.4f}{norm} "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
            interval, norms, steps_in = 0.0, 0.0, 0

    some = test[:args.test_sentences] if args.test_sentences > 0 else test
    print(f"test, greedy: {bleu(decoder, session, vocab, some, args.length, 1)}")
    if args.beams > 1:
        print(f"test, {args.beams} beams: {bleu(decoder, session, vocab, some, args.length, args.beams)}")
    copy = mtf.models.corpus_bleu([p.source for p in some], [p.target for p in some])
    print(f"source-copy baseline {copy}")
    ids = vocab.encode(args.text) + [1]
    print(f"{args.text} -> {vocab.decode(decoder.translate(session, [ids], beams=args.beams)[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
