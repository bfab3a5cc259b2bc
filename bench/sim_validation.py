#!/usr/bin/env python3
"""The simulator's predictions against real runs on this machine.

Measures this machine (mtf-sim --calibrate) unless given --machine, then for
each configuration below runs real steps and, in the same program, simulates
the same step on the calibrated machine (--predict): training steps with
bench/step_time, decoding steps with bench/decode_benchmark; ranks as threads
of one process, or as processes under mtf-launch.

Noise is handled by the method. Each launch times enough steps to last about
--launch_seconds (its median step); a row's measured time is the median of
--launches launches, with a distribution-free confidence interval for that
median from the launches' order statistics (at least --confidence). A row
whose interval is wider than --max_spread (relative to its median) is
measured again, up to --reruns times, keeping the narrowest. The error's
interval is the prediction against the measured interval; a row is a miss
only when its whole error interval lies more than --max_error percent away.
Prints a markdown table and a summary (rows whose point error is within 10%,
misses by the interval rule, the median absolute error); with --max_error E
given, exits 1 when a row misses.

With --quick, only the rows the test suite checks; with --retries N, a row
that misses (with --max_error) is calibrated and measured again up to N
times (this VM's speed moves by 10-30% within minutes).

  bench/sim_validation.py [--build build] [--machine FILE] [--max_error 10]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

MLP = ["--model", "mlp", "--batch", "200", "--hidden", "1024"]
LM = ["--model", "transformer", "--layers", "2", "--d_model", "256", "--d_ff", "1024",
      "--heads", "8", "--d_kv", "32", "--length", "128", "--batch", "16", "--vocab", "256"]
# The step bench/compare_pytorch.py compares with PyTorch.
LM512 = ["--model", "transformer", "--layers", "2", "--d_model", "512", "--d_ff", "2048",
         "--heads", "8", "--d_kv", "64", "--length", "128", "--batch", "8", "--vocab", "256"]
BF16 = ["--activation_dtype", "bfloat16"]
DECODE = ["--model", "transformer", "--layers", "2", "--d_model", "512", "--d_ff", "2048",
          "--heads", "8", "--d_kv", "64", "--length", "128", "--vocab", "256",
          "--decode_batch", "1"]
CNN = ["--model", "cnn", "--batch", "100"]
MOE = LM + ["--moe_experts", "4"]
ENCDEC = ["--model", "transformer_encdec", "--layers", "2", "--d_model", "256", "--d_ff",
          "1024", "--heads", "8", "--d_kv", "32", "--length", "64", "--batch", "16", "--vocab",
          "256"]
MODEL_PARALLEL = "heads:m;d_ff:m"

# (name, program, flags, ranks, "threads", "processes" or "tcp" (processes
# with MTF_SHM=0), mesh, layout)
CONFIGS = [
    ("MLP, 1 core", "step_time", MLP, 1, "threads", "", ""),
    ("MLP, data-parallel, 2 threads", "step_time", MLP, 2, "threads", "b:2", "batch:b"),
    ("MLP, model-parallel, 2 threads", "step_time", MLP, 2, "threads", "m:2", "hidden:m"),
    ("MLP, hybrid 2x2, 4 threads", "step_time", MLP, 4, "threads", "b:2;m:2", "batch:b;hidden:m"),
    ("MLP, data-parallel, 2 processes", "step_time", MLP, 2, "processes", "b:2", "batch:b"),
    ("MLP, hybrid 2x2, 4 processes", "step_time", MLP, 4, "processes", "b:2;m:2",
     "batch:b;hidden:m"),
    ("MLP, data-parallel, 2 processes over TCP", "step_time", MLP, 2, "tcp", "b:2", "batch:b"),
    ("LM, 1 core", "step_time", LM, 1, "threads", "", ""),
    ("LM, data-parallel, 2 threads", "step_time", LM, 2, "threads", "b:2", "batch:b"),
    ("LM, model-parallel, 2 threads", "step_time", LM, 2, "threads", "m:2", MODEL_PARALLEL),
    ("LM, hybrid 2x2, 4 threads", "step_time", LM, 4, "threads", "b:2;m:2",
     "batch:b;" + MODEL_PARALLEL),
    ("LM, model-parallel, 2 processes", "step_time", LM, 2, "processes", "m:2", MODEL_PARALLEL),
    ("LM, data-parallel, 4 processes", "step_time", LM, 4, "processes", "b:4", "batch:b"),
    ("LM d512, 1 core", "step_time", LM512, 1, "threads", "", ""),
    ("LM d512, model-parallel, 2 threads", "step_time", LM512, 2, "threads", "m:2",
     MODEL_PARALLEL),
    ("LM d512 bfloat16, 1 core", "step_time", LM512 + BF16, 1, "threads", "", ""),
    ("LM d512 bfloat16, data-parallel, 2 threads", "step_time", LM512 + BF16, 2, "threads",
     "b:2", "batch:b"),
    ("Decoding batch 1, 1 core", "decode_benchmark", DECODE, 1, "threads", "", ""),
    ("Decoding batch 1, model-parallel, 2 threads", "decode_benchmark", DECODE, 2, "threads",
     "m:2", "heads:m;d_ff:m;vocab:m"),
    ("CNN, 1 core", "step_time", CNN, 1, "threads", "", ""),
    ("CNN, spatial (rows split), 2 threads", "step_time", CNN, 2, "threads", "r:2", "h:r"),
    ("MoE LM, 1 core", "step_time", MOE, 1, "threads", "", ""),
    ("MoE LM, experts by alltoall, 2 threads", "step_time", MOE, 2, "threads", "b:2",
     "batch:b;experts:b"),
    ("Encoder-decoder, 1 core", "step_time", ENCDEC, 1, "threads", "", ""),
    ("Encoder-decoder, data-parallel, 2 threads", "step_time", ENCDEC, 2, "threads", "b:2",
     "batch:b"),
]

# The rows the test suite's run checks (--quick): one of each kind of step
# and of rank, in under 3 minutes with its calibration.
QUICK = {"MLP, 1 core", "MLP, data-parallel, 2 threads", "MLP, data-parallel, 2 processes",
         "LM, 1 core", "LM, model-parallel, 2 threads", "LM d512 bfloat16, 1 core",
         "Decoding batch 1, 1 core", "CNN, 1 core", "MoE LM, experts by alltoall, 2 threads",
         "Encoder-decoder, 1 core"}

# Each program's flags for timed and untimed steps.
STEP_FLAGS = {"step_time": ("--steps", "--warmup"), "decode_benchmark": ("--tokens", "--warmup")}


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"sim_validation: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def figure(name, text, cmd):
    m = re.search(rf"^{name} ([0-9.]+)", text, re.M)
    if not m:
        sys.exit(f"sim_validation: no {name} in the output of {' '.join(cmd)}:\n{text}")
    return float(m.group(1))


def coverage(n, k):
    """How often the k-th lowest and k-th highest of n draws enclose the
    median: 1 - 2 P(Binomial(n, 1/2) < k)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


