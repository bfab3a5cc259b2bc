#!/usr/bin/python3
"""mtf's sequence-to-sequence Transformer written out again in PyTorch,
started from mtf's own initial variables and trained beside it on the same
batches with the same Adam and schedule, dropout off: prints both training
losses step by step. Agreement to the printed digits means mtf's forward
pass, gradients and Adam are the textbook ones for this architecture; a
difference names the step where they part.

The mirror covers mtf's choices that nn.Transformer shares: layer norm
(epsilon 1e-6), learned absolute positions, ReLU feed-forward without
biases, attention without biases (1/sqrt(d_kv) folded into the query's
initial weights, as Mesh TensorFlow does), one embedding table for both
inputs and the output projection (scaled by 1/sqrt(d_model)), label
smoothing over the other ids and the 1e-4 z-loss.

PyTorch is a benchmark-only dependency (Debian: apt-get install
python3-torch); the mtf module comes from --build's python directory.

usage: bench/encdec_mirror.py [--build build] [--steps 20] [--every 5]
                              [--d_model 64] [--d_ff 128] [--layers 2]
                              [--threads 1]
"""
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--every", type=int, default=5, help="print every this many steps (and the first 5)")
ap.add_argument("--d_model", type=int, default=64)
ap.add_argument("--d_ff", type=int, default=128)
ap.add_argument("--layers", type=int, default=2, help="in each stack")
ap.add_argument("--threads", type=int, default=1)
args = ap.parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
sys.path.insert(0, os.path.join(args.build, "python"))
try:
    import torch
except ImportError:
    print("encdec_mirror.py: PyTorch is not installed here (apt-get install python3-torch); "
          "nothing to compare, skipped")
    sys.exit(0)
import numpy as np

import mtf

HEADS, D_KV, BATCH, LENGTH, VOCAB, SMOOTHING, WARMUP = 4, 16, 16, 64, 8000, 0.1, 400
# Adam's rate on both sides: 0.02 * min(step / 400, 1) / sqrt(max(step, 400)).
MTF_RATE = f"0.02*warmup({WARMUP})*rsqrt({WARMUP})"


def rate_at(step):
    return 0.02 * min(step / WARMUP, 1.0) / max(step, WARMUP) ** 0.5


class Mirror(torch.nn.Module):
    """mtf's model over mtf's variables (by their names)."""

    def __init__(self, values):
        super().__init__()
        self.params = torch.nn.ParameterDict(
            {n.replace("/", "|"): torch.nn.Parameter(torch.tensor(v)) for n, v in values.items()})

    def w(self, name):
        return self.params[name.replace("/", "|")]

    def norm(self, x, name):
        centered = x - x.mean(-1, keepdim=True)
        variance = (centered * centered).mean(-1, keepdim=True)
        return centered * torch.rsqrt(variance + 1e-6) * self.w(name + "/scale") + self.w(name + "/bias")

    def attention(self, x, memory, bias, name):
        h = self.norm(x, name + "_norm")
        m = h if memory is None else memory
        q = torch.einsum("bld,dhk->bhlk", h, self.w(name + "/q"))
        k = torch.einsum("bmd,dhk->bhmk", m, self.w(name + "/k"))
        v = torch.einsum("bmd,dhk->bhmk", m, self.w(name + "/v"))
        weights = torch.softmax(torch.einsum("bhlk,bhmk->bhlm", q, k) + bias, -1)
        o = torch.einsum("bhlm,bhmk->bhlk", weights, v)
        return x + torch.einsum("bhlk,hkd->bld", o, self.w(name + "/o"))

    def feed_forward(self, x, name):
        h = self.norm(x, name + "_norm")
        return x + torch.relu(h @ self.w(name + "/wi/kernel")) @ self.w(name + "/wo/kernel")

    def loss(self, src, tgt):
        length = src.shape[1]
        table = self.w("shared/embedding")
        padding = ((src == 0).float() * -1e9)[:, None, None, :]
        x = table[src] + self.w("encoder/positions")[:length]
        for l in range(args.layers):
            x = self.attention(x, None, padding, f"encoder/layer_{l}/self_attention")
            x = self.feed_forward(x, f"encoder/layer_{l}/ffn")
        encoded = self.norm(x, "encoder/final_norm")
        shifted = torch.cat([torch.zeros_like(tgt[:, :1]), tgt[:, :-1]], 1)
        causal = torch.triu(torch.ones(length, length), diagonal=1) * -1e9
        y = table[shifted] + self.w("decoder/positions")[:length]
        for l in range(args.layers):
            y = self.attention(y, None, causal, f"decoder/layer_{l}/self_attention")
            y = self.attention(y, encoded, padding, f"decoder/layer_{l}/encdec_attention")
            y = self.feed_forward(y, f"decoder/layer_{l}/ffn")
        logits = (self.norm(y, "decoder/final_norm") @ table.t()) / args.d_model ** 0.5
        soft = torch.full_like(logits, SMOOTHING / (logits.shape[-1] - 1))
        soft.scatter_(-1, tgt.unsqueeze(-1), 1 - SMOOTHING)
        lse = torch.logsumexp(logits, -1)
        per_token = -(soft * (logits - lse.unsqueeze(-1))).sum(-1) + 1e-4 * lse * lse
        weights = (tgt != 0).float()
        return (per_token * weights).sum() / weights.sum().clamp(min=1)


