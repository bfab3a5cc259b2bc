#!/usr/bin/python3
"""Per-token latency of incremental decoding with a key/value cache: mtf on
one core, on an in-process 2-core mesh and on 2 processes (mtf-launch), and
the same model decoding with a cache in PyTorch on one thread; alternating
rounds, medians.

The model is compare_pytorch.py's Transformer LM (the same as
models/transformer.cc) with random weights; default sizes d_model 1024,
d_ff 4096, 16 heads x 64, 6 layers, vocabulary 256, length 128. Each side
times `--tokens` steps at positions cycling through the length, after a
warm-up. PyTorch's step attends to positions 0..p of its cache; mtf's to
every cache row with those after p masked. mtf's 2-core runs split heads,
d_ff and vocab over the mesh ("heads:model;d_ff:model;vocab:model"). Every
process runs with OPENBLAS_NUM_THREADS=1 (and torch.set_num_threads(1)), so
one core is one thread; OPENBLAS_CORETYPE is left as found and printed.

PyTorch is a benchmark-only dependency (Debian: apt-get install
python3-torch; it runs under /usr/bin/python3).

usage: bench/compare_decode.py [--build build] [--rounds 3] [--batches 1,8,64] [--quick]

The defaults (3 rounds, as bench/README.md's tables) take about 7.5 minutes
on 2 CPUs (441 s measured); --quick is one round at batch 1, about 30 s, for
a first look.
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
    print("compare_decode.py: PyTorch is not installed here (apt-get install python3-torch); "
          "nothing to compare, skipped")
    sys.exit(0)
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_pytorch import TransformerLm  # noqa: E402

SIZES = dict(d_model=1024, d_ff=4096, heads=16, d_kv=64, layers=6, vocab=256, length=128)
LAYOUT = "heads:model;d_ff:model;vocab:model"


@torch.inference_mode()
def torch_median_ms(batch, tokens, warmup):
    torch.manual_seed(1)
    m = TransformerLm(**SIZES).eval()
    L, H, K = SIZES["length"], SIZES["heads"], SIZES["d_kv"]
    caches = [(torch.zeros(batch, H, L, K), torch.zeros(batch, H, L, K)) for _ in m.blocks]

    def step(ids, p):
        x = m.embedding(ids) + m.positions[p]
        for blk, (kc, vc) in zip(m.blocks, caches):
            h = blk.attention_norm(x)
            q = blk.q(h).view(batch, H, K)
            kc[:, :, p] = blk.k(h).view(batch, H, K)
            vc[:, :, p] = blk.v(h).view(batch, H, K)
            w = torch.softmax(torch.einsum("bhk,bhmk->bhm", q, kc[:, :, :p + 1]), dim=-1)
            a = torch.einsum("bhm,bhmk->bhk", w, vc[:, :, :p + 1]).reshape(batch, H * K)
            x = x + blk.o(a)
            x = x + blk.wo(F.relu(blk.wi(blk.ffn_norm(x))))
        return m.logits(m.final_norm(x))

    g = torch.Generator().manual_seed(1)
    p, times = 0, []
    for i in range(warmup + tokens):
        ids = torch.randint(0, SIZES["vocab"], (batch,), generator=g)
        t0 = time.perf_counter()
        step(ids, p)
        if i >= warmup:
            times.append(1e3 * (time.perf_counter() - t0))
        p = (p + 1) % L
    return statistics.median(times)


def env1():
    return dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def torch_worker(batch, tokens, warmup):
    cmd = [sys.executable, os.path.abspath(__file__), "--torch_worker", str(batch),
           "--tokens", str(tokens), "--warmup", str(warmup)]
    out = subprocess.run(cmd, env=env1(), check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def mtf_ms(build, kind, batch, tokens, warmup):
    """(median ms per token, OpenBLAS core) of decode_benchmark as `kind`:
    one, mesh (in-process 2-core) or procs (2 processes by mtf-launch)."""
    cmd = [os.path.join(build, "bench", "decode_benchmark"), "--decode_batch", str(batch),
           "--tokens", str(tokens), "--warmup", str(warmup)]
    for k, v in SIZES.items():
        cmd += ["--" + k, str(v)]
    if kind != "one":
        cmd += ["--mesh_shape", "model:2", "--layout", LAYOUT]
    if kind == "procs":
        cmd = [os.path.join(build, "tools", "mtf-launch"), "-n", "2", "--"] + cmd
    out = subprocess.run(cmd, env=env1(), check=True, capture_output=True, text=True).stdout
    lines = [l[4:] if l.startswith("[0] ") else l for l in out.splitlines()
             if not l.startswith("[1] ")]
    core = next(l.split()[1] for l in lines if l.startswith("openblas_core"))
    return float(next(l.split()[1] for l in lines if l.startswith("median_ms"))), core


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--quick", action="store_true", help="one round at batch 1")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--torch_worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.batches = 1, "1"
    if args.torch_worker:
        torch.set_num_threads(1)
        print(torch_median_ms(args.torch_worker, args.tokens, args.warmup))
        return
    print(f"PyTorch {torch.__version__}; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; one thread per process; "
          f"{args.rounds} alternating rounds, medians; model {SIZES}")
    print(f"{'batch':>5} {'PyTorch':>9} {'mtf 1':>9} {'mtf 2c':>9} {'mtf 2p':>9}   "
          f"{'1/PyTorch':>9} {'2c/1':>6} {'2p/1':>6}   {'tokens/s: PyTorch':>17} {'1':>7} "
          f"{'2c':>7} {'2p':>7}  core")
    for batch in [int(b) for b in args.batches.split(",")]:
        t = {k: [] for k in ("torch", "one", "mesh", "procs")}
        core = "?"
        for _ in range(args.rounds):
            t["torch"].append(torch_worker(batch, args.tokens, args.warmup))
            for kind in ("one", "mesh", "procs"):
                ms, core = mtf_ms(args.build, kind, batch, args.tokens, args.warmup)
                t[kind].append(ms)
        m = {k: statistics.median(v) for k, v in t.items()}
        rate = {k: 1e3 * batch / v for k, v in m.items()}
        print(f"{batch:>5} {m['torch']:>9.2f} {m['one']:>9.2f} {m['mesh']:>9.2f} "
              f"{m['procs']:>9.2f}   {m['one'] / m['torch']:>9.2f} {m['mesh'] / m['one']:>6.2f} "
              f"{m['procs'] / m['one']:>6.2f}   {rate['torch']:>17.0f} {rate['one']:>7.0f} "
              f"{rate['mesh']:>7.0f} {rate['procs']:>7.0f}  {core}", flush=True)


if __name__ == "__main__":
    main()
