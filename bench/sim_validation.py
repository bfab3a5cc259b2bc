#!/usr/bin/env python3
"""The simulator's predictions against real runs on this machine.

For each configuration below, runs real steps and simulates the same step on
this machine as calibrated (--predict, in the same program): training steps
with bench/step_time, decoding steps with bench/decode_benchmark; ranks as
threads of one process, or as processes under mtf-launch.

Noise is handled by the method. A VM's speed moves by 10-30% from one minute
(or second) to the next, so calibration and measurement sample the same
period: the rows are measured in passes, one launch of each row per pass,
and the calibration's rounds (--calibrations, one `mtf-sim --calibrate
--calibration_rounds 1` each) sit before the first pass, between passes and
after the last. A row's prediction is the mean of the step each round's
machine predicts (one run predicts on all of them): the step a long run
takes on average on a machine whose speed switches between levels, where
the machine of the rounds' medians (`mtf-sim --from_calibrations`, what
--combine median uses) lands on one level or the other by chance; the
summary gives the other way's count and error beside. A round that reads
one of the host's rates (elementwise arithmetic, cache or memory bandwidth,
products) below --slow_round of the rounds' median, or busy_in_program
(what ranks filling the CPUs cost) above the median over it, caught a slow few
seconds, which weigh on a 20-second round as they do not on minutes of
launches: it is measured again once, after the last pass, and the summary
says so. Each launch times enough steps to last about --launch_seconds
(its median step); a row's measured time is the median of its --launches
launches, with a distribution-free confidence interval for that median
from the launches' order statistics (at least --confidence). A row whose
interval is wider than --max_spread (relative to its median) gets more
passes, up to --reruns times --launches more launches, all of them kept.
The error's interval is the prediction against the measured interval; a
row is a miss only when its whole error interval lies more than
--max_error percent away. Prints a markdown table and a summary
(rows whose point error is within 10%, misses by the interval rule, the
median absolute error); with --max_error E given, exits 1 when a row misses.
The table also gives each row's step as each round's machine alone
predicts it (one run predicts on all of them): how far the machine's
movement between rounds moves the prediction. After the summary, what
mtf-sim says of the rounds it combined: the range of the figures a steady
machine measures alike every time (products on one thread and on every CPU,
bfloat16 products, what ranks filling the CPUs cost), and a warning when
one moved by more than 10%: the machine then moves by more than the rows
are held to, and a row can miss by that alone. With --watch S (default
20), the script also watches the machine's speed for S seconds before the
first pass and after the last (`mtf-sim --watch_speeds`: products on every
CPU at once, 4 times a second; per CPU a fast and a slow level, the share of
the time at the fast one, how long a level held, how often every CPU was fast
at once) and prints what it saw after the summary: a machine whose CPUs
switch between two speeds every second or so cannot be checked to 10%
whatever the model.

With --quick, only the rows the test suite checks; with --retries N, a row
that misses (with --max_error) is calibrated and measured again, on its own,
up to N times; with --keep_machines DIR, the rounds' machine files, their
median and rows.json (each row's launches and predictions) stay in DIR.

  bench/sim_validation.py [--build build] [--machine FILE] [--max_error 10] [--watch 20]
"""
import argparse
import json
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


def figures(name, text, cmd):
    """The numbers on the output's line that starts with `name`."""
    m = re.search(rf"^{name}((?: [0-9.]+)+)$", text, re.M)
    if not m:
        sys.exit(f"sim_validation: no {name} in the output of {' '.join(cmd)}:\n{text}")
    return [float(x) for x in m.group(1).split()]


def figure(name, text, cmd):
    return figures(name, text, cmd)[0]


def mean_of(xs):
    return sum(xs) / len(xs)


