"""The statistics every benchmark reports: bootstrap intervals (over requests, or over requests
and timing repeats together), a paired test, and the accuracy-against-time Pareto front.

Percentile bootstrap with a seeded `torch.Generator` (the same seed, the same interval), 2000
resamples. A paired statistic resamples the *same* requests for both sides, so that the
request-to-request spread, which both share, cancels. Times measured in interleaved repeats
(`seerbench.runs`) are paired by repeat as well: repeat r of two configs ran in the same
round, under the same machine load, so a resample draws one repeat index per request and uses
it for both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch

BOOT = 2000  # bootstrap resamples
PERMUTATIONS = 10_000  # random sign flips of the paired test (exact below EXACT nonzero pairs)
EXACT = 16


def _percentiles(values: torch.Tensor) -> tuple[float, float]:
    v = values.sort().values
    reps = len(v)
    return float(v[int(0.025 * reps)]), float(v[int(0.975 * reps) - 1])


def bootstrap(
    xs: Sequence[float], seed: int = 0, ys: Sequence[float] | None = None, reps: int = BOOT
) -> tuple[float, float]:
    """95 % interval of the mean of `xs` (a score per request), or, given `ys` (the same
    requests under another config), of the paired difference mean(xs) - mean(ys)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.tensor([float(x) for x in xs], dtype=torch.float64)
    if ys is not None:
        if len(ys) != len(xs):
            raise ValueError(f"paired samples differ in size: {len(xs)} and {len(ys)}")
        t = t - torch.tensor([float(y) for y in ys], dtype=torch.float64)
    idx = torch.randint(0, len(t), (reps, len(t)), generator=g)
    return _percentiles(t[idx].mean(dim=1))


def _per_repeat(xs) -> torch.Tensor:
    """(n,) per-request values or (n, R) per-request repeats -> a float64 (n, R) tensor."""
    t = torch.tensor(xs, dtype=torch.float64)
    return t[:, None] if t.dim() == 1 else t


def bootstrap_ratio(num, den, seed: int = 0, reps: int = BOOT) -> tuple[float, float]:
    """95 % interval of sum(num) / sum(den) (a speedup: the reference's time over the method's on
    the same requests). `num` / `den`: one time per request, or a list of per-repeat times per
    request (n x R, interleaved repeats): then each resample draws requests *and*, per drawn
    request, one repeat index shared by both sides, so the interval covers the machine's
    repeat-to-repeat noise as well as the requests."""
    a, b = _per_repeat(num), _per_repeat(den)
    if a.shape != b.shape:
        raise ValueError(f"paired times differ in shape: {tuple(a.shape)} and {tuple(b.shape)}")
    n, r = a.shape
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, n, (reps, n), generator=g)
    rep = torch.randint(0, r, (reps, n), generator=g)
    return _percentiles(a[idx, rep].sum(dim=1) / b[idx, rep].sum(dim=1))


def paired_test(
    xs: Sequence[float], ys: Sequence[float], seed: int = 0, reps: int = PERMUTATIONS
) -> float:
    """Two-sided p-value of "the paired scores `xs`, `ys` have the same mean": a sign-flip
    permutation test of the per-request differences (exact when at most 16 differ from zero;
    for 0/1 scores it is McNemar's exact test). 1.0 when no pair differs."""
    if len(xs) != len(ys):
        raise ValueError(f"paired samples differ in size: {len(xs)} and {len(ys)}")
    d = torch.tensor(
        [float(x) - float(y) for x, y in zip(xs, ys, strict=True)], dtype=torch.float64
    )
    d = d[d != 0]
    if len(d) == 0:
        return 1.0
    observed = abs(float(d.sum())) - 1e-12
    if len(d) <= EXACT:
        signs = torch.tensor(
            list(itertools.product((1.0, -1.0), repeat=len(d))), dtype=torch.float64
        )
        return float(((signs @ d).abs() >= observed).double().mean())
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, (reps, len(d)), generator=g, dtype=torch.float64) * 2 - 1
    hits = int(((signs @ d).abs() >= observed).sum())
    return (hits + 1) / (reps + 1)  # the observed assignment counts as one permutation


