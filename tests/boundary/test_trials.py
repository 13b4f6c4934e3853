"""Seer settings run with the guard: the accuracy rule, the choice, the fallback window, and the
one line on rows without a boundary."""

from __future__ import annotations

import numpy as np
import pytest

from seer.boundary.detector import BoundaryReport, summary
from seer.calibrate import sweep
from seer.calibrate import trials as tr


def _trial(name="t", setting=None, n=300, cost=10.0, lower=0.0, worse=0, changed=0):
    setting = {"signal": "eos_prob"} if setting is None else setting
    return tr.Trial(
        name,
        setting,
        n,
        cost,
        cost / 100,
        10.0,
        16.0,
        16.0,
        0,
        0,
        0.0,
        changed,
        worse,
        0,
        0.5,
        0.0,
        lower,
    )


def test_the_bootstrap_bound_sits_below_the_mean_and_tightens_with_more_rows():
    rng = np.random.default_rng(1)
    small, big = rng.choice([-100.0, 0.0], size=50, p=[0.1, 0.9]), None
    big = np.tile(small, 20)
    lo_small, lo_big = tr.bootstrap_lower(small), tr.bootstrap_lower(big)
    assert lo_small < small.mean() and lo_big < big.mean()
    assert lo_small < lo_big  # 20x the rows, a tighter bound
    assert tr.bootstrap_lower(np.zeros(40)) == 0.0


def test_the_margin_rule_uses_the_bound_on_many_rows_and_counts_on_few():
    assert tr.passes(_trial(lower=-1.9), 2.0) and not tr.passes(_trial(lower=-2.1), 2.0)
    assert tr.passes(_trial(n=40, worse=1, lower=-9.0), 2.0)  # few rows: at most 1 of 40 worse
    assert not tr.passes(_trial(n=40, worse=2), 2.0)
    assert tr.passes(_trial(n=99, worse=1), 2.0) and not tr.passes(_trial(n=99, worse=2), 2.0)


def test_pick_takes_the_cheapest_setting_within_the_margin_never_the_oracle():
    cheap_bad = _trial("a", cost=5.0, lower=-4.0)
    ok = _trial("b", cost=8.0, lower=-1.0)
    dear = _trial("c", cost=20.0, lower=0.0)
    oracle = _trial("oracle", setting={}, cost=1.0, lower=0.0)
    assert tr.pick([cheap_bad, ok, dear, oracle]) is ok
    assert ok.passes and not cheap_bad.passes
    assert tr.pick([cheap_bad]) is None


class _S:
    def __init__(self, true_len):
        self.true_len = true_len


def test_the_fallback_window_holds_95_percent_of_the_answers():
    samples = [_S(n) for n in [3] * 95 + [60] * 5]
    assert tr.fallback_window(samples, 128, 8) == 8  # 95 % end by position 4
    assert tr.fallback_window([_S(200)], 128, 8) == 128  # never past the window
    assert tr.oracle_windows([_S(3), _S(20)], 128, 8) == [8, 24]


def test_shortlist_takes_every_family_at_each_cut_share_with_the_fallback():
    def sc(setting, over, window):
        return sweep.Score(setting, 0.0, over, 1.0, window)

    scores = [
        sc({"signal": "eos_prob", "eos_tau": 0.9}, 0.02, 20.0),
        sc({"signal": "eos_prob", "eos_tau": 0.2}, 0.0, 40.0),
        sc({"signal": "sparsity", "layer": 1}, 0.0, 100.0),
        sc({"signal": "sparsity", "rule": "changepoint", "z": 4.0}, 0.1, 30.0),
    ]
    picks = sweep.shortlist(scores, 48)
    names = [n for n, _ in picks]
    assert names.count("end probability") == 2  # tau 0.2 (no cut) and 0.9 (cuts 2 %)
    assert all(s["fallback"] == 48 for _, s in picks)
    assert "sparsity, SNR rule" in names and "sparsity, change point" in names
    strict = sweep.shortlist(scores, 48, max_over=0.0)  # the user's constraint: no cut at all
    assert [s["eos_tau"] for n, s in strict if n == "end probability"] == [0.2]
    assert not [n for n, s in strict if n == "sparsity, change point"]  # it cuts 10 %


def test_static_scores_count_the_fallback_window():
    samples = [_S(3), _S(40)]
    sc = sweep.score({"fallback": 16}, [None, None], samples, 128, 8)
    assert sc.mean_window == 16 and sc.cut == 1  # the 40-token answer reaches the fallback


def _rep(length, window, fallback=False):
    return BoundaryReport(length, None, None, None, "eos_prob", window, fallback)


def test_one_line_for_rows_without_a_boundary():
    assert summary([_rep(4, 8), None]) is None
    line = summary([_rep(4, 8), _rep(None, 48, True), _rep(None, 48, True)])
    assert (
        line.startswith("Seer found no boundary in 2 of 3 row(s)") and "fallback window (48" in line
    )
    line = summary([_rep(None, 128)])
    assert "1 kept the full window" in line and "seer calibrate" in line


@pytest.mark.parametrize("margin", [0.5, 2.0])
def test_passes_is_what_pick_marks(margin):
    t = _trial(lower=-1.0)
    tr.pick([t], margin)
    assert t.passes == (margin >= 1.0)


def test_a_setting_stops_once_it_cannot_pass():
    # fewer than 100 requests: at most max(1, 2 % of n) answers made worse
    assert not tr.cannot_pass([0.0, -1.0], 50, 2.0)
    assert tr.cannot_pass([0.0, -1.0, -1.0], 50, 2.0)  # 2 worse of 50 already: no way back
    # 100 or more: the bound stays below the margin even if every other answer is unchanged
    assert tr.cannot_pass([-1.0] * 40, 200, 2.0)
    assert not tr.cannot_pass([0.0] * 39 + [-1.0], 200, 2.0)


def test_a_stopped_trial_never_passes():
    t = tr.Trial(
        "x",
        {"signal": "eos_prob"},
        3,
        1.0,
        0.1,
        3.0,
        8.0,
        8.0,
        0,
        0,
        0.0,
        0,
        0,
        0,
        None,
        0.0,
        0.0,
        stopped=True,
    )
    assert tr.pick([t]) is None and not t.passes