def median_of(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def prediction(on_median, on_rounds, combine):
    """A row's predicted step: the mean of its step on each round's machine
    (combine "mean", with rounds), else its step on the medians' machine.
    On a machine that switches between a fast and a slow level, each round
    lands on one or the other, and the mean follows the share of the time
    at each (what a long run pays) where the medians' machine takes one
    level whole."""
    return mean_of(on_rounds) if combine == "mean" and on_rounds else on_median


# The host's rates a calibration round measures (elementwise arithmetic,
# cache and memory bandwidth, products on one thread and on every CPU).
ROUND_RATES = ("core_flops", "cache_bandwidth", "chip_memory_bandwidth", "gemm_flops",
               "gemm_flops_all_cpus")
# And a factor it measures on the time of ranks filling the CPUs: a round
# that caught one CPU slow reads it high (1.46 and 1.49 where the other
# rounds read 1.00-1.15, and every multi-rank row's mean prediction 5-10%
# over); slow when above the rounds' median divided by --slow_round.
ROUND_FACTORS = ("busy_in_program",)


def machine_rates(path):
    """ROUND_RATES and ROUND_FACTORS as a machine file gives them (those it
    has)."""
    rates = {}
    with open(path) as f:
        for line in f:
            key, eq, value = line.partition(" = ")
            if eq and (key in ROUND_RATES or key in ROUND_FACTORS):
                rates[key] = float(value)
    return rates


def slow_rounds(rates, below):
    """The rounds (indices into `rates`, one dict of ROUND_RATES and
    ROUND_FACTORS each) that read a rate below `below` times the rounds'
    median of it, or a factor above that median over `below`, with the
    first such figure and its share of the median; none with fewer than 3
    rounds (no median to stand against)."""
    if len(rates) < 3 or below <= 0:
        return []
    medians = {}
    for key in ROUND_RATES + ROUND_FACTORS:
        values = [r[key] for r in rates if key in r]
        if len(values) >= 3:
            medians[key] = median_of(values)
    slow = []
    for i, r in enumerate(rates):
        for key, median in medians.items():
            share = r[key] / median if key in r and median > 0 else 1
            if share < below if key in ROUND_RATES else share > 1 / below:
                slow.append((i, key, share))
                break
    return slow


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
    k = interval_rank(n, confidence)
    return xs[k - 1], median_of(xs), xs[n - k]


class Row:
    """One configuration: its command, and the launches measured so far."""

    def __init__(self, name, base, env, steps_flag):
        self.name, self.base, self.env, self.steps_flag = name, base, env, steps_flag
        self.steps, self.times, self.predicted, self.out = 5, [], 0.0, ""
        self.on_rounds = []  # the step predicted on each calibration round's machine
        self.on_median = 0.0  # the step predicted on the machine of the rounds' medians

    def size(self, args):
        """A first launch sizes the others' step count (and tells the BLAS core)."""
        cmd = self.base + [self.steps_flag, "5"]
        self.out = run(cmd, self.env)
        per_step = figure("median_ms", self.out, cmd)
        self.steps = max(5, min(200, round(1e3 * args.launch_seconds / per_step)))

    def launch(self):
        cmd = self.base + [self.steps_flag, str(self.steps)]
        self.times.append(figure("median_ms", run(cmd, self.env), cmd))

    def predict(self, machine, rounds=(), combine="mean"):
        """The step predicted on `machine` (the rounds' medians) and on each
        of `rounds` (machine files) in the same run; the row's prediction is
        the mean of the rounds' (combine "mean", with rounds) or the one on
        `machine`."""
        cmd = self.base + [self.steps_flag, "2", "--predict", ",".join([machine, *rounds])]
        predicted = figures("predicted_ms", run(cmd, self.env), cmd)
        self.on_median, self.on_rounds = predicted[0], predicted[1:]
        self.predicted = prediction(self.on_median, self.on_rounds, combine)

    def measured(self, confidence):
        """(predicted, lo, median, hi) of the launches so far."""
        lo, med, hi = median_interval(self.times, confidence)
        return self.predicted, lo, med, hi

    def spread(self, confidence):
        _, lo, med, hi = self.measured(confidence)
        return 100 * (hi - lo) / med


def rows_record(rows):
    """What --keep_machines keeps of each row beside the machine files
    (rows.json): every launch's median step and the step predicted on each
    round's machine and on the medians', so that another way of measuring
    or combining can be tried on a run afterwards."""
    return [{"name": r.name, "steps_per_launch": r.steps, "launch_ms": r.times,
             "predicted_on_rounds_ms": r.on_rounds, "predicted_on_median_ms": r.on_median}
            for r in rows]


def selected_rows(args):
    """The configurations --only and --quick select, as Rows."""
    launch = os.path.join(args.build, "tools", "mtf-launch")
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
        rows.append(Row(name, base, env, steps_flag))
    return rows


def retry(args, row, machine, limit):
    """A missed row measured again on its own, up to --retries times, each
    on `machine()` (a fresh calibration unless --machine): (whether the last
    try missed, the tries' text)."""
    note, missed = "", True
    for attempt in range(1, args.retries + 1):
        again = Row(row.name, row.base, row.env, row.steps_flag)
        again.steps = row.steps
        fresh = machine()
        for _ in range(args.launches):
            again.launch()
        again.predict(fresh)
        t = again.measured(args.confidence)
        e2, _, _, missed = error_of(t, limit)
        note += (f"; retry {attempt}: {t[2]:.2f} [{t[1]:.2f}, {t[3]:.2f}] vs "
                 f"{t[0]:.2f} ms ({e2:+.1f}%{' miss' if missed else ''})")
        if not missed:
            break
    return missed, note


def spread_over(n, k):
    """k points in 0..n, as evenly spaced as they go (both ends first)."""
    if k <= 1:
        return [0]
    return sorted({round(i * n / (k - 1)) for i in range(k)})


def measure_interleaved(args, rows, calibrate):
    """Every row's launches in passes, with calibration rounds spread among
    them (`calibrate(i)` writes round i and returns its file; None: the
    given machine), rows too wide measured in more passes; returns the
    rounds' files."""
    for row in rows:
        row.size(args)
    rounds = []
    at = spread_over(args.launches, args.calibrations) if calibrate else []
    for p in range(args.launches + 1):
        if p in at:
            rounds.append(calibrate(len(rounds)))
        if p == args.launches:
            break
        for row in rows:
            row.launch()
        print(f"pass {p + 1} of {args.launches} done", file=sys.stderr, flush=True)
    for _ in range(args.reruns):
        wide = [r for r in rows if r.spread(args.confidence) > args.max_spread]
        if not wide:
            break
        for _ in range(args.launches):
            for row in wide:
                row.launch()
    return rounds


def remeasure_slow_rounds(args, rounds, calibrate):
    """Measures again, once, after the last pass, each calibration round that
    read one of the host's rates below --slow_round times the rounds' median
    (a round lasts 20 s, a pass minutes: a slow few seconds weigh on a round
    as they do not on a row's launches; one such round, its elementwise
    rates at 0.6x the others', put a row's mean prediction 15-24% over).
    The first file stays beside as roundN.slow.machine; returns what it
    says of each."""
    said = []
    rates = [machine_rates(r) for r in rounds]
    for i, key, share in slow_rounds(rates, args.slow_round):
        median = rates[i][key] / share
        stem, _ = os.path.splitext(rounds[i])
        os.replace(rounds[i], stem + ".slow.machine")
        rounds[i] = calibrate(i)
        now = machine_rates(rounds[i]).get(key, 0) / median
        said.append(f"calibration round {i + 1} measured again: its {key} was {share:.2f} of the "
                    f"rounds' median, now {now:.2f}")
    return said


def error_of(t, limit):
    """A try's error in percent, its interval (the prediction against the
    top and the bottom of the measured interval) and whether the whole
    interval lies beyond `limit`."""
    predicted, lo, med, hi = t[:4]
    err_lo, err_hi = 100 * (predicted / hi - 1), 100 * (predicted / lo - 1)
    return 100 * (predicted / med - 1), err_lo, err_hi, err_lo > limit or err_hi < -limit


def how_predicted(args):
    if args.machine:
        return "on the given machine"
    if args.combine == "median" or args.calibrations == 1:
        return f"on the machine of the medians of {args.calibrations} rounds among them"
    return f"the mean of the step on each of {args.calibrations} rounds' machines among them"


def report(args, rows, core, limit, steadiness):
    """Prints the table and the summary of `rows`, then `steadiness` (mtf-sim's
    lines on how far the calibration rounds disagree, and on the machine's
    speed as watched); 1 when --max_error is given and a row misses."""
    k = interval_rank(args.launches, args.confidence)
    print(f"\nOpenBLAS core {core}; measured: the median over {args.launches} launches of each "
          f"launch's median step; interval: launches {k} and {args.launches + 1 - k} of "
          f"{args.launches} in order ({100 * coverage(args.launches, k):.0f}% for the median; "
          f"rows with more launches: the same coverage or more); the rows' launches "
          f"interleaved in passes; predicted: {how_predicted(args)}\n")
    # With rounds, also what each round's machine alone predicts: how far
    # the machine's movement between rounds moves the prediction.
    on_rounds = any(r[11] for r in rows)
    print("| configuration | measured ms | interval | predicted ms | error | error interval |" +
          (" predicted on each round |" if on_rounds else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|" if on_rounds else ""))
    for name, med, lo, hi, predicted, err, err_lo, err_hi, miss, n, note, each, _ in rows:
        mark = " **miss**" if miss else (" (passed on a retry)" if note else "")
        again = f" ({n} launches)" if n > args.launches else ""
        print(f"| {name} | {med:.2f} | {lo:.2f}-{hi:.2f}{again} | {predicted:.2f} | {err:+.1f}% | "
              f"{err_lo:+.1f}% to {err_hi:+.1f}%{mark} |" +
              (f" {each[0]:.2f}-{each[1]:.2f} |" if each else " |" if on_rounds else ""))
    errors = sorted(abs(r[5]) for r in rows)
    if errors:
        n = len(errors)
        misses = [r[0] for r in rows if r[8]]
        print(f"\nrows {n}; point error within 10%: {sum(e <= 10 for e in errors)}; misses "
              f"(whole interval beyond {limit:g}%): {len(misses)}; median absolute error "
              f"{median_of(errors):.1f}%; worst {errors[-1]:.1f}%")
        others = sorted(abs(r[12]) for r in rows if r[12] is not None)
        if len(others) == n:
            way = ("on the machine of the rounds' medians" if args.combine == "mean" else
                   "the mean of each round's prediction")
            print(f"predicted {way} instead: point error within 10%: "
                  f"{sum(e <= 10 for e in others)}; median absolute error "
                  f"{median_of(others):.1f}%; worst {others[-1]:.1f}%")
        if steadiness:
            print("\n" + "\n".join(steadiness))
        if args.max_error and misses:
            print(f"sim_validation: beyond {args.max_error:g}% on the whole interval: "
                  f"{', '.join(misses)}", file=sys.stderr)
            return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--machine", default="", help="a machine file (default: calibrate now)")
    ap.add_argument("--combine", choices=("mean", "median"), default="mean",
                    help="a row's prediction: the mean of its step on each round's machine, or "
                         "its step on the machine of the rounds' medians")
    ap.add_argument("--launches", type=int, default=8, help="launches per row")
    ap.add_argument("--calibrations", type=int, default=5,
                    help="calibration rounds, spread from before the first pass to after the "
                         "last")
    ap.add_argument("--launch_seconds", type=float, default=0.3,
                    help="timed steps per launch: enough to last this long (5 to 200)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--confidence", type=float, default=0.9,
                    help="coverage of each row's interval for its median")
    ap.add_argument("--max_spread", type=float, default=15,
                    help="percent: a row whose interval is wider gets more launches")
    ap.add_argument("--reruns", type=int, default=1,
                    help="at most this many times --launches more launches per wide row")
    ap.add_argument("--slow_round", type=float, default=0.75,
                    help="a calibration round that reads one of the host's rates below this "
                         "share of the rounds' median is measured again once, after the last "
                         "pass (0: never; needs 3 rounds or more)")
    ap.add_argument("--max_error", type=float, default=0,
                    help="exit 1 when a row's whole error interval is further away (percent; "
                         "0: report only); the table marks misses at 10%% without it")
    ap.add_argument("--only", default="", help="run the rows whose name has this")
    ap.add_argument("--quick", action="store_true",
                    help="only the rows the test suite checks (one of each kind)")
    ap.add_argument("--keep_machines", default="",
                    help="write the calibration rounds' machine files and their median here, "
                         "and rows.json: each row's launches and predictions")
    ap.add_argument("--watch", type=float, default=20,
                    help="seconds to watch the machine's speed (mtf-sim --watch_speeds, which "
                         "checks the range) before the first pass and after the last (0: not at "
                         "all)")
    ap.add_argument("--retries", type=int, default=0,
                    help="with --max_error: a row that misses is calibrated again (without "
                         "--machine) and measured again on its own, up to this many times; "
                         "the table keeps the first try and says which passed on a retry")
    args = ap.parse_args()
    if args.launches < 3:
        sys.exit("sim_validation: --launches must be at least 3 (an interval needs them)")
    if args.calibrations < 1:
        sys.exit("sim_validation: --calibrations must be at least 1")
    limit = args.max_error or 10

    sim = os.path.join(args.build, "tools", "mtf-sim")
    tmp = tempfile.TemporaryDirectory()
    where = args.keep_machines or tmp.name
    os.makedirs(where, exist_ok=True)

    def write_machine(path, label, *flags):
        """mtf-sim --calibrate PATH FLAGS; prints its summary line. Returns the
        path and mtf-sim's lines on how far the rounds it combined disagree."""
        out = run([sim, "--calibrate", path] + list(flags))
        print(f"{label}: " + out.rstrip().splitlines()[-2], flush=True)
        return path, [line for line in out.splitlines()
                      if line.startswith(("across the ", "this machine's speed moved"))]

    def calibrate(i, rounds=1):
        return write_machine(os.path.join(where, f"round{i}.machine"), f"calibration {i + 1}",
                             "--calibration_rounds", str(rounds))[0]

    def watch(when):
        """mtf-sim --watch_speeds for --watch seconds: its lines, headed `when`."""
        if not args.watch:
            return []
        out = run([sim, "--watch_speeds", f"{args.watch:g}"])
        return [f"the machine's speed {when}, " + out.splitlines()[0]] + out.splitlines()[1:]

    rows = selected_rows(args)
    if not rows:
        sys.exit(f"sim_validation: no configuration matches --only {args.only!r}")

    watched = watch("before the first pass")
    rounds = measure_interleaved(args, rows, None if args.machine else calibrate)
    remeasured = remeasure_slow_rounds(args, rounds, calibrate)
    after = watch("after the last pass")
    watched += ([""] if watched and after else []) + after
    machine, steadiness = args.machine, []
    if rounds:
        machine, steadiness = write_machine(os.path.join(where, "host.machine"),
                                            "calibration (median of the rounds)",
                                            "--from_calibrations", ",".join(rounds))
    if remeasured:
        steadiness = remeasured + [""] + steadiness
    if watched:
        steadiness = steadiness + [""] + watched
    c = re.search(r"^openblas_core (\S+)", rows[0].out, re.M)
    core = c.group(1) if c else ""

    table = []
    for i, row in enumerate(rows):
        row.predict(machine, rounds, args.combine)
        first = row.measured(args.confidence)
        err, err_lo, err_hi, miss = error_of(first, limit)
        note = ""
        if args.max_error and miss and args.retries:
            miss, note = retry(args, row, lambda: machine if args.machine else
                               calibrate(len(rounds) + i, rounds=3), limit)
        predicted, lo, med, hi = first
        n = len(row.times)
        each = (min(row.on_rounds), max(row.on_rounds)) if row.on_rounds else None
        # The other way of combining the rounds, for the summary.
        other = (None if not row.on_rounds else row.on_median if args.combine == "mean" else
                 mean_of(row.on_rounds))
        other_err = None if other is None else 100 * (other / med - 1)
        table.append((row.name, med, lo, hi, predicted, err, err_lo, err_hi, miss, n, note, each,
                      other_err))
        print(f"{row.name}: measured {med:.3f} ms [{lo:.3f}, {hi:.3f}] ({row.steps} steps x "
              f"{n} launches), predicted {predicted:.3f} ms ({err:+.1f}% [{err_lo:+.1f}, "
              f"{err_hi:+.1f}]){' MISS' if miss else ''}{note}"
              f"{f'; on each round {each[0]:.3f} to {each[1]:.3f} ms' if each else ''}", flush=True)

    if args.keep_machines:
        with open(os.path.join(where, "rows.json"), "w") as f:
            json.dump(rows_record(rows), f, indent=1)
    return report(args, table, core, limit, steadiness)


if __name__ == "__main__":
    sys.exit(main())
