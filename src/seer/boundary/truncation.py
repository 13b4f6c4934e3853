"""Seer's window policy: detect the answer's end at step 0, cut the window, guard against cuts.

`SeerPolicy` plugs into the denoising loop (`WindowPolicy`):
1. before step 0 it attaches the sparsity probe at the detection layer;
2. after step 0's forward (or, with `cut_in_step0`, right after the detection layer inside that
   forward, as the paper's Figure 4 shows) it detects each row's boundary and returns the new
   window: L* + margin, rounded up to a multiple of `bucket` (few distinct shapes: every new
   length costs a first-call penalty on CPU and a graph capture on GPU), never above gen_length.
   The suffix is [EOS] by definition and never computed again; the loop lays the steps over the
   new window so tokens per step stay as the user asked;
3. when the steps are done, the guard checks that every row's answer ended (an end token inside
   its window, with `guard_slack` positions to spare). If one did not, its window grows
   (x `growth`, up to gen_length), the new positions are masked and denoised, so an answer is
   never cut short silently.

Signals: "sparsity" (the paper's), "eos_prob" (step-0 probability of an end token, which in our
small model separates answer from padding far better), and "combined" (keeps the longer of the
two, i.e. cuts fewer answers short; no truncation unless both find a boundary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch

from seer.boundary.detector import (
    BoundaryReport,
    ChangePointRule,
    SNRRule,
    ThresholdRule,
    detect,
    end_probability,
)
from seer.boundary.probe import SparsityProbe
from seer.config import TokenIds
from seer.errors import SeerError
from seer.models.common import attention_bias

SIGNALS = ("sparsity", "eos_prob", "combined")
TENSORS = ("down", "gate")


@dataclass(slots=True, frozen=True)
class SeerConfig:
    """Boundary detection and truncation options (per-model defaults live in seer.json)."""

    signal: str = "sparsity"  # sparsity | eos_prob | combined
    layer: int = 3  # detection layer (0-based)
    theta: float = 1e-3  # |a| < theta counts as a zero activation
    tensor: str = "down"  # down: input of the down projection; gate: act(gate)
    rule: str = "snr"  # sparsity rule: snr (the paper's jump-to-plateau) | changepoint
    z: float = 4.0  # changepoint rule: minimum t statistic of the step
    tau_jump: float = 0.03  # SNR rule: minimum step
    gamma: float = 0.6  # SNR rule: plateau spread allowed, as a fraction of the step
    lookahead: int = 3  # SNR rule: plateau window
    direction: str = "rising"  # rising (paper) | falling
    eos_tau: float = 0.5  # eos_prob: probability that marks padding
    eos_run: int = 3  # eos_prob: consecutive positions above eos_tau
    margin: int = 0  # extra positions kept after L*
    bucket: int = 8  # round the window up to a multiple of this
    guard: bool = True  # grow the window when an answer did not end inside it
    growth: float = 2.0  # guard: window multiplier per growth
    guard_slack: int = 0  # guard: an answer ending in the last `slack` positions counts as cut
    cut_in_step0: bool = False  # apply the cut inside step 0, from layer+1 on (sparsity only)

    def __post_init__(self) -> None:
        if self.signal not in SIGNALS:
            raise SeerError(f"unknown Seer signal {self.signal!r}; choose {', '.join(SIGNALS)}")
        if self.rule not in ("snr", "changepoint"):
            raise SeerError(f"unknown sparsity rule {self.rule!r}; choose snr or changepoint")
        if self.tensor not in TENSORS:
            raise SeerError(f"unknown probe tensor {self.tensor!r}; choose {', '.join(TENSORS)}")
        if self.cut_in_step0 and self.signal != "sparsity":
            raise SeerError("cut_in_step0 needs signal='sparsity' (the others read the logits)")
        if self.bucket < 1 or self.margin < 0 or self.growth <= 1 or self.guard_slack < 0:
            raise SeerError("bucket must be >= 1, margin >= 0, growth > 1 and guard_slack >= 0")
        SNRRule(self.tau_jump, self.gamma, self.lookahead, self.direction)  # validates direction

    @classmethod
    def from_dict(cls, d: dict) -> SeerConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise SeerError(f"unknown Seer option(s) {sorted(unknown)}")
        return cls(**d)

    @property
    def snr(self):
        """The rule applied to the sparsity profile."""
        if self.rule == "changepoint":
            return ChangePointRule(self.z, self.direction)
        return SNRRule(self.tau_jump, self.gamma, self.lookahead, self.direction)

    @property
    def threshold(self) -> ThresholdRule:
        return ThresholdRule(self.eos_tau, self.eos_run)


def round_window(length: int, gen_length: int, bucket: int, margin: int = 0) -> int:
    """The window kept for a boundary at L* = `length`: L* + margin rounded up to a multiple of
    `bucket` (few distinct shapes), never above gen_length."""
    return min(gen_length, bucket * math.ceil((length + margin) / bucket))


def resolve(lm, seer) -> SeerConfig:
    """`seer=True` -> the model's stored defaults (seer.json) or the paper's; a dict overrides."""
    base = SeerConfig.from_dict(lm.meta.get("seer", {}).get("config", {}))
    if seer is True:
        return base
    if isinstance(seer, SeerConfig):
        return seer
    if isinstance(seer, dict):
        return replace(base, **seer)
    raise SeerError("seer must be True, a dict of options or a SeerConfig")


def policy_for(lm, seer) -> SeerPolicy:
    return SeerPolicy(resolve(lm, seer), lm.tokens)


class SeerPolicy:
    """The `WindowPolicy` that truncates at the detected boundary (see module docstring)."""

    def __init__(self, cfg: SeerConfig, tokens: TokenIds) -> None:
        self.cfg = cfg
        self.tokens = tokens
        self.probe: SparsityProbe | None = None
        self.reports: list[BoundaryReport] = []
        self.windows: torch.Tensor | None = None
        self.guard_fired = 0

    # -- WindowPolicy -------------------------------------------------------------------------
    def start(self, model, canvas) -> dict:
        self.reports, self.windows, self.guard_fired = [], None, 0
        if self.cfg.signal in ("sparsity", "combined"):
            rows = canvas.x.shape[0]
            probe = SparsityProbe((self.cfg.layer,), self.cfg.theta, self.cfg.tensor)
            self.probe = probe.attach(model, canvas.prompt_len, canvas.width, rows)
        if self.cfg.cut_in_step0:
            return {"after_layer": self._cut_hook(canvas)}
        return {}

    def cut(self, canvas, logits: torch.Tensor) -> torch.Tensor | None:
        if self.probe is not None:
            self.probe.detach()
        if self.windows is None:  # not already cut inside step 0
            self.windows = self._decide(canvas, logits)
        return self.windows

    def grow(self, window: torch.Tensor, end_pos: torch.Tensor, gen_length: int):
        if not self.cfg.guard:
            return None
        # ended: an end token with at least `guard_slack` free positions after it
        ended = (end_pos >= 0) & (end_pos < window - self.cfg.guard_slack)
        short = ~ended & (window < gen_length)
        if not bool(short.any()):
            return None
        self.guard_fired += int(short.sum())
        bigger = torch.tensor(
            [self._round(math.ceil(int(w) * self.cfg.growth), gen_length) for w in window],
            device=window.device,
        )
        return torch.where(short, bigger, window)

    def report(self) -> dict:
        return {"boundaries": self.reports, "guard_fired": self.guard_fired}

    # -- detection ----------------------------------------------------------------------------
    def _decide(self, canvas, logits: torch.Tensor | None) -> torch.Tensor:
        g = canvas.width
        rows = canvas.x.shape[0]
        sparsity = self.probe.profiles.get(self.cfg.layer) if self.probe else None
        ends = None
        if self.cfg.signal in ("eos_prob", "combined"):
            ends = end_probability(logits[:, :g], self.tokens.enders)
        windows = []
        for r in range(rows):
            report = self._row(sparsity[r] if sparsity is not None else None, ends, r)
            report.window = g if report.length is None else self._round(report.length, g)
            self.reports.append(report)
            windows.append(report.window)
        return torch.tensor(windows, device=canvas.x.device)

    def _row(self, sparsity, ends, r: int) -> BoundaryReport:
        signal = f"sparsity@L{self.cfg.layer}"
        if self.cfg.signal == "sparsity":
            return detect(sparsity, self.cfg.snr, signal)
        by_eos = detect(ends[r], self.cfg.threshold, "eos_prob")
        if self.cfg.signal == "eos_prob":
            return by_eos
        by_sp = detect(sparsity, self.cfg.snr, signal)
        if by_sp.length is None or by_eos.length is None:
            return replace(by_eos, length=None, index=None, signal="combined")
        best = by_sp if by_sp.length >= by_eos.length else by_eos
        return replace(best, signal=f"combined({best.signal})")

    def _round(self, length: int, gen_length: int) -> int:
        return round_window(length, gen_length, self.cfg.bucket, self.cfg.margin)

    # -- cut inside step 0 --------------------------------------------------------------------
    def _cut_hook(self, canvas):
        """after_layer hook: at the detection layer, cut the hidden states to the new window."""
        p = canvas.prompt_len

        def after_layer(i: int, h: torch.Tensor, mask):
            if i != self.cfg.layer or self.windows is not None:
                return None
            self.windows = self._decide(canvas, None)
            w = int(self.windows.max())
            am = canvas.attention_mask[:, : p + w].clone()
            cols = torch.arange(w, device=am.device)[None]
            am[:, p:] = (cols < self.windows[:, None]).to(am.dtype)
            if h.shape[0] != am.shape[0]:  # classifier-free guidance doubled the batch
                am = torch.cat([am, am])
            pos = (am.cumsum(-1) - 1).clamp(min=0)
            return h[:, : p + w], attention_bias(am, am.shape[0], p + w), pos

        return after_layer


class FixedWindowPolicy:
    """Cuts every row to a given window after step 0 (oracle truncation in benchmarks)."""

    def __init__(self, windows: list[int]) -> None:
        self.windows = windows

    def start(self, model, canvas) -> dict:
        return {}

    def cut(self, canvas, logits: torch.Tensor) -> torch.Tensor:
        return torch.tensor(self.windows, device=canvas.x.device).clamp(max=canvas.width)

    def grow(self, window, end_pos, gen_length):
        return None

    def report(self) -> dict:
        return {}
