"""seerbench.stats: bootstrap intervals (requests, requests and repeats), the paired test,
the Pareto front."""

from __future__ import annotations

import pytest

from seerbench import stats


def test_bootstrap_interval_of_a_mean_and_of_a_paired_difference():
    lo, hi = stats.bootstrap([True] * 6 + [False] * 4)
    assert 0.2 <= lo < 0.6 < hi <= 0.95
    assert stats.bootstrap([1.0] * 5) == (1.0, 1.0)
    assert stats.bootstrap([0.3, 0.9, 0.5], seed=4) == stats.bootstrap([0.3, 0.9, 0.5], seed=4)
    xs = [1.0] * 30 + [0.0] * 10
    same = stats.bootstrap(xs, ys=xs)
    assert same == (0.0, 0.0)  # paired: the shared spread cancels
    dlo, dhi = stats.bootstrap(xs, ys=[0.0] * 40)
    assert 0.5 < dlo <= 0.75 <= dhi < 0.95
    with pytest.raises(ValueError, match="differ in size"):
        stats.bootstrap([1.0], ys=[1.0, 0.0])


def test_ratio_interval_covers_repeats_as_well_as_requests():
    ref = [[2.0, 2.0, 2.0]] * 20
    steady = [[1.0, 1.0, 1.0]] * 20
    assert stats.bootstrap_ratio(ref, steady) == (2.0, 2.0)
    noisy = [[0.5, 1.0, 2.0]] * 20  # the same requests, noisy repeats: a wider interval
    lo, hi = stats.bootstrap_ratio(ref, noisy)
    assert lo < 2.0 < hi
    # one time per request: the requests' spread alone
    lo1, hi1 = stats.bootstrap_ratio([2.0, 4.0, 6.0, 8.0], [1.0, 2.0, 3.0, 4.0])
    assert lo1 == hi1 == 2.0
    with pytest.raises(ValueError, match="shape"):
        stats.bootstrap_ratio([[1.0, 2.0]], [[1.0]])


def test_paired_test_is_exact_for_few_pairs_and_sampled_for_many():
    assert stats.paired_test([1, 0, 1], [1, 0, 1]) == 1.0
    # 5 discordant pairs all one way: McNemar's exact two-sided p = 2 / 2**5
    assert stats.paired_test([1] * 5 + [0] * 5, [0] * 5 + [0] * 5) == pytest.approx(2 / 32)
    # balanced discordance: no evidence
    assert stats.paired_test([1, 0] * 4, [0, 1] * 4) == 1.0
    many = stats.paired_test([1.0] * 40 + [0.0] * 60, [0.0] * 40 + [0.0] * 60)
    assert many < 0.001
    tie = stats.paired_test([1.0] * 20 + [0.0] * 20, [0.0] * 20 + [1.0] * 20)
    assert tie > 0.5


def test_pareto_front():
    pts = [(10.0, 0.5, "a"), (5.0, 0.5, "b"), (20.0, 0.6, "c"), (6.0, 0.4, "d")]
    assert stats.pareto(pts) == {"b", "c"}
    assert stats.pareto([(1.0, 0.5, "x"), (1.0, 0.5, "y")]) == {"x", "y"}  # ties stay


def test_median_and_spread():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0 and stats.median([1.0, 2.0]) == 1.5
    s = stats.spread([4.0, 1.0, 3.0, 2.0])
    assert (s["min"], s["max"], s["median"]) == (1.0, 4.0, 2.5) and s["q1"] <= s["q3"]
    with pytest.raises(ValueError):
        stats.median([])
