#!/usr/bin/env python3
"""The simulator's predictions against real runs on this machine.

Measures this machine (mtf-sim --calibrate) unless given --machine, then for
each configuration below runs real training steps (bench/step_time: median of
--steps after --warmup; ranks as threads of one process, or as processes under
mtf-launch) and, in the same program, simulates the same step on the
calibrated machine (--predict). Prints a markdown table of measured and
predicted milliseconds per step and the error of each; with --max_error E,
exits 1 if any configuration is off by more than E percent.

  bench/sim_validation.py [--build build] [--machine FILE] [--max_error 20]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MLP = ["--model", "mlp", "--batch", "200", "--hidden", "1024"]
LM = ["--model", "transformer", "--layers", "2", "--d_model", "256", "--d_ff", "1024",
      "--heads", "8", "--d_kv", "32", "--length", "128", "--batch", "16", "--vocab", "256"]

# (name, model flags, ranks, "threads" or "processes", mesh, layout)
CONFIGS = [
    ("MLP, 1 core", MLP, 1, "threads", "", ""),
    ("MLP, data-parallel, 2 threads", MLP, 2, "threads", "b:2", "batch:b"),
    ("MLP, model-parallel, 2 threads", MLP, 2, "threads", "m:2", "hidden:m"),
    ("MLP, hybrid 2x2, 4 threads", MLP, 4, "threads", "b:2;m:2", "batch:b;hidden:m"),
    ("MLP, data-parallel, 2 processes", MLP, 2, "processes", "b:2", "batch:b"),
    ("MLP, hybrid 2x2, 4 processes", MLP, 4, "processes", "b:2;m:2", "batch:b;hidden:m"),
    ("LM, 1 core", LM, 1, "threads", "", ""),
    ("LM, data-parallel, 2 threads", LM, 2, "threads", "b:2", "batch:b"),
    ("LM, model-parallel, 2 threads", LM, 2, "threads", "m:2", "heads:m;d_ff:m"),
    ("LM, hybrid 2x2, 4 threads", LM, 4, "threads", "b:2;m:2", "batch:b;heads:m;d_ff:m"),
    ("LM, model-parallel, 2 processes", LM, 2, "processes", "m:2", "heads:m;d_ff:m"),
    ("LM, data-parallel, 4 processes", LM, 4, "processes", "b:4", "batch:b"),
]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"sim_validation: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def figure(name, text, cmd):
    m = re.search(rf"^{name} ([0-9.]+)$", text, re.M)
    if not m:
        sys.exit(f"sim_validation: no {name} in the output of {' '.join(cmd)}:\n{text}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--machine", default="", help="a machine file (default: calibrate now)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per configuration")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--max_error", type=float, default=0,
                    help="exit 1 when a configuration is off by more (percent; 0: report only)")
    ap.add_argument("--only", default="", help="run the configurations whose name has this")
    args = ap.parse_args()

    step_time = os.path.join(args.build, "bench", "step_time")
    launch = os.path.join(args.build, "tools", "mtf-launch")
    machine = args.machine
    tmp = None
    if not machine:
        tmp = tempfile.TemporaryDirectory()
        machine = os.path.join(tmp.name, "host.machine")
        out = run([os.path.join(args.build, "tools", "mtf-sim"), "--calibrate", machine])
        print("calibration:\n" + out.rstrip().splitlines()[-2])
    core = ""
    rows = []
    for name, model, ranks, how, mesh, layout in CONFIGS:
        if args.only and args.only not in name:
            continue
        cmd = [step_time] + model + ["--steps", str(args.steps), "--warmup", str(args.warmup),
                                     "--predict", machine]
        if mesh:
            cmd += ["--mesh_shape", mesh, "--layout", layout]
        if how == "processes":
            cmd = [launch, "-n", str(ranks), "--"] + cmd
        out = run(cmd)
        measured, predicted = figure("median_ms", out, cmd), figure("predicted_ms", out, cmd)
        c = re.search(r"^openblas_core (\S+)", out, re.M)
        core = c.group(1) if c else core
        rows.append((name, measured, predicted, 100 * (predicted / measured - 1)))
        print(f"{name}: measured {measured:.3f} ms, predicted {predicted:.3f} ms "
              f"({rows[-1][3]:+.1f}%)", flush=True)

    print(f"\nOpenBLAS core {core}; median of {args.steps} steps after {args.warmup}\n")
    print("| configuration | measured ms | predicted ms | error |")
    print("|---|---:|---:|---:|")
    for name, measured, predicted, err in rows:
        print(f"| {name} | {measured:.2f} | {predicted:.2f} | {err:+.1f}% |")
    worst = max((abs(r[3]) for r in rows), default=0)
    print(f"\nworst error {worst:.1f}%; within 10%: {sum(abs(r[3]) <= 10 for r in rows)} of "
          f"{len(rows)}")
    if args.max_error and worst > args.max_error:
        print(f"sim_validation: an error above {args.max_error:g}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
