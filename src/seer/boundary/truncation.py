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
two, i.e. cuts fewer answers short). A row where the signal finds no boundary keeps the
calibrated `fallback` window (`seer calibrate` sets it from its answers' lengths; 0: the full
window), with the guard behind it; its report says so (`BoundaryReport.fallback`), and the front
ends count such rows in one summary line (`seer.boundary.summary`), never one line per step.
"""

from __future__ import annotations

import logging
import math
import time
import weakref
from dataclasses import replace

import numpy as np
import torch

from seer.boundary.config import PAPER_LAYER, SeerConfig
from seer.boundary.detector import BoundaryReport, detect_rows
from seer.boundary.probe import StepZeroProbe, end_probability, n_layers, probe_module
from seer.errors import SeerError
from seer.models.common import attention_bias
from seer.sampling import TokenIds

log = logging.getLogger(__name__)


def round_window(length: int, gen_length: int, bucket: int, margin: int = 0) -> int:
    """The window kept for a boundary at L* = `length`: L* + margin rounded up to a multiple of
    `bucket` (few distinct shapes), never above gen_length."""
    return min(gen_length, bucket * math.ceil((length + margin) / bucket))


_NOTICED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> notices given


def notice(model, message: str) -> None:
    """One line to stderr (the `seer.boundary` logger), once per model and message."""
    seen = _NOTICED.setdefault(model, set())
    if message not in seen:
        seen.add(message)
        log.warning(message)


def fit(cfg: SeerConfig, model) -> SeerConfig:
    """`cfg` checked against `model`: the detection layer exists (None: the paper's layer 3, or
    the last layer of a smaller model, said in one line) and the probe point is there."""
    n = n_layers(model)
    layer = cfg.layer
    if layer is None:
        layer = min(PAPER_LAYER, n - 1)
        if cfg.uses_sparsity and layer != PAPER_LAYER:
            notice(
                model,
                f"Seer: the model has {n} layers; probing layer {layer} (its last) instead of "
                f"the paper's layer {PAPER_LAYER} (set it with seer={{'layer': ...}})",
            )
    elif layer >= n:
        raise SeerError(
            f"Seer layer {layer} does not exist; the model has {n} layers: choose 0..{n - 1}"
        )
    if cfg.uses_sparsity:
        probe_module(model, layer, cfg.tensor)  # the probe point exists (gate: an activation)
    return cfg if layer == cfg.layer else replace(cfg, layer=layer)


class SeerPolicy:
    """The `WindowPolicy` that truncates at the detected boundary (see module docstring)."""

    def __init__(self, cfg: SeerConfig, tokens: TokenIds, fitted: bool = False) -> None:
        self.cfg = cfg
        self.fitted = fitted  # cfg was fitted to the model already (a resolved request's)
        self.tokens = tokens
        self.probe: StepZeroProbe | None = None
        self.reports: list[BoundaryReport] = []
        self.windows: torch.Tensor | None = None
        self.guard_fired = 0
        self.detect_seconds = 0.0  # probe hooks + detector, this run (wall time)
        self.detect_cpu_seconds = 0.0  # the same in this thread's CPU time

    # -- WindowPolicy -------------------------------------------------------------------------
    def start(self, model, canvas) -> dict:
        self.reports, self.windows, self.guard_fired = [], None, 0
        self.detect_seconds = self.detect_cpu_seconds = 0.0
        if not self.fitted:
            self.cfg = fit(self.cfg, model)
        self._rules = (self.cfg.snr, self.cfg.threshold)  # (sparsity rule, end-probability rule)
        self._enders = list(self.tokens.enders)
        self.probe = None
        if self.cfg.uses_sparsity:
            rows = canvas.x.shape[0]
            assert self.cfg.layer is not None  # `fit` sets the probe layer
            probe = StepZeroProbe((self.cfg.layer,), (self.cfg.theta,), (self.cfg.tensor,))
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
        return {
            "boundaries": self.reports,
            "guard_fired": self.guard_fired,
            "detect_seconds": self.detect_seconds,
            "detect_cpu_seconds": self.detect_cpu_seconds,
        }

    # -- detection ----------------------------------------------------------------------------
    def _decide(self, canvas, logits: torch.Tensor | None) -> torch.Tensor:
        t0, c0 = time.perf_counter(), time.thread_time()
        g, cfg = canvas.width, self.cfg
        sparsity = None
        if self.probe is not None and cfg.layer is not None:
            sparsity = self.probe.profile(cfg.layer)
        signal = f"sparsity@L{cfg.layer}"
        if cfg.signal == "sparsity":
            reports = detect_rows(sparsity, self._rules[0], signal)
        else:
            assert logits is not None  # only the sparsity signal decides inside step 0
            ends = end_probability(logits if logits.shape[1] == g else logits[:, :g], self._enders)
            reports = detect_rows(ends, self._rules[1], "eos_prob")
            if cfg.signal == "combined":
                by_sp = detect_rows(sparsity, self._rules[0], signal)
                reports = [_combine(a, b) for a, b in zip(by_sp, reports, strict=True)]
        for r in reports:  # no boundary: the calibrated fallback window (0: the full window)
            if r.length is not None:
                r.window = self._round(r.length, g)
            else:
                r.window = round_window(cfg.fallback or g, g, cfg.bucket)
                r.fallback = r.window < g
        self.reports.extend(reports)
        windows = torch.from_numpy(np.array([r.window for r in reports], dtype=np.int64))
        windows = windows.to(canvas.x.device)
        if self.probe is not None:
            self.detect_seconds += self.probe.seconds
            self.detect_cpu_seconds += self.probe.cpu_seconds
        self.detect_seconds += time.perf_counter() - t0
        self.detect_cpu_seconds += time.thread_time() - c0
        return windows

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


def _combine(by_sp: BoundaryReport, by_eos: BoundaryReport) -> BoundaryReport:
    """Both signals must find a boundary; the longer one is kept (fewer answers cut short)."""
    if by_sp.length is None or by_eos.length is None:
        return replace(by_eos, length=None, index=None, signal="combined")
    best = by_sp if by_sp.length >= by_eos.length else by_eos
    return replace(best, signal=f"combined({best.signal})")


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
