#!/usr/bin/python3
"""Trains the sequence-to-sequence Transformer in mtf and PyTorch's
nn.Transformer for the same steps on the same batches of the same
SentencePiece ids (English to Spanish, the Bible split examples/translate
uses), then translates the same test sentences greedily with each and
prints both BLEUs (mtf's 13a corpus BLEU on both) and step times.

Sizes are examples/translate's defaults (d_model 256, d_ff 1024, 4 heads x
64, 3 + 3 layers, vocabulary 8000, batch 32, length 64), rows of one pair
each (nn.Transformer has no segment masks, so neither side packs), dropout
and label smoothing 0.1, learned absolute positions on both sides (mtf's
--mtf_position relative gives T5's buckets instead). mtf trains with
Adafactor at examples/translate's default learning rate (--mtf_lr), or with
Adam (--mtf_optimizer adam) at a rate given by --mtf_lr; PyTorch with Adam (lr 1e-3 after a linear warmup of --warmup steps, decayed
by the inverse square root: the usual Transformer schedule; torch 1.13 has no
Adafactor). PyTorch's side is compare_pytorch.py's EncDec (pre-norm,
learned absolute positions, tied output embedding). Both run in this
process with --threads threads (OPENBLAS_NUM_THREADS and OMP_NUM_THREADS
are set before either library loads).

PyTorch is a benchmark-only dependency (Debian: apt-get install
python3-torch); the mtf module comes from --build's python directory.

usage: bench/compare_translation.py [--build build] [--steps 1000] [--threads 2]
                                    [--test_sentences 200] [--mtf_lr 0.03]
                                    [--mtf_optimizer adafactor|adam] [--only mtf|pytorch]
                                    [--quick]
--quick: 20 steps of a small model, for a first look. --only: one side.
"""
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--steps", type=int, default=1000)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--test_sentences", type=int, default=200)
ap.add_argument("--warmup", type=int, default=400, help="PyTorch's warmup steps")
ap.add_argument("--mtf_lr", default="0.03",
                help="mtf's Adafactor learning rate (examples/translate's --lr; 0: Adafactor's own)")
ap.add_argument("--mtf_optimizer", default="adafactor", choices=["adafactor", "adam"],
                help="mtf's optimizer (adam: give --mtf_lr, e.g. PyTorch's schedule "
                     "\"0.02*warmup(400)*rsqrt(400)\")")
ap.add_argument("--mtf_position", default="absolute", choices=["relative", "absolute"],
                help="mtf's positions (absolute, the default: learned, as PyTorch's side has "
                     "them; relative: T5's buckets, examples/translate's default)")
ap.add_argument("--mtf_norm", default="rms", choices=["rms", "layer"],
                help="mtf's norm (layer: as PyTorch's side)")
ap.add_argument("--mtf_stack_dropout", type=float, default=-1.0,
                help="mtf's dropout on the stacks' embeddings and final norm outputs (< 0: as "
                     "its other dropout, Mesh TensorFlow's placement; 0: none, as nn.Transformer)")
ap.add_argument("--only", choices=["mtf", "pytorch"],
                help="train and score one side only (the other's figure from an earlier run)")
