#!/usr/bin/env python3
"""The Python MNIST example's training step against the C++ example's.

Runs build/examples/mnist and examples/python/mnist.py with the same flags,
alternately (which goes first alternates too), and compares the ms/step
each prints: the whole step as a user runs it (batch drawn, pixels scaled,
feeds copied in, the step run, the loss fetched). Prints each pair and the
median of the per-pair ratios, and the OpenBLAS core in use.

    /usr/bin/python3 bench/compare_python.py [--rounds 5] [--steps 1000] [-- example flags]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ms_per_step(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"\(([\d.]+) ms/step\)", out).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("flags", nargs="*", help="more flags for both examples (after --)")
    args = p.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    core = subprocess.run([os.path.join(args.build, "bench", "step_time"), "--model", "mlp",
                           "--steps", "1"], env=env, capture_output=True, text=True).stdout
    core = next((l.split()[1] for l in core.splitlines() if l.startswith("openblas_core")), "?")
    flags = ["--steps", str(args.steps), "--eval_every", str(args.steps)] + args.flags
    cpp = [os.path.join(args.build, "examples", "mnist"), "--mesh_shape", "rows:2;cols:2",
           "--layout", "batch:rows;hidden:cols"] + flags
    py = [sys.executable, os.path.join(ROOT, "examples", "python", "mnist.py")] + flags
    print(f"openblas core: {core}; flags: {' '.join(flags)} (2x2 mesh, batch over rows, "
          f"hidden over cols, unless overridden)")
    print(f"{'round':<6} {'C++ ms/step':>12} {'Python ms/step':>15} {'Python / C++':>13}")
    ratios = []
    for r in range(args.rounds):
        order = [("cpp", cpp), ("py", py)] if r % 2 == 0 else [("py", py), ("cpp", cpp)]
        t = {name: ms_per_step(cmd, env) for name, cmd in order}
        ratios.append(t["py"] / t["cpp"])
        print(f"{r + 1:<6} {t['cpp']:>12.3f} {t['py']:>15.3f} {ratios[-1]:>13.3f}", flush=True)
    print(f"median Python / C++ step time: {statistics.median(ratios):.3f} "
          f"({(statistics.median(ratios) - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
