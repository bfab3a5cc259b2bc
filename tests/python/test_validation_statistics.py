"""The order statistics bench/sim_validation.py judges its rows by: the
intervals must hold the median (or quantile) as often as they say, and the
miss rule must look at the whole interval."""
import importlib.util
import math
import os
import random

import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "sim_validation.py")
_spec = importlib.util.spec_from_file_location("sim_validation", _PATH)
sv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sv)


def test_quantile_is_the_ceil_q_n_th_lowest():
    xs = [float(x) for x in range(16, 0, -1)]
    lo, at, hi = sv.quantile_interval(xs, 0.25, 0.9)
    assert at == 4.0
    assert lo <= at <= hi
    assert sv.quantile_interval([5.0, 1.0, 3.0, 2.0, 4.0], 0.25, 0.9)[1] == 2.0


def test_quantile_interval_takes_the_whole_sample_when_confidence_is_out_of_reach():
    # Eight draws: P(no draw below the 0.25-quantile) = 0.75^8 = 0.100, so
    # no pair of order statistics covers it 90% of the time.
    assert sv.quantile_interval(list(range(1, 9)), 0.25, 0.9) == (1, 2, 8)


@pytest.mark.parametrize("n,q", [(16, 0.25), (24, 0.25), (16, 0.5), (40, 0.1)])
def test_quantile_interval_covers_as_often_as_it_says(n, q):
    rng = random.Random(n * 100 + int(q * 100))
    true = -math.log(1 - q)  # the q-quantile of Exp(1)
    trials, covered = 4000, 0
    for _ in range(trials):
        lo, _, hi = sv.quantile_interval([rng.expovariate(1.0) for _ in range(n)], q, 0.9)
        covered += lo <= true <= hi
    assert covered / trials >= 0.88


def test_median_interval_covers_as_often_as_it_says():
    rng = random.Random(7)
    trials, covered = 4000, 0
    for _ in range(trials):
        lo, _, hi = sv.median_interval([rng.gauss(10, 2) for _ in range(8)], 0.9)
        covered += lo <= 10 <= hi
    assert covered / trials >= 0.9


def test_a_miss_needs_the_whole_interval_beyond_the_limit():
    # predicted, lo, measured, hi
    near = sv.Comparison((110.0, 95.0, 100.0, 105.0), 10)
    assert near.err == pytest.approx(10.0)
    assert not near.miss  # against the top, 110/105: +4.8%
    far = sv.Comparison((125.0, 98.0, 100.0, 110.0), 10)
    assert far.miss and far.err_lo == pytest.approx(100 * (125 / 110 - 1))
    slow = sv.Comparison((80.0, 95.0, 100.0, 120.0), 10)
    assert slow.miss and slow.err_hi == pytest.approx(100 * (80 / 95 - 1))