def main():
    torch.set_num_threads(args.threads)
    train, _, _ = mtf.models.split_corpus(mtf.models.read_sword_pairs())
    vocab = mtf.models.Vocabulary.train([s for p in train for s in (p.source, p.target)],
                                        size=VOCAB, cache_dir=os.path.expanduser("~/.cache/mtf"))
    encoded = mtf.models.encode_pairs(vocab, train, LENGTH, LENGTH)
    config = mtf.models.EncDecConfig(
        encoder_layers=args.layers, decoder_layers=args.layers, d_model=args.d_model,
        d_ff=args.d_ff, heads=HEADS, d_kv=D_KV, vocab=vocab.size, batch=BATCH,
        input_length=LENGTH, target_length=LENGTH, learning_rate=MTF_RATE, optimizer="adam",
        position="absolute", norm="layer", dropout=0.0, label_smoothing=SMOOTHING)
    model = mtf.models.TransformerEncDec(config)
    session = mtf.Session(model.graph)
    names = [n for n in session.variable_names if not n.startswith("adam/") and "/adam_" not in n]
    mirror = Mirror({n: session.variable_value(n) for n in names})
    adam = torch.optim.Adam(mirror.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(adam, lambda i: rate_at(i + 1))
    batcher = mtf.models.TranslationBatcher(encoded, model.config, seed=1)
    print(f"d_model {args.d_model}, d_ff {args.d_ff}, {args.layers} + {args.layers} layers, "
          f"{HEADS} heads x {D_KV}, batch {BATCH} x {LENGTH}, vocabulary {vocab.fingerprint}; "
          f"Adam at {MTF_RATE}, no dropout; PyTorch {torch.__version__}", flush=True)
    seconds = [0.0, 0.0]
    worst = 0.0
    for step in range(1, args.steps + 1):
        feeds = batcher.next(model)
        t0 = time.perf_counter()
        mtf_loss = float(session.run(model.loss, feeds, targets=model.train_ops))
        t1 = time.perf_counter()
        adam.zero_grad()
        loss = mirror.loss(torch.from_numpy(feeds[model.inputs]).long(),
                           torch.from_numpy(feeds[model.targets]).long())
        loss.backward()
        adam.step()
        schedule.step()
        seconds[0] += t1 - t0
        seconds[1] += time.perf_counter() - t1
        relative = abs(mtf_loss - float(loss)) / float(loss)
        worst = max(worst, relative)
        if step <= 5 or step % args.every == 0:
            print(f"step {step:5d}  mtf {mtf_loss:.6f}  PyTorch mirror {float(loss):.6f}  "
                  f"relative difference {relative:.1e}", flush=True)
    print(f"largest relative difference {worst:.1e}; ms per step: mtf "
          f"{1e3 * seconds[0] / args.steps:.1f}, PyTorch {1e3 * seconds[1] / args.steps:.1f}")


if __name__ == "__main__":
    main()
