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
`run - 1` values are all >= tau; L* = i + 1. `ChangePointRule` takes the most significant single
step (a t statistic) and needs no flat plateau.

Every rule is vectorised over rows and runs on the host in numpy (`Rule.locate`): a profile is
W numbers, so one device-to-host copy and a few numpy calls cost microseconds, where a chain of
small torch kernels costs a fraction of a millisecond (profiled: issue 12, item 4).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from seer.errors import SeerError


@dataclass(slots=True)
class BoundaryReport:
    """What the detector saw for one row."""

    length: int | None  # L*: answer positions to keep (None: no boundary, keep the window)
    index: int | None  # i: first position of the plateau
    jump: float | None  # the signal's step at i
    spread: float | None  # the plateau's spread (max - min over the look-ahead window)
    signal: str  # which profile was used ("sparsity@L3", "eos_prob", ...)
    window: int = 0  # the window actually kept after margin, guard floor and buckets
    fallback: bool = False  # no boundary: the calibrated fallback window was kept instead
    profile: list[float] = field(default_factory=list)  # the profile over the answer window

    def as_dict(self) -> dict:
        d = asdict(self)
        d["profile"] = [round(v, 4) for v in self.profile]
        return d

    def __repr__(self) -> str:  # the profile is summarised: printing a report shows no 64 floats
        found = f"L*={self.length}"
        if self.length is None:
            found = "no boundary, fallback window" if self.fallback else "no boundary"
        parts = [found, f"window={self.window}", f"signal={self.signal!r}"]
        if self.jump is not None:
            parts.append(f"jump={self.jump:.3g}")
        if self.spread is not None:
            parts.append(f"spread={self.spread:.3g}")
        parts.append(f"profile=<{len(self.profile)} values>")
        return f"BoundaryReport({', '.join(parts)})"


def _rows(s) -> np.ndarray:
    """A profile (N,) or profiles (R, N), torch or numpy, as float64 (R, N) on the host."""
    if isinstance(s, torch.Tensor):
        s = s.detach().to("cpu", torch.float64).numpy()
    s = np.asarray(s, dtype=np.float64)
    return s[None] if s.ndim == 1 else s


