"""The order statistics bench/sim_validation.py judges its rows by: a row's
interval must hold its median as often as it says, and a miss must need the
whole error interval beyond the limit."""
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


def _machine(tmp_path, name, **figures):
    path = tmp_path / name
    path.write_text("# host: written by mtf-sim --calibrate\nname = host\n" +
                    "".join(f"{k} = {v}\n" for k, v in figures.items()))
    return str(path)


def test_steadiness_gives_each_figures_range_over_the_rounds(tmp_path):
    steady = dict(gemm_flops=1.0e11, gemm_flops_all_cpus=2.0e11, gemm_bfloat16_speedup=4,
                  busy_in_program=1.1)
    rounds = [_machine(tmp_path, "a", **steady),
              _machine(tmp_path, "b", **dict(steady, gemm_flops=1.05e11))]
    text, moved = sv.steadiness(rounds, 10)
    assert not moved
    assert "matrix products on one thread 100 to 105 GFLOP/s (5%)" in text
    assert "bfloat16 products on one thread 400 to 420 GFLOP/s (5%)" in text
    assert "(busy_in_program) 1.1 to 1.1 (0%)" in text


def test_steadiness_says_when_a_figure_moved_beyond_the_limit(tmp_path):
    base = dict(gemm_flops=1.0e11, gemm_flops_all_cpus=2.0e11, gemm_bfloat16_speedup=4,
                busy_in_program=1.0)
    rounds = [_machine(tmp_path, "a", **base),
              _machine(tmp_path, "b", **dict(base, busy_in_program=1.4))]
    text, moved = sv.steadiness(rounds, 10)
    assert moved and "1 to 1.4 (40%)" in text
    # A figure a round lacks (an older machine file) is left out, not an error.
    older = [_machine(tmp_path, "c", gemm_flops=1e11), _machine(tmp_path, "d", gemm_flops=1e11)]
    text, moved = sv.steadiness(older, 10)
    assert text == "matrix products on one thread 100 to 100 GFLOP/s (0%)" and not moved
