"""Seer's configuration: `SeerConfig`, the boundary detection and truncation options of a
request (per-model defaults live in seer.json; `truncation.resolve` fits them to a model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from seer.boundary.detector import ChangePointRule, SNRRule, ThresholdRule
from seer.boundary.probe import TENSORS
from seer.errors import SeerError

SIGNALS = ("sparsity", "eos_prob", "combined")
PAPER_LAYER = 3  # the paper's detection layer (0-based)


# What `seer=True` uses on a checkpoint without seer.json: the paper's sparsity rule (SeerConfig's
# defaults). Chosen by measurement (`benchmarks/bench_uncalibrated.py`,
# docs/results/bench_uncalibrated.txt: each signal's defaults on both built-in models with their
# calibration removed, fewest answers cut, then fastest): it cut no answer on either model (it
# rarely fires, so it rarely helps), where the end probability, 4.6x / 8.4x faster, cut 2 of 60
# image answers short.
UNCALIBRATED: dict = {"signal": "sparsity"}

_INTS = ("lookahead", "eos_run", "margin", "bucket", "guard_slack")
_FLOATS = ("theta", "z", "tau_jump", "gamma", "eos_tau", "growth")


@dataclass(slots=True, frozen=True)
class SeerConfig:
    """Boundary detection and truncation options (per-model defaults live in seer.json)."""

    signal: str = "sparsity"  # sparsity | eos_prob | combined
    layer: int | None = None  # detection layer (0-based); None: the paper's 3, or the last
    # layer of a model with fewer (`fit` resolves it against the model)
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
        for name in _INTS + (("layer",) if self.layer is not None else ()):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SeerError(f"Seer option {name} must be an integer, got {v!r}")
        for name in _FLOATS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SeerError(f"Seer option {name} must be a number, got {v!r}")
        for name in ("guard", "cut_in_step0"):
            if not isinstance(getattr(self, name), bool):
                raise SeerError(f"Seer option {name} must be true or false, got "
                                f"{getattr(self, name)!r}")  # fmt: skip
        if self.layer is not None and self.layer < 0:
            raise SeerError(f"Seer layer must be >= 0, got {self.layer}")
        if not 0 < self.theta < math.inf or self.z <= 0 or self.tau_jump < 0 or self.gamma < 0:
            raise SeerError("Seer needs theta > 0, z > 0, tau_jump >= 0 and gamma >= 0")
        if self.eos_tau < 0 or self.eos_run < 1 or self.lookahead < 1:
            raise SeerError("Seer needs eos_tau >= 0, eos_run >= 1 and lookahead >= 1")
        if self.cut_in_step0 and self.signal != "sparsity":
            raise SeerError("cut_in_step0 needs signal='sparsity' (the others read the logits)")
        if self.bucket < 1 or self.margin < 0 or self.growth <= 1 or self.guard_slack < 0:
            raise SeerError("bucket must be >= 1, margin >= 0, growth > 1 and guard_slack >= 0")
        SNRRule(self.tau_jump, self.gamma, self.lookahead, self.direction)  # validates direction

    @classmethod
    def from_dict(cls, d: dict, where: str = "Seer option") -> SeerConfig:
        """A config from a dict (seer.json's "config", the CLI's flags); None means default."""
        if not isinstance(d, dict):
            raise SeerError(f"{where}s must be a JSON object of Seer options, got {d!r}")
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise SeerError(
                f"unknown {where}(s) {sorted(unknown)}; known: {', '.join(sorted(names))}"
            )
        return cls(**{k: v for k, v in d.items() if v is not None})

    def override(self, d: dict) -> SeerConfig:
        """This config with the options of `d` over it (None: keep this config's value)."""
        if not isinstance(d, dict):
            raise SeerError(f"Seer options must be a dict, got {d!r}")
        return SeerConfig.from_dict(
            {**_as_dict(self), **{k: v for k, v in d.items() if v is not None}}
        )

    @property
    def uses_sparsity(self) -> bool:
        return self.signal in ("sparsity", "combined")

    @property
    def snr(self):
        """The rule applied to the sparsity profile."""
        if self.rule == "changepoint":
            return ChangePointRule(self.z, self.direction)
        return SNRRule(self.tau_jump, self.gamma, self.lookahead, self.direction)

    @property
    def threshold(self) -> ThresholdRule:
        return ThresholdRule(self.eos_tau, self.eos_run)


def _as_dict(cfg: SeerConfig) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
