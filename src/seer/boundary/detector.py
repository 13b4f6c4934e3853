"""Boundary detectors: from a step-0 profile over the answer window to L*, the kept length.

A detector is a rule over a 1-D profile; the profile comes from a signal (MLP sparsity from
`probe.py`, or the step-0 probability of an end token from the logits). Keeping the rule apart
from the signal lets every signal be compared on the same data.

`SNRRule` is the paper's test (Sec. 3.3), 0-based: for W_i = (s_i, s_i+1, s_i+2) and the
baseline s_(i-1), jump = min(W_i) - s_(i-1) and spread = max(W_i) - min(W_i). The first i in
[1, N - 3] with jump >= tau_jump and spread <= gamma * jump is the boundary (the first padding
position, which holds the end-of-turn token), and L* = i + 1 keeps it. A step at position 0
(nothing to compare with) or in the last two positions (no full window) is not detected: no
boundary means no truncation. `direction="falling"` looks for a drop instead (the test runs
on -s), since in small models the step can go either way.

`ThresholdRule` is for probability-like signals: the first i whose value and the next
`run - 1` values are all >= tau; L* = i + 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch


@dataclass(slots=True)
class BoundaryReport:
    """What the detector saw for one row."""

    length: int | None  # L*: answer positions to keep (None: no boundary, keep the window)
    index: int | None  # i: first position of the plateau
    jump: float | None  # the signal's step at i
    spread: float | None  # the plateau's spread (max - min over the look-ahead window)
    signal: str  # which profile was used ("sparsity@L3", "eos_prob", ...)
    window: int = 0  # the window actually kept after margin, guard floor and buckets
    profile: list[float] = field(default_factory=list)  # the profile over the answer window

    def as_dict(self) -> dict:
        d = asdict(self)
        d["profile"] = [round(v, 4) for v in self.profile]
        return d


@dataclass(slots=True, frozen=True)
class SNRRule:
    """The paper's jump-to-plateau test."""

    tau_jump: float = 0.03  # minimum step
    gamma: float = 0.6  # plateau spread allowed, as a fraction of the step
    lookahead: int = 3  # |W_i|
    direction: str = "rising"  # "rising" (the paper) or "falling"

    def __post_init__(self) -> None:
        if self.direction not in ("rising", "falling"):
            from seer.errors import SeerError

            raise SeerError(f"direction must be 'rising' or 'falling', got {self.direction!r}")

    def find(self, s: torch.Tensor) -> tuple[int, float, float] | None:
        """s: (N,) -> (i, jump, spread) of the first boundary, or None."""
        index, jump, spread = self.find_all(s[None])
        if int(index[0]) < 0:
            return None
        return int(index[0]), float(jump[0]), float(spread[0])

    def find_all(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """s: (R, N) profiles -> per row (i or -1, jump, spread); vectorised over rows."""
        s = s.double() if self.direction == "rising" else -s.double()
        r, n, w = s.shape[0], s.shape[1], self.lookahead
        if n < w + 1:
            none = torch.full((r,), -1, dtype=torch.long)
            return none, torch.zeros(r, dtype=s.dtype), torch.zeros(r, dtype=s.dtype)
        win = s.unfold(1, w, 1)[:, 1:]  # W_i for i = 1 .. n - w: (R, n - w, w)
        lo, hi = win.min(dim=2).values, win.max(dim=2).values
        jump = lo - s[:, : n - w]
        spread = hi - lo
        ok = (jump >= self.tau_jump) & (spread <= self.gamma * jump)
        first = ok.int().argmax(dim=1)  # first True (0 if none)
        rows = torch.arange(r)
        index = torch.where(ok.any(dim=1), first + 1, -1)
        return index, jump[rows, first], spread[rows, first]


@dataclass(slots=True, frozen=True)
class ThresholdRule:
    """First run of `run` values >= tau."""

    tau: float = 0.5
    run: int = 3

    def find_all(self, s: torch.Tensor) -> torch.Tensor:
        """s: (R, N) -> first index of a run per row, or -1; vectorised over rows."""
        if s.shape[1] < self.run:
            return torch.full((s.shape[0],), -1, dtype=torch.long)
        above = (s >= self.tau).unfold(1, self.run, 1).all(dim=2)
        return torch.where(above.any(dim=1), above.int().argmax(dim=1), -1)

    def find(self, s: torch.Tensor) -> tuple[int, float, float] | None:
        n = s.shape[0]
        if n < self.run:
            return None
        above = (s >= self.tau).unfold(0, self.run, 1).all(dim=1)
        hits = torch.nonzero(above).flatten()
        if hits.numel() == 0:
            return None
        i = int(hits[0])
        win = s[i : i + self.run].double()
        prev = float(s[i - 1]) if i > 0 else 0.0
        return i, float(win.min()) - prev, float(win.max() - win.min())


def detect(profile: torch.Tensor, rule, signal: str) -> BoundaryReport:
    """Apply `rule` to one row's profile (W,)."""
    found = rule.find(profile)
    values = profile.float().tolist()
    if found is None:
        return BoundaryReport(None, None, None, None, signal, profile=values)
    i, jump, spread = found
    return BoundaryReport(i + 1, i, jump, spread, signal, profile=values)


def end_probability(logits: torch.Tensor, enders: tuple[int, ...]) -> torch.Tensor:
    """Step-0 probability that each window position holds an end token. (B, W, V) -> (B, W)."""
    prob = logits.float().softmax(dim=-1)
    return prob[..., list(enders)].sum(dim=-1)


@dataclass(slots=True, frozen=True)
class ChangePointRule:
    """The single most significant step in the profile (a two-sample t statistic).

    For every split i, t(i) = (mean(s[i:]) - mean(s[:i])) / (sd * sqrt(1/i + 1/(N - i))) with the
    pooled within-segment sd; the split with the largest t is the boundary if t >= z. Unlike the
    SNR rule it needs no flat plateau, so a step followed by a ramp still counts.
    """

    z: float = 4.0  # minimum t statistic
    direction: str = "rising"  # rising | falling

    def find_all(self, s: torch.Tensor) -> torch.Tensor:
        """s: (R, N) -> boundary index per row (first padding position), or -1."""
        s = s.double() if self.direction == "rising" else -s.double()
        n = s.shape[1]
        if n < 3:
            return torch.full((s.shape[0],), -1, dtype=torch.long)
        i = torch.arange(1, n, dtype=s.dtype)  # left sizes 1 .. n - 1
        c1, c2 = s.cumsum(1)[:, :-1], (s * s).cumsum(1)[:, :-1]
        t1, t2 = s.sum(1, keepdim=True), (s * s).sum(1, keepdim=True)
        m_left, m_right = c1 / i, (t1 - c1) / (n - i)
        ss = (c2 - c1 * m_left) + ((t2 - c2) - (t1 - c1) * m_right)  # within-segment squares
        sd = (ss.clamp(min=1e-12) / max(n - 2, 1)).sqrt()
        t = (m_right - m_left) / (sd * (1 / i + 1 / (n - i)).sqrt())
        best = t.argmax(dim=1)
        ok = t.gather(1, best[:, None]).squeeze(1) >= self.z
        return torch.where(ok, best + 1, -1)

    def find(self, s: torch.Tensor) -> tuple[int, float, float] | None:
        i = int(self.find_all(s[None])[0])
        if i < 0:
            return None
        return i, float(s[i:].float().mean() - s[:i].float().mean()), 0.0