def _window_min_max(s: np.ndarray, start: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of s[:, i : i + w] for every i >= start with a full window: (R, N - w + 1 -
    start) each (w shifted views; no strided copy)."""
    m = s.shape[1] - w + 1 - start
    views = [s[:, start + k : start + k + m] for k in range(w)]
    return np.minimum.reduce(views), np.maximum.reduce(views)


def _first(ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ok: (R, M) bool -> (first True per row or 0, whether there is one)."""
    return ok.argmax(axis=1), np.asarray(ok.any(axis=1))


class Rule:
    """A boundary rule over profiles; subclasses implement `locate`.

    `locate(s)`: s (R, N) -> per row (i or -1, jump, spread) as numpy arrays, where i is the
    first position of the padding (L* = i + 1 keeps it). Rules run on the host in numpy: a
    profile is a handful of numbers, and one transfer beats a chain of small device kernels."""

    __slots__ = ()

    def locate(self, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def find_all(self, s) -> np.ndarray:
        """s: (R, N) -> boundary index per row, or -1."""
        return self.locate(s)[0]

    def find(self, s) -> tuple[int, float, float] | None:
        """s: (N,) -> (i, jump, spread) of the boundary, or None."""
        index, jump, spread = self.locate(_rows(s))
        if index[0] < 0:
            return None
        return int(index[0]), float(jump[0]), float(spread[0])


@dataclass(slots=True, frozen=True)
class SNRRule(Rule):
    """The paper's jump-to-plateau test."""

    tau_jump: float = 0.03  # minimum step
    gamma: float = 0.6  # plateau spread allowed, as a fraction of the step
    lookahead: int = 3  # |W_i|
    direction: str = "rising"  # "rising" (the paper) or "falling"

    def __post_init__(self) -> None:
        if self.direction not in ("rising", "falling"):
            raise SeerError(f"direction must be 'rising' or 'falling', got {self.direction!r}")

    def locate(self, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = _rows(s) if self.direction == "rising" else -_rows(s)
        r, n, w = s.shape[0], s.shape[1], self.lookahead
        if n < w + 1:
            return np.full(r, -1), np.zeros(r), np.zeros(r)
        lo, hi = _window_min_max(s, 1, w)  # over W_i for i = 1 .. n - w: (R, n - w)
        jump = lo - s[:, : n - w]
        spread = hi - lo
        first, found = _first((jump >= self.tau_jump) & (spread <= self.gamma * jump))
        rows = np.arange(r)
        return np.where(found, first + 1, -1), jump[rows, first], spread[rows, first]


@dataclass(slots=True, frozen=True)
class ThresholdRule(Rule):
    """First run of `run` values >= tau (for probability-like signals); jump = the run's minimum
    minus the value before it, spread = the run's max - min."""

    tau: float = 0.5
    run: int = 3

    def locate(self, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = _rows(s)
        r = s.shape[0]
        if s.shape[1] < self.run:
            return np.full(r, -1), np.zeros(r), np.zeros(r)
        lo, hi = _window_min_max(s, 0, self.run)  # over each run of `run` values
        first, found = _first(lo >= self.tau)
        rows = np.arange(r)
        prev = np.where(first > 0, s[rows, np.maximum(first - 1, 0)], 0.0)
        lo, hi = lo[rows, first], hi[rows, first]
        return np.where(found, first, -1), lo - prev, hi - lo


@dataclass(slots=True, frozen=True)
class ChangePointRule(Rule):
    """The single most significant step in the profile (a two-sample t statistic).

    For every split i, t(i) = (mean(s[i:]) - mean(s[:i])) / (sd * sqrt(1/i + 1/(N - i))) with the
    pooled within-segment sd; the split with the largest t is the boundary if t >= z. Unlike the
    SNR rule it needs no flat plateau, so a step followed by a ramp still counts. jump = the
    difference of the two means (negative for a falling step), spread = 0.
    """

    z: float = 4.0  # minimum t statistic
    direction: str = "rising"  # rising | falling

    def locate(self, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raw = _rows(s)
        s = raw if self.direction == "rising" else -raw
        r, n = s.shape
        if n < 3:
            return np.full(r, -1), np.zeros(r), np.zeros(r)
        i = np.arange(1, n, dtype=np.float64)  # left sizes 1 .. n - 1
        c1, c2 = s.cumsum(1)[:, :-1], (s * s).cumsum(1)[:, :-1]
        t1, t2 = s.sum(1, keepdims=True), (s * s).sum(1, keepdims=True)
        m_left, m_right = c1 / i, (t1 - c1) / (n - i)
        ss = (c2 - c1 * m_left) + ((t2 - c2) - (t1 - c1) * m_right)  # within-segment squares
        sd = np.sqrt(np.maximum(ss, 1e-12) / max(n - 2, 1))
        t = (m_right - m_left) / (sd * np.sqrt(1 / i + 1 / (n - i)))
        best = t.argmax(axis=1)
        rows = np.arange(r)
        ok = t[rows, best] >= self.z
        sign = 1.0 if self.direction == "rising" else -1.0
        jump = sign * (m_right[rows, best] - m_left[rows, best])  # in the raw signal's units
        return np.where(ok, best + 1, -1), np.where(ok, jump, 0.0), np.zeros(r)


def detect(profile, rule: Rule, signal: str) -> BoundaryReport:
    """Apply `rule` to one row's profile (W,)."""
    return detect_rows(_rows(profile), rule, signal)[0]


def detect_rows(profiles, rule: Rule, signal: str) -> list[BoundaryReport]:
    """Apply `rule` to every row of `profiles` (R, W) at once; one report per row."""
    s = _rows(profiles)
    index, jump, spread = rule.locate(s)
    rows = s.astype(np.float32).tolist()
    out = []
    for i, j, sp, values in zip(index.tolist(), jump.tolist(), spread.tolist(), rows, strict=True):
        if i < 0:
            out.append(BoundaryReport(None, None, None, None, signal, profile=values))
        else:
            out.append(BoundaryReport(i + 1, i, j, sp, signal, profile=values))
    return out


def summary(reports) -> str | None:
    """One line on the rows where Seer found no boundary (None: it found one in every row, or
    Seer was off). `reports`: one `BoundaryReport` (or None: Seer off) per row of a run."""
    ran = [r for r in reports if r is not None]
    missed = [r for r in ran if r.length is None]
    if not missed:
        return None
    fell = [r.window for r in missed if r.fallback]
    head = f"Seer found no boundary in {len(missed)} of {len(ran)} row(s)"
    if len(fell) == len(missed):
        kept = sorted(set(fell))
        shown = str(kept[0]) if len(kept) == 1 else f"{kept[0]}-{kept[-1]}"
        return (
            f"{head}; they kept the calibrated fallback window ({shown} positions; the guard "
            "grows it where an answer reaches it)"
        )
    return (
        f"{head}; {len(missed) - len(fell)} kept the full window (no fallback window set: "
        "`seer calibrate --write` sets one)"
    )