def interval_rank(n, confidence):
    """The largest k (1 at least) whose order statistics cover the median
    with at least `confidence`."""
    k = 1
    while 2 * (k + 1) <= n and coverage(n, k + 1) >= confidence:
        k += 1
    return k


def median_interval(xs, confidence):
    """The median of xs and its distribution-free interval."""
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    k = interval_rank(n, confidence)
    return xs[k - 1], med, xs[n - k]


def measure_row(args, base, env, steps_flag, machine):
    """One try at a row: a first launch predicts the step (on `machine`) and
    sizes the others' step count; then --launches launches, again up to
    --reruns times while their interval is wider than --max_spread (the
    narrowest kept). Returns ((predicted, lo, median, hi, tries, steps),
    the first launch's output)."""
    probe = base + [steps_flag, "5", "--predict", machine]
    out = run(probe, env)
    predicted = figure("predicted_ms", out, probe)
    steps = max(5, min(200, round(1e3 * args.launch_seconds / figure("median_ms", out, probe))))
    best, tries = None, 0
    while tries <= args.reruns:
        tries += 1
        cmd = base + [steps_flag, str(steps)]
        times = [figure("median_ms", run(cmd, env), cmd) for _ in range(args.launches)]
        lo, med, hi = median_interval(times, args.confidence)
        if best is None or (hi - lo) / med < (best[2] - best[0]) / best[1]:
            best = (lo, med, hi)
        if 100 * (hi - lo) / med <= args.max_spread:
            break
    return (predicted,) + best + (tries, steps), out


def error_of(t, limit):
    """A try's error in percent, its interval (the prediction against the
    top and the bottom of the measured interval) and whether the whole
    interval lies beyond `limit`."""
    predicted, lo, med, hi = t[:4]
    err_lo, err_hi = 100 * (predicted / hi - 1), 100 * (predicted / lo - 1)
    return 100 * (predicted / med - 1), err_lo, err_hi, err_lo > limit or err_hi < -limit


