"""The order statistics bench/sim_validation.py judges its rows by: a row's
interval must hold its median as often as it says, and a miss must need the
whole error interval beyond the limit; and how it combines the calibration
rounds' predictions."""
import importlib.util
import os
import random

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "sim_validation.py")
_spec = importlib.util.spec_from_file_location("sim_validation", _PATH)
sv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sv)


def test_interval_rank_keeps_the_coverage_it_claims():
    for n in (5, 8, 16, 24):
        k = sv.interval_rank(n, 0.9)
        assert sv.coverage(n, k) >= 0.9 or k == 1
        assert 2 * (k + 1) > n or sv.coverage(n, k + 1) < 0.9  # the widest rank that holds


def test_median_interval_covers_as_often_as_it_says():
    rng = random.Random(7)
    for n in (8, 16):
        claimed = sv.coverage(n, sv.interval_rank(n, 0.9))
        trials, covered = 4000, 0
        for _ in range(trials):
            lo, med, hi = sv.median_interval([rng.expovariate(1.0) for _ in range(n)], 0.9)
            assert lo <= med <= hi
            covered += lo <= 0.6931471805599453 <= hi  # the median of Exp(1): ln 2
        assert covered / trials >= claimed - 0.02


def test_a_miss_needs_the_whole_interval_beyond_the_limit():
    # (predicted, lo, measured, hi): errors against the median, the top and the bottom.
    err, err_lo, err_hi, miss = sv.error_of((110.0, 95.0, 100.0, 105.0), 10)
    assert round(err, 6) == 10.0 and not miss  # against the top, 110/105: +4.8%
    err, err_lo, err_hi, miss = sv.error_of((125.0, 98.0, 100.0, 110.0), 10)
    assert miss and abs(err_lo - 100 * (125 / 110 - 1)) < 1e-9
    err, err_lo, err_hi, miss = sv.error_of((80.0, 95.0, 100.0, 120.0), 10)
    assert miss and abs(err_hi - 100 * (80 / 95 - 1)) < 1e-9
    assert not sv.error_of((91.0, 90.0, 100.0, 120.0), 10)[3]


def test_figures_reads_every_number_of_its_line():
    # step_time --predict A,B,C prints one predicted step per machine file.
    out = "median_ms 3.000\npredicted_ms 4.500 5.250 6.000\n"
    assert sv.figures("predicted_ms", out, []) == [4.5, 5.25, 6.0]
    assert sv.figure("predicted_ms", out, []) == 4.5
    assert sv.figure("median_ms", out, []) == 3.0


def test_a_prediction_is_the_mean_of_the_rounds_unless_asked_otherwise():
    # Three rounds at the fast level and two at the slow one (1.4x): the
    # medians' machine is fast, the mean weighs both levels by their rounds.
    rounds = [100.0, 100.0, 140.0, 100.0, 140.0]
    assert sv.prediction(100.0, rounds, "mean") == 116.0
    assert sv.prediction(100.0, rounds, "median") == 100.0
    assert sv.prediction(120.0, [], "mean") == 120.0  # a given machine: no rounds
    assert sv.median_of([3.0, 1.0, 2.0, 10.0]) == 2.5


def test_kept_rows_hold_every_launch_and_prediction():
    row = sv.Row("MLP, 1 core", ["step_time"], None, "--steps")
    row.steps, row.times = 40, [4.5, 4.4, 4.7]
    row.on_median, row.on_rounds = 4.6, [4.2, 4.9]
    assert sv.rows_record([row]) == [{
        "name": "MLP, 1 core", "steps_per_launch": 40, "launch_ms": [4.5, 4.4, 4.7],
        "predicted_on_rounds_ms": [4.2, 4.9], "predicted_on_median_ms": 4.6}]


def test_a_round_that_caught_a_slow_moment_is_found():
    fast = {"core_flops": 17e9, "cache_bandwidth": 70e9, "chip_memory_bandwidth": 43e9,
            "gemm_flops": 95e9, "gemm_flops_all_cpus": 190e9}
    rounds = [dict(fast), dict(fast, chip_memory_bandwidth=24e9), dict(fast, core_flops=15e9),
              dict(fast), dict(fast, core_flops=10e9, cache_bandwidth=40e9)]
    slow = sv.slow_rounds(rounds, 0.75)
    # Round 1's memory rate at 0.56 of the median, round 4's arithmetic at
    # 0.59 (its first slow rate in ROUND_RATES order); round 2's 0.88 is not.
    assert [(i, key) for i, key, _ in slow] == [(1, "chip_memory_bandwidth"), (4, "core_flops")]
    assert abs(slow[1][2] - 10 / 17) < 1e-9
    assert sv.slow_rounds(rounds, 0) == []  # never
    assert sv.slow_rounds(rounds[:2], 0.75) == []  # two rounds: no median to stand against
    # A factor on time is slow when high: 1.46 against a median of 1.02.
    busy = [dict(fast, busy_in_program=b) for b in (1.0, 1.02, 1.46, 1.3, 1.05)]
    slow = sv.slow_rounds(busy, 0.75)
    assert [(i, key) for i, key, _ in slow] == [(2, "busy_in_program")]
    assert abs(slow[0][2] - 1.46 / 1.05) < 1e-9


def test_machine_rates_reads_the_rates_a_machine_file_has(tmp_path):
    path = tmp_path / "round0.machine"
    path.write_text("name = host\ncore_flops = 1.4e+10\ngemm_flops = 9.5e+10\n"
                    "gemm_flops_busy = 3\nbusy_in_program = 1.1\n")
    assert sv.machine_rates(str(path)) == {"core_flops": 1.4e10, "gemm_flops": 9.5e10,
                                           "busy_in_program": 1.1}


def test_a_slow_round_is_measured_again_and_its_first_file_kept(tmp_path):
    where = tmp_path / "kept.machine"  # a directory whose name has the suffix too
    where.mkdir()
    rounds = []
    for i, rate in enumerate([14e9, 14e9, 7e9, 15e9]):
        path = where / f"round{i}.machine"
        path.write_text(f"core_flops = {rate}\n")
        rounds.append(str(path))

    def calibrate(i):
        path = where / f"round{i}.machine"
        path.write_text("core_flops = 1.4e10\n")
        return str(path)

    args = type("Args", (), {"slow_round": 0.75})()
    said = sv.remeasure_slow_rounds(args, rounds, calibrate)
    assert said == ["calibration round 3 measured again: its core_flops was 0.50 of the rounds' "
                    "median, now 1.00"]
    assert (where / "round2.slow.machine").read_text() == "core_flops = 7000000000.0\n"
    assert sv.machine_rates(rounds[2]) == {"core_flops": 1.4e10}