ap.add_argument("--quick", action="store_true")
args = ap.parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
sys.path.insert(0, os.path.join(args.build, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
except ImportError:
    print("compare_translation.py: PyTorch is not installed here (apt-get install python3-torch); "
          "nothing to compare, skipped")
    sys.exit(0)
import numpy as np

import mtf
from compare_pytorch import EncDec

SIZES = dict(d_model=256, d_ff=1024, heads=4, d_kv=64, layers=3, vocab=8000, batch=32, length=64)
if args.quick:
    SIZES.update(d_model=32, d_ff=64, heads=2, d_kv=16, layers=1, vocab=1000, batch=8, length=48)
    args.steps, args.test_sentences = 20, 16


def data():
    pairs = mtf.models.read_sword_pairs()
    train, _, test = mtf.models.split_corpus(pairs)
    vocab = mtf.models.Vocabulary.train([s for p in train for s in (p.source, p.target)],
                                        size=SIZES["vocab"],
                                        cache_dir=os.path.expanduser("~/.cache/mtf"))
    return vocab, train, test[:args.test_sentences]


def mtf_side(vocab, encoded, test_sources, batches):
    s = SIZES
    config = mtf.models.EncDecConfig(
        encoder_layers=s["layers"], decoder_layers=s["layers"], d_model=s["d_model"],
        d_ff=s["d_ff"], heads=s["heads"], d_kv=s["d_kv"], vocab=vocab.size, batch=s["batch"],
        input_length=s["length"], target_length=s["length"], learning_rate=args.mtf_lr,
        optimizer=args.mtf_optimizer, position=args.mtf_position, norm=args.mtf_norm,
        stack_dropout=args.mtf_stack_dropout)
    model = mtf.models.TransformerEncDec(config)
    decoder = mtf.models.EncDecDecoder(model, batch=16)
    session = mtf.Session(model.graph)
    start = time.perf_counter()
    losses = []
    for inputs, targets in batches:
        losses.append(float(session.run(model.loss, {model.inputs: inputs, model.targets: targets},
                                        targets=model.train_ops)))
    ms = 1e3 * (time.perf_counter() - start) / len(batches)
    hyps = [vocab.decode(ids) for ids in decoder.translate(session, test_sources)]
    return ms, hyps, losses


def torch_side(vocab, test_sources, batches):
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    s = SIZES
    m = EncDec(s["d_model"], s["d_ff"], s["heads"], s["layers"], s["length"], vocab.size)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / args.warmup, (args.warmup / (step + 1)) ** 0.5))
    m.train()
    start = time.perf_counter()
    losses = []
    for inputs, targets in batches:
        opt.zero_grad(set_to_none=True)
        loss = m.loss(torch.from_numpy(inputs).long(), torch.from_numpy(targets).long())
        loss.backward()
        losses.append(float(loss))
        opt.step()
        sched.step()
    ms = 1e3 * (time.perf_counter() - start) / len(batches)
    m.eval()
    hyps = []
    with torch.no_grad():
        for first in range(0, len(test_sources), 16):
            chunk = test_sources[first:first + 16]
            src = torch.zeros(len(chunk), s["length"], dtype=torch.long)
            for b, ids in enumerate(chunk):
                src[b, :min(len(ids), s["length"])] = torch.tensor(ids[:s["length"]])
            out = torch.zeros(len(chunk), s["length"], dtype=torch.long)
            done = torch.zeros(len(chunk), dtype=torch.bool)
            for t in range(s["length"]):  # greedy by recomputation, padding never chosen
                logits = m.logits(src, out)[:, t]
                logits[:, 0] = float("-inf")
                nxt = logits.argmax(-1)
                out[:, t] = torch.where(done, torch.zeros_like(nxt), nxt)
                done |= nxt == 1
                if bool(done.all()):
                    break
            for row in out.tolist():
                ids = [i for i in row if i != 0]
                hyps.append(vocab.decode(ids[:ids.index(1)] if 1 in ids else ids))
    return ms, hyps, losses


def loss_text(losses):
    """The mean training loss (label-smoothed, nats per target piece) over the
    first and last tenth of the steps."""
    tenth = max(1, len(losses) // 10)
    return (f"training loss {np.mean(losses[:tenth]):.3f} in the first {tenth} steps, "
            f"{np.mean(losses[-tenth:]):.3f} in the last {tenth}")


def main():
    vocab, train, test = data()
    s = SIZES
    encoded = mtf.models.encode_pairs(vocab, train, s["length"], s["length"])
    # The batches both sides train on: rows of one pair, padded with 0.
    shape_model = mtf.models.TransformerEncDec(mtf.models.EncDecConfig(
        vocab=vocab.size, batch=s["batch"], input_length=s["length"], target_length=s["length"],
        encoder_layers=1, decoder_layers=1, d_model=8, d_ff=8, heads=1, d_kv=8))
    batcher = mtf.models.TranslationBatcher(encoded, shape_model.config, seed=1)
    batches = []
    for _ in range(args.steps):
        feeds = batcher.next(shape_model)
        batches.append((feeds[shape_model.inputs], feeds[shape_model.targets]))
    test_sources = [e.source for e in mtf.models.encode_pairs(vocab, test, s["length"],
                                                              s["length"], False)]
    refs = [p.target for p in test]
    print(f"{args.steps} steps of batch {s['batch']} x {s['length']}, d_model {s['d_model']}, "
          f"{s['layers']} + {s['layers']} layers, vocabulary {vocab.fingerprint}; "
          f"{args.threads} threads; PyTorch {torch.__version__}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}", flush=True)
    if args.only != "pytorch":
        mtf_ms, mtf_hyps, mtf_losses = mtf_side(vocab, encoded, test_sources, batches)
        print(f"mtf ({args.mtf_optimizer}, lr {args.mtf_lr}, {args.mtf_position} positions, "
              f"{args.mtf_norm} norm, stack dropout {args.mtf_stack_dropout}): {mtf_ms:8.1f} ms/step, {loss_text(mtf_losses)}, test greedy "
              f"{mtf.models.corpus_bleu(mtf_hyps, refs)}", flush=True)
    if args.only != "mtf":
        torch_ms, torch_hyps, torch_losses = torch_side(vocab, test_sources, batches)
        print(f"PyTorch: {torch_ms:8.1f} ms/step, {loss_text(torch_losses)}, test greedy "
              f"{mtf.models.corpus_bleu(torch_hyps, refs)}", flush=True)
    if args.only is None:
        print(f"mtf's training speed / PyTorch's: {torch_ms / mtf_ms:.2f}x")


if __name__ == "__main__":
    main()
