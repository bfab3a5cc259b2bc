#!/usr/bin/python3
"""Times one training step of the same models in PyTorch and in mtf, on one
CPU, alternating the two, and prints mtf's speed relative to PyTorch's.

PyTorch is a benchmark-only dependency (Debian: apt-get install python3-torch;
it runs under /usr/bin/python3). mtf's side is build/bench/step_time. Both
sides run under the same environment: the same OPENBLAS_CORETYPE (unset
unless you set it) and the same thread count (OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS in both processes, and torch.set_num_threads). Each
measurement is a fresh process of each side; rounds alternate the two.

Models, as mtf's examples define them:
  transformer  pre-norm Transformer LM (models/transformer.cc): byte
               embedding + learned positions, layers of layer_norm ->
               multi-head attention (q, k, v, o without bias, causal mask,
               no 1/sqrt(d_kv) scale) -> residual, layer_norm -> relu FFN
               (no bias) -> residual; final layer_norm, vocab projection,
               softmax cross-entropy + 1e-4 z-loss. mtf trains with
               Adafactor, PyTorch with Adam (a small part of either step).
  transformer_encdec
               the sequence-to-sequence Transformer (models/transformer_encdec.h,
               examples/translate's default sizes): PyTorch's nn.Transformer
               (pre-norm, ReLU, dropout 0.1, its biases and layer norms),
               one embedding for sources, targets and the tied output
               projection, learned absolute positions, label smoothing 0.1;
               mtf with RMS norm and T5's relative position bias (a little
               more work than absolute positions). Random ids, no padding.
               mtf trains with Adafactor, PyTorch with Adam.
  mlp          the README's Fashion-MNIST MLP: 784 -> relu 1024 -> 10, no
               bias, softmax cross-entropy, SGD.
  cnn          the CNN example (models/cnn.h): 32x32x1 -> conv 5x5 16 relu ->
               max-pool 2 -> conv 3x3 32 relu -> max-pool 2 -> dense 128 relu
               -> dense 10, biases, softmax cross-entropy, Adam. PyTorch runs
               it channels-first (its native layout), mtf channels-last.

bfloat16 rows (the Transformer cases): PyTorch runs the forward pass and the
loss under torch.autocast("cpu", dtype=torch.bfloat16) (its oneDNN kernels),
mtf with --activation_dtype bfloat16; "PyTorch's best" is then the fastest of
its float32 and bfloat16 runs at any thread count. The header says whether
the CPU has AVX512-BF16.

usage: bench/compare_pytorch.py [--build build] [--rounds 3] [--threads 1,2]
                                [--only transformer512,transformer128,encdec256,mlp100,mlp1000,cnn100]
                                [--dtypes float32,bfloat16] [--quick]

The defaults (3 rounds, as bench/README.md's tables; every case at 1 and 2
threads) took 137 s on 2 CPUs before the bfloat16 rows, which add about
100 s more (estimated from their step times and process starts); --quick is
one round of transformer128 (float32 and bfloat16) and mlp100 on one
thread, about 10 s, for a first look.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("compare_pytorch.py: PyTorch is not installed here (apt-get install python3-torch); "
          "nothing to compare, skipped")
    sys.exit(0)
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    # name: (model, sizes)
    "transformer512": ("transformer", dict(d_model=512, d_ff=2048, heads=8, d_kv=64, layers=2,
                                           batch=8, length=128, vocab=256)),
    "transformer128": ("transformer", dict(d_model=128, d_ff=512, heads=4, d_kv=32, layers=2,
                                           batch=16, length=64, vocab=256)),
    "encdec256": ("transformer_encdec", dict(d_model=256, d_ff=1024, heads=4, d_kv=64, layers=3,
                                             batch=32, length=64, vocab=8000)),
    "mlp100": ("mlp", dict(batch=100, hidden=1024)),
    "mlp1000": ("mlp", dict(batch=1000, hidden=1024)),
    "cnn100": ("cnn", dict(batch=100)),
}


class Block(nn.Module):
    def __init__(self, d_model, d_ff, heads, d_kv):
        super().__init__()
        self.heads, self.d_kv = heads, d_kv
        self.attention_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.q = nn.Linear(d_model, heads * d_kv, bias=False)
        self.k = nn.Linear(d_model, heads * d_kv, bias=False)
        self.v = nn.Linear(d_model, heads * d_kv, bias=False)
        self.o = nn.Linear(heads * d_kv, d_model, bias=False)
        self.ffn_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x, mask):
        b, l, _ = x.shape
        h = self.attention_norm(x)
        split = lambda t: t.view(b, l, self.heads, self.d_kv).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        w = torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1)
        a = (w @ v).transpose(1, 2).reshape(b, l, self.heads * self.d_kv)
        x = x + self.o(a)
        return x + self.wo(F.relu(self.wi(self.ffn_norm(x))))


class TransformerLm(nn.Module):
    def __init__(self, d_model, d_ff, heads, d_kv, layers, length, vocab, **_):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.positions = nn.Parameter(torch.randn(length, d_model))
        self.blocks = nn.ModuleList(Block(d_model, d_ff, heads, d_kv) for _ in range(layers))
        self.final_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.logits = nn.Linear(d_model, vocab, bias=False)
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", causal.float() * -1e9)

    def loss(self, ids, targets, z_loss=1e-4):
        x = self.embedding(ids) + self.positions
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.logits(self.final_norm(x))
        lse = torch.logsumexp(logits, dim=-1)
        ce = lse - logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return (ce + z_loss * lse * lse).mean()


class EncDec(nn.Module):
    def __init__(self, d_model, d_ff, heads, layers, length, vocab, **_):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.src_positions = nn.Parameter(torch.randn(length, d_model))
        self.tgt_positions = nn.Parameter(torch.randn(length, d_model))
        self.transformer = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout=0.1,
                                          batch_first=True, norm_first=True)
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal", causal)
        self.scale = d_model ** -0.5

    def logits(self, src, tgt):
        """The logits of each target position given the targets before it."""
        shifted = torch.cat([torch.zeros_like(tgt[:, :1]), tgt[:, :-1]], dim=1)
        y = self.transformer(self.embedding(src) + self.src_positions,
                             self.embedding(shifted) + self.tgt_positions,
                             tgt_mask=self.causal, src_key_padding_mask=src == 0,
                             memory_key_padding_mask=src == 0)
        return (y @ self.embedding.weight.t()) * self.scale

    def loss(self, src, tgt):
        return F.cross_entropy(self.logits(src, tgt).flatten(0, 1).float(), tgt.flatten(),
                               ignore_index=0, label_smoothing=0.1)


class Mlp(nn.Module):
    def __init__(self, hidden, **_):
        super().__init__()
        self.w1 = nn.Linear(784, hidden, bias=False)
        self.w2 = nn.Linear(hidden, 10, bias=False)

    def loss(self, x, y):
        return F.cross_entropy(self.w2(F.relu(self.w1(x.view(x.shape[0], -1)))), y)


class Cnn(nn.Module):
    def __init__(self, **_):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.dense1 = nn.Linear(8 * 8 * 32, 128)
        self.dense2 = nn.Linear(128, 10)

    def loss(self, x, y):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        h = F.relu(self.dense1(h.flatten(1)))
        return F.cross_entropy(self.dense2(h), y)


def torch_step_fn(model, sizes, dtype="float32"):
    torch.manual_seed(1)
    if model == "transformer":
        m = TransformerLm(**sizes)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        ids = torch.randint(0, sizes["vocab"], (sizes["batch"], sizes["length"]))
        tg = torch.randint(0, sizes["vocab"], (sizes["batch"], sizes["length"]))
        args = (ids, tg)
    elif model == "transformer_encdec":
        m = EncDec(**sizes)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        shape = (sizes["batch"], sizes["length"])
        args = (torch.randint(3, sizes["vocab"], shape), torch.randint(3, sizes["vocab"], shape))
    elif model == "cnn":
        m = Cnn(**sizes)
        opt = torch.optim.Adam(m.parameters(), lr=0.002)
        args = (torch.rand(sizes["batch"], 1, 32, 32), torch.randint(0, 10, (sizes["batch"],)))
    else:
        m = Mlp(**sizes)
        opt = torch.optim.SGD(m.parameters(), lr=0.2)
        args = (torch.rand(sizes["batch"], 28, 28), torch.randint(0, 10, (sizes["batch"],)))

    def step():
        opt.zero_grad(set_to_none=True)
        if dtype == "bfloat16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = m.loss(*args)
        else:
            loss = m.loss(*args)
        loss.backward()
        opt.step()
    return step


def torch_median_ms(step, steps, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def thread_env(threads):
    # OpenBLAS (both sides' GEMMs) reads its thread count from the
    # environment at load; torch.set_num_threads sets only OpenMP's.
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def torch_median_ms_in_process(name, threads, steps, warmup, dtype):
    """PyTorch's side in a fresh process, under the same environment as mtf's."""
    cmd = [sys.executable, os.path.abspath(__file__), "--torch_worker", name, "--threads",
           str(threads), "--steps", str(steps), "--warmup", str(warmup), "--dtypes", dtype]
    out = subprocess.run(cmd, env=thread_env(threads), check=True, capture_output=True,
                         text=True).stdout
    return float(out.split()[-1])


def mtf_median_ms(binary, model, sizes, threads, steps, warmup, reproducible, dtype):
    cmd = [binary, "--model", model, "--steps", str(steps), "--warmup", str(warmup),
           "--reproducible", "true" if reproducible else "false", "--activation_dtype", dtype]
    for k, v in sizes.items():
        cmd += ["--" + k, str(v)]
    out = subprocess.run(cmd, env=thread_env(threads), check=True, capture_output=True, text=True).stdout
    core = next(l.split()[1] for l in out.splitlines() if l.startswith("openblas_core"))
    return float(out.strip().splitlines()[-1].split()[1]), core


def fma_peak_gflops(binary):
    """This core's float32 FMA peak, as step_time measures it (fma_peak.h)."""
    out = subprocess.run([binary, "--model", "mlp", "--batch", "1", "--steps", "1", "--warmup", "0",
                          "--fma_peak", "true"], env=thread_env(1), check=True,
                         capture_output=True, text=True).stdout
    return next(float(l.split()[1]) for l in out.splitlines() if l.startswith("fma_peak_gflops"))