def report(args, rows, core, limit):
    """Prints the table and the summary of `rows`; 1 when --max_error is
    given and a row misses."""
    k = interval_rank(args.launches, args.confidence)
    print(f"\nOpenBLAS core {core}; measured: the median over {args.launches} launches of each "
          f"launch's median step; interval: launches {k} and {args.launches + 1 - k} of "
          f"{args.launches} in order ({100 * coverage(args.launches, k):.0f}% for the median)\n")
    print("| configuration | measured ms | interval | predicted ms | error | error interval |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, med, lo, hi, predicted, err, err_lo, err_hi, miss, tries, note in rows:
        mark = " **miss**" if miss else (" (passed on a retry)" if note else "")
        again = f" ({tries} tries)" if tries > 1 else ""
        print(f"| {name} | {med:.2f} | {lo:.2f}-{hi:.2f}{again} | {predicted:.2f} | {err:+.1f}% | "
              f"{err_lo:+.1f}% to {err_hi:+.1f}%{mark} |")
    errors = sorted(abs(r[5]) for r in rows)
    if errors:
        n = len(errors)
        median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
        misses = [r[0] for r in rows if r[8]]
        print(f"\nrows {n}; point error within 10%: {sum(e <= 10 for e in errors)}; misses "
              f"(whole interval beyond {limit:g}%): {len(misses)}; median absolute error "
              f"{median:.1f}%; worst {errors[-1]:.1f}%")
        if args.max_error and misses:
            print(f"sim_validation: beyond {args.max_error:g}% on the whole interval: "
                  f"{', '.join(misses)}", file=sys.stderr)
            return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--machine", default="", help="a machine file (default: calibrate now)")
    ap.add_argument("--launches", type=int, default=8, help="launches per row")
    ap.add_argument("--launch_seconds", type=float, default=0.3,
                    help="timed steps per launch: enough to last this long (5 to 200)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--confidence", type=float, default=0.9,
                    help="coverage of each row's interval for its median")
    ap.add_argument("--max_spread", type=float, default=15,
                    help="percent: a row whose interval is wider is measured again")
    ap.add_argument("--reruns", type=int, default=2, help="at most this many times")
    ap.add_argument("--max_error", type=float, default=0,
                    help="exit 1 when a row's whole error interval is further away (percent; "
                         "0: report only); the table marks misses at 10%% without it")
    ap.add_argument("--only", default="", help="run the rows whose name has this")
    ap.add_argument("--quick", action="store_true",
                    help="only the rows the test suite checks (one of each kind)")
    ap.add_argument("--retries", type=int, default=0,
                    help="with --max_error: a row that misses is calibrated (without --machine) "
                         "and measured again up to this many times; the table keeps the first "
                         "try and says which passed on a retry")
    ap.add_argument("--calibrate_each", action="store_true",
                    help="without --machine: calibrate again before each row")
    args = ap.parse_args()
    if args.launches < 3:
        sys.exit("sim_validation: --launches must be at least 3 (an interval needs them)")
    limit = args.max_error or 10

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
    for name, program, model, ranks, how, mesh, layout in CONFIGS:
        if (args.only and args.only not in name) or (args.quick and name not in QUICK):
            continue
        steps_flag, warmup_flag = STEP_FLAGS[program]
        base = [os.path.join(args.build, "bench", program)] + model + [warmup_flag,
                                                                       str(args.warmup)]
        if mesh:
            base += ["--mesh_shape", mesh, "--layout", layout]
        env = None
        if how in ("processes", "tcp"):
            base = [launch, "-n", str(ranks), "--"] + base
        if how == "tcp":
            env = dict(os.environ, MTF_SHM="0")

        def measure(fresh):
            if fresh and not given:
                calibrate()
            return measure_row(args, base, env, steps_flag, machine)

        first, out = measure(args.calibrate_each)
        c = re.search(r"^openblas_core (\S+)", out, re.M)
        core = c.group(1) if c else core
        predicted, lo, med, hi, tries, steps = first
        err, err_lo, err_hi, miss = error_of(first, limit)
        note, last_miss = "", miss
        for retry in range(1, args.retries + 1):
            if not (args.max_error and last_miss):
                break
            again, _ = measure(True)
            e2, _, _, last_miss = error_of(again, limit)
            note += (f"; retry {retry}: {again[2]:.2f} [{again[1]:.2f}, {again[3]:.2f}] vs "
                     f"{again[0]:.2f} ms ({e2:+.1f}%{' miss' if last_miss else ''})")
        miss = last_miss if args.max_error else miss
        rows.append((name, med, lo, hi, predicted, err, err_lo, err_hi, miss, tries, note))
        print(f"{name}: measured {med:.3f} ms [{lo:.3f}, {hi:.3f}] ({steps} steps x "
              f"{args.launches} launches, {tries} tr{'y' if tries == 1 else 'ies'}), predicted "
              f"{predicted:.3f} ms ({err:+.1f}% [{err_lo:+.1f}, {err_hi:+.1f}])"
              f"{' MISS' if miss else ''}{note}", flush=True)

    return report(args, rows, core, limit)


if __name__ == "__main__":
    sys.exit(main())