def pareto(points: Sequence[tuple[float, float, str]]) -> set[str]:
    """Names of the points (time, accuracy, name) that no other point beats on both time
    (lower) and accuracy (higher)."""
    front = set()
    for t, a, name in points:
        if not any((t2 <= t and a2 >= a) and (t2 < t or a2 > a) for t2, a2, _ in points):
            front.add(name)
    return front


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    if not s:
        raise ValueError("median of no values")
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def spread(xs: Sequence[float]) -> dict:
    """Median, quartiles and range of repeated measurements (the machine's noise)."""
    s = sorted(xs)
    q = lambda f: s[min(len(s) - 1, max(0, math.ceil(f * len(s)) - 1))]  # noqa: E731
    return {"median": median(s), "q1": q(0.25), "q3": q(0.75), "min": s[0], "max": s[-1]}


def lower_bound(
    xs: Sequence[float], ys: Sequence[float], level: float = 0.95, seed: int = 0, reps: int = BOOT
) -> float:
    """One-sided `level` lower bound of the paired difference mean(xs) - mean(ys) (percentile
    bootstrap over requests: the (1 - level) quantile of the resampled differences)."""
    if len(ys) != len(xs):
        raise ValueError(f"paired samples differ in size: {len(xs)} and {len(ys)}")
    g = torch.Generator().manual_seed(seed)
    d = torch.tensor(
        [float(x) - float(y) for x, y in zip(xs, ys, strict=True)], dtype=torch.float64
    )
    means = d[torch.randint(0, len(d), (reps, len(d)), generator=g)].mean(dim=1).sort().values
    return float(means[int((1 - level) * reps)])


def noninferior(
    xs: Sequence[float], ys: Sequence[float], margin: float, level: float = 0.95, seed: int = 0
) -> tuple[bool, float]:
    """(passes, lower bound): `xs` is not worse than `ys` by more than `margin` (same units as
    the scores: 0.03 for 3 points of 0/1 scores) when the one-sided `level` lower bound of the
    paired difference is >= -margin."""
    lo = lower_bound(xs, ys, level, seed)
    return lo >= -margin - 1e-12, lo


def noninferior_p(
    diffs: torch.Tensor, margin: float, seed: int = 0, reps: int = BOOT
) -> list[float]:
    """One-sided bootstrap p-values of "config c is worse than the reference by more than
    `margin`", one per row of `diffs` (C, n): per-request paired differences, all configs
    resampled with the same requests. p = the share of resampled mean differences below
    -margin; p <= 0.05 exactly when `noninferior`'s lower bound (same seed, same draws) passes,
    so one config alone is the unadjusted rule. Resolution 1 / reps (p = 0: no resample below)."""
    d = torch.as_tensor(diffs, dtype=torch.float64)
    if d.dim() != 2 or d.shape[1] == 0:
        raise ValueError(f"diffs: a (configs, requests) table, got shape {tuple(d.shape)}")
    n = d.shape[1]
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, n, (reps, n), generator=g)
    counts = torch.zeros(reps, n, dtype=torch.float64).scatter_add_(
        1, idx, torch.ones(reps, n, dtype=torch.float64)
    )
    means = d @ counts.T / n  # (C, reps): each resample's mean difference per config
    return ((means < -margin - 1e-12).double().mean(dim=1)).tolist()


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down rejections at family-wise `alpha`: sorted ascending, the i-th smallest
    p-value (0-based) is rejected while each so far is <= alpha / (m - i)."""
    m = len(pvalues)
    out = [False] * m
    for i, j in enumerate(sorted(range(m), key=lambda k: pvalues[k])):
        if pvalues[j] > alpha / (m - i):
            break
        out[j] = True
    return out