def mlp_product_gflop(sizes):
    """The MLP step's matrix products (forward, dW2, dH, dW1; no input
    gradient), the floor of its work on either side."""
    b, h = sizes["batch"], sizes["hidden"]
    return 2.0 * b * (2 * 784 * h + 3 * h * 10) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per case")
    ap.add_argument("--quick", action="store_true",
                    help="one round of transformer128 and mlp100 on one thread")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default=",".join(CONFIGS))
    ap.add_argument("--dtypes", default="float32,bfloat16",
                    help="float32 rows for every case, bfloat16 rows for the Transformer cases")
    ap.add_argument("--torch_worker", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.threads, args.only = 1, "1", "transformer128,mlp100"
    if args.torch_worker:
        torch.set_num_threads(int(args.threads))
        model, sizes = CONFIGS[args.torch_worker]
        print(torch_median_ms(torch_step_fn(model, sizes, args.dtypes), args.steps, args.warmup))
        return
    binary = os.path.join(args.build, "bench", "step_time")
    if not os.path.exists(binary):
        sys.exit(f"compare_pytorch: {binary} not found; build first (cmake --build build)")
    threads = [int(t) for t in args.threads.split(",")]
    print(f"PyTorch {torch.__version__}; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; {args.rounds} alternating rounds, "
          "medians (ms per training step)")
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    print("CPU has AVX512-BF16: " + ("yes" if "avx512_bf16" in flags else "no"))
    print(f"{'case':<16} {'thr':>3} {'mode':<12} {'PyTorch':>9} {'mtf':>9} {'mtf/PyTorch speed':>18}"
          f"  {'core':<10}")
    peak = fma_peak_gflops(binary)
    print(f"this core's float32 FMA peak: {peak:.1f} GFLOP/s (step_time --fma_peak true)")
    torch_best = {}
    for name in args.only.split(","):
        model, sizes = CONFIGS[name]
        big = model == "transformer_encdec" or (model == "transformer" and sizes["d_model"] >= 512)
        steps, warmup = (5, 2) if big else (20, 5)
        modes = [(False, "float32"), (True, "float32")] if model == "mlp" else [(False, "float32")]
        if model.startswith("transformer") and "bfloat16" in args.dtypes.split(","):
            modes.append((False, "bfloat16"))
        if "float32" not in args.dtypes.split(","):
            modes = [m for m in modes if m[1] != "float32"]
        for t in threads:
            for reproducible, dtype in modes:
                pt, mt = [], []
                core = "?"
                for _ in range(args.rounds):
                    pt.append(torch_median_ms_in_process(name, t, steps, warmup, dtype))
                    m, core = mtf_median_ms(binary, model, sizes, t, steps, warmup, reproducible,
                                            dtype)
                    mt.append(m)
                p, m = statistics.median(pt), statistics.median(mt)
                torch_best[name] = min(torch_best.get(name, p), p)
                mode = "reproducible" if reproducible else "fast"
                if dtype == "bfloat16":
                    mode = "bfloat16"
                print(f"{name:<16} {t:>3} {mode:<12} {p:>9.2f} {m:>9.2f} {p / m:>17.2f}x  {core:<10}"
                      f"  ranges: PyTorch {min(pt):.1f}-{max(pt):.1f}, mtf {min(mt):.1f}-{max(mt):.1f}",
                      flush=True)
                if model == "mlp" and t == 1 and not reproducible and peak > 0:
                    g = mlp_product_gflop(sizes)
                    print(f"{'':<16} {'':>3} {'':<12} products {g:.2f} GFLOP, at least "
                          f"{g / peak * 1e3:.2f} ms at the FMA peak: PyTorch's step is "
                          f"{g / p * 1e3 / peak:.0%} of peak, mtf's {g / m * 1e3 / peak:.0%}; "
                          f"1.2x PyTorch needs {1.2 * g / p * 1e3 / peak:.0%}", flush=True)
                if t > 1:
                    b = torch_best[name]
                    print(f"{'':<16} {'':>3} {'':<12} {'best':>9} {'':>9} {b / m:>17.2f}x"
                          f"  (vs PyTorch's best of its runs: {b:.2f} ms)", flush=True)


if __name__ == "__main__":
    main()
