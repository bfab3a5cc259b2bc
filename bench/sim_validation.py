#!/usr/bin/env python3
"""The simulator's predictions against real runs on this machine.

Measures this machine (mtf-sim --calibrate) unless given --machine, then for
each configuration below runs real training steps (bench/step_time: median of
--steps after --warmup; ranks as threads of one process, or as processes under
mtf-launch) and, in the same program, simulates the same step on the
calibrated machine (--predict). Prints a markdown table of measured and
predicted milliseconds per step, the error of each and the spread of the
launches' medians ((max - min) / median: how much the machine itself varies);
with --max_error E, exits 1 if a configuration is off by more than E percent
(after --retries fresh calibrations and measurements).

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

# (name, model flags, ranks, "threads", "processes" or "tcp" (processes with
# MTF_SHM=0), mesh, layout)
CONFIGS = [
    ("MLP, 1 core", MLP, 1, "threads", "", ""),
    ("MLP, data-parallel, 2 threads", MLP, 2, "threads", "b:2", "batch:b"),
    ("MLP, model-parallel, 2 threads", MLP, 2, "threads", "m:2", "hidden:m"),
    ("MLP, hybrid 2x2, 4 threads", MLP, 4, "threads", "b:2;m:2", "batch:b;hidden:m"),
    ("MLP, data-parallel, 2 processes", MLP, 2, "processes", "b:2", "batch:b"),
    ("MLP, hybrid 2x2, 4 processes", MLP, 4, "processes", "b:2;m:2", "batch:b;hidden:m"),
    ("MLP, data-parallel, 2 processes over TCP", MLP, 2, "tcp", "b:2", "batch:b"),
    ("LM, 1 core", LM, 1, "threads", "", ""),
    ("LM, data-parallel, 2 threads", LM, 2, "threads", "b:2", "batch:b"),
    ("LM, model-parallel, 2 threads", LM, 2, "threads", "m:2", "heads:m;d_ff:m"),
    ("LM, hybrid 2x2, 4 threads", LM, 4, "threads", "b:2;m:2", "batch:b;heads:m;d_ff:m"),
    ("LM, model-parallel, 2 processes", LM, 2, "processes", "m:2", "heads:m;d_ff:m"),
    ("LM, data-parallel, 4 processes", LM, 4, "processes", "b:4", "batch:b"),
]


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
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
    ap.add_argument("--steps", type=int, default=5, help="timed steps per launch")
    ap.add_argument("--repeats", type=int, default=5,
                    help="launches per configuration: the measured time is the median of their "
                         "medians (this VM's speed drifts between launches)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--max_error", type=float, default=0,
                    help="exit 1 when a configuration is off by more (percent; 0: report only)")
    ap.add_argument("--only", default="", help="run the configurations whose name has this")
    ap.add_argument("--calibrate_each", action="store_true",
                    help="without --machine: calibrate again before each configuration")
    ap.add_argument("--retries", type=int, default=0,
                    help="with --max_error: a configuration off by more is calibrated and "
                         "measured again up to this many times (noise margin; the table keeps "
                         "the first try, and says which passed on a retry)")
    args = ap.parse_args()

    step_time = os.path.join(args.build, "bench", "step_time")
    launch = os.path.join(args.build, "tools", "mtf-launch")
    machine = args.machine
    tmp = tempfile.TemporaryDirectory()
    given = bool(machine)
    if not given:
        machine = os.path.join(tmp.name, "host.machine")

    def calibrate():
        out = run([os.path.join(args.build, "tools", "mtf-sim"), "--calibrate", machine])
        return out.rstrip().splitlines()[-2]

    if not given:
        print("calibration: " + calibrate(), flush=True)

    core = ""
    rows = []
    for name, model, ranks, how, mesh, layout in CONFIGS:
        if args.only and args.only not in name:
            continue
        cmd = [step_time] + model + ["--steps", str(args.steps), "--warmup", str(args.warmup),
                                     "--predict", machine]
        if mesh:
            cmd += ["--mesh_shape", mesh, "--layout", layout]
        env = None
        if how in ("processes", "tcp"):
            cmd = [launch, "-n", str(ranks), "--"] + cmd
        if how == "tcp":
            env = dict(os.environ, MTF_SHM="0")

        def attempt(first):
            if (args.calibrate_each or not first) and not given:
                # Measured just before the runs it predicts: this VM's speed
                # drifts by 10% and more over minutes.
                calibrate()
            times, predicted, out = [], 0, ""
            for repeat in range(args.repeats):
                # The prediction (the same every time) from the first launch only.
                c = cmd if repeat == 0 else [a for a in cmd if a not in ("--predict", machine)]
                out = run(c, env)
                times.append(figure("median_ms", out, c))
                if repeat == 0:
                    predicted = figure("predicted_ms", out, c)
            times.sort()
            spread = 100 * (times[-1] - times[0]) / times[len(times) // 2]
            return times[len(times) // 2], predicted, out, spread

        measured, predicted, out, spread = attempt(True)
        err = 100 * (predicted / measured - 1)
        last, note = err, ""
        for retry in range(1, args.retries + 1):
            if not args.max_error or abs(last) <= args.max_error:
                break
            m2, p2, _, _ = attempt(False)
            last = 100 * (p2 / m2 - 1)
            note += f"; retry {retry}: {m2:.2f} vs {p2:.2f} ms ({last:+.1f}%)"
        c = re.search(r"^openblas_core (\S+)", out, re.M)
        core = c.group(1) if c else core
        passed = not args.max_error or abs(last) <= args.max_error
        rows.append((name, measured, predicted, err, passed, note, spread))
        print(f"{name}: measured {measured:.3f} ms (launches spread {spread:.0f}%), predicted "
              f"{predicted:.3f} ms ({err:+.1f}%){note}", flush=True)

    print(f"\nOpenBLAS core {core}; measured: median over {args.repeats} launches of the median "
          f"of {args.steps} steps after {args.warmup}\n")
    print("| configuration | measured ms | spread of launches | predicted ms | error |")
    print("|---|---:|---:|---:|---:|")
    for name, measured, predicted, err, _, _, spread in rows:
        print(f"| {name} | {measured:.2f} | {spread:.0f}% | {predicted:.2f} | {err:+.1f}% |")
    worst = max((abs(r[3]) for r in rows), default=0)
    print(f"\nworst error {worst:.1f}%; within 10%: {sum(abs(r[3]) <= 10 for r in rows)} of "
          f"{len(rows)}")
    failed = [r[0] for r in rows if not r[4]]
    if failed:
        print(f"sim_validation: off by more than {args.max_error:g}%: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
