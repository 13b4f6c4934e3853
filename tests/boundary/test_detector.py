"""The SNR jump-to-plateau rule and the threshold rule on hand-made profiles."""

from __future__ import annotations

import pytest
import torch

from seer.boundary.detector import SNRRule, ThresholdRule, detect
from seer.errors import SeerError


def step(n: int, at: int, low: float = 0.1, high: float = 0.3) -> torch.Tensor:
    s = torch.full((n,), low)
    s[at:] = high
    return s


def test_clean_step_is_found_at_its_first_plateau_position():
    rep = detect(step(20, 7), SNRRule(), "sparsity")
    assert (rep.index, rep.length) == (7, 8)
    assert rep.jump == pytest.approx(0.2)
    assert rep.spread == pytest.approx(0.0)


def test_noisy_ramp_has_no_boundary():
    # rises 0.02 per position: every jump is below tau_jump
    ramp = torch.linspace(0.0, 0.38, 20)
    assert SNRRule().find(ramp) is None


def test_spiky_plateau_fails_the_snr_check():
    s = step(20, 7)
    s[8] = 0.5  # at i = 7: jump 0.2, spread 0.2 > 0.6 * 0.2; later windows have no jump
    assert SNRRule(gamma=0.6).find(s) is None
    assert SNRRule(gamma=1.5).find(s)[0] == 7


def test_flat_profile_and_step_at_position_zero_mean_no_boundary():
    assert SNRRule().find(torch.full((16,), 0.3)) is None
    assert SNRRule().find(step(16, 0)) is None  # nothing before the step to compare with


def test_step_at_the_first_comparable_position():
    assert SNRRule().find(step(16, 1))[0] == 1


def test_window_at_the_edge():
    n = 16
    assert SNRRule().find(step(n, n - 3))[0] == n - 3  # last full look-ahead window
    assert SNRRule().find(step(n, n - 2)) is None  # window would run past the end
    assert SNRRule().find(step(n, n - 1)) is None
    assert SNRRule().find(torch.tensor([0.1, 0.3, 0.3])) is None  # shorter than window + 1


def test_first_of_two_steps_wins_and_small_steps_are_ignored():
    s = step(30, 5, 0.1, 0.12)  # 0.02 < tau
    s[15:] = 0.3
    assert SNRRule().find(s)[0] == 15
    assert SNRRule(tau_jump=0.01).find(s)[0] == 5


def test_falling_direction_finds_a_drop_only_when_asked():
    s = step(20, 9, low=0.4, high=0.1)
    assert SNRRule().find(s) is None
    assert SNRRule(direction="falling").find(s)[0] == 9
    with pytest.raises(SeerError):
        SNRRule(direction="sideways")


def test_threshold_rule_needs_a_run():
    p = torch.tensor([0.0, 0.9, 0.1, 0.0, 0.8, 0.9, 0.95, 0.99])
    assert ThresholdRule(0.5, 1).find(p)[0] == 1
    assert ThresholdRule(0.5, 3).find(p)[0] == 4
    assert ThresholdRule(0.5, 3).find(torch.zeros(8)) is None
    rep = detect(p, ThresholdRule(0.5, 3), "eos_prob")
    assert rep.length == 5 and rep.signal == "eos_prob"


def test_changepoint_rule_finds_a_step_followed_by_a_ramp():
    from seer.boundary.detector import ChangePointRule

    g = torch.Generator().manual_seed(0)
    s = torch.full((40,), 0.30) + 0.01 * torch.randn(40, generator=g)
    s[12:] = 0.40 + torch.linspace(0, 0.1, 28)  # step at 12, then a ramp: no flat plateau
    assert ChangePointRule(z=4.0).find(s)[0] == 12
    flat = torch.full((40,), 0.3) + 0.01 * torch.randn(40, generator=g)
    assert ChangePointRule(z=4.0).find(flat) is None
    assert ChangePointRule(z=4.0, direction="falling").find(s) is None
    rows = torch.stack([s, flat])
    assert ChangePointRule(z=4.0).find_all(rows).tolist() == [12, -1]
