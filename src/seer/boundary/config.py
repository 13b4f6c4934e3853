"""Seer's configuration: `SeerConfig`, the boundary detection and truncation options of a
request (per-model defaults live in seer.json; `seer.engine.request.seer_config` fits them to
a model).

Each field declares its help, range and CLI flag (`seer.spec`); the CLI's Seer group is
generated from them. Torch-free (the detector's rules are imported when used), so
`seer --help` can read it."""

from __future__ import annotations

from dataclasses import dataclass, fields

from seer.errors import SeerError
from seer.spec import option, validate

SIGNALS = ("sparsity", "eos_prob", "combined")
PAPER_LAYER = 3  # the paper's detection layer (0-based)
TENSORS = ("down", "gate")  # probe points: input of the down projection | act(gate)
RULES = ("snr", "changepoint")  # sparsity rules (seer.boundary.detector)
DIRECTIONS = ("rising", "falling")  # the sparsity jump the rules look for
_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}

# What `seer=True` uses on a checkpoint without seer.json: the paper's sparsity rule (SeerConfig's
# defaults). Chosen by measurement (`benchmarks/bench_uncalibrated.py`,
# docs/results/bench_uncalibrated.txt: each signal's defaults on both built-in models with their
# calibration removed, fewest answers cut, then fastest): it cut no answer on either model (it
# rarely fires, so it rarely helps), where the end probability, 4.6x / 8.4x faster, cut 2 of 60
# image answers short.
UNCALIBRATED: dict = {"signal": "sparsity"}


def _seer(default, help: str, name: str, **kw):
    return option(default, help, flag=f"--seer-{name.replace('_', '-')}", **kw)


@dataclass(slots=True, frozen=True)
class SeerConfig:
    """Boundary detection and truncation options (per-model defaults live in seer.json)."""

    signal: str = _seer(
        "sparsity",
        f"boundary signal: {' | '.join(SIGNALS)}",
        "signal",
        choices=SIGNALS,
        noun="Seer signal",
    )
    layer: int | None = _seer(None, "probe layer (0-based)", "layer", lo=0)
    # None: the paper's 3, or the last layer of a model with fewer (`fit` resolves it)
    theta: float = _seer(1e-3, "zero threshold of |activation|", "theta", lo=0, open_lo=True)
    tensor: str = _seer(
        "down",
        "probed tensor: down (down-projection input) | gate",
        "tensor",
        choices=TENSORS,
        noun="probe tensor",
    )
    rule: str = _seer(
        "snr",
        "sparsity rule: snr (the paper's) | changepoint",
        "rule",
        choices=RULES,
        noun="sparsity rule",
    )
    z: float = _seer(4.0, "changepoint rule: minimum t statistic", "z", lo=0, open_lo=True)
    tau_jump: float = _seer(0.03, "SNR rule: minimum step", "tau_jump", lo=0)
    gamma: float = _seer(0.6, "SNR rule: plateau spread (share of the step)", "gamma", lo=0)
    lookahead: int = _seer(3, "SNR rule: plateau window", "lookahead", lo=1)
    direction: str = _seer(
        "rising",
        "sparsity jump: rising (paper) | falling",
        "direction",
        choices=DIRECTIONS,
        noun="direction",
    )
    eos_tau: float = _seer(
        0.5, "eos_prob: probability of padding", "eos_tau", lo=0, hi=1, note="a probability"
    )
    eos_run: int = _seer(3, "eos_prob: positions above eos-tau in a row", "eos_run", lo=1)
    margin: int = _seer(0, "positions kept after the boundary", "margin", lo=0)
    fallback: int = _seer(
        0,
        "window kept where the signal finds no boundary (0: the full window; seer calibrate "
        "sets it from the calibration answers' lengths); the guard grows it if needed",
        "fallback",
        lo=0,
    )
    bucket: int = _seer(8, "round the window up to a multiple of this", "bucket", lo=1)
    guard: bool = _seer(
        True, "grow the window when an answer reaches the cut", "guard", negatable=True
    )
    growth: float = _seer(2.0, "guard: window growth factor", "growth", lo=1, open_lo=True)
    guard_slack: int = _seer(0, "guard: end positions that count as cut", "guard_slack", lo=0)
    cut_in_step0: bool = _seer(
        False,
        "cut inside step 0, after the probe layer (sparsity only)",
        "cut_in_step0",
        negatable=True,
    )

    def __post_init__(self) -> None:
        # each option's type and declared range or choices, said as everywhere else
        # ("Seer option theta must be > 0, got 0"); the rules between options follow
        validate(self, "Seer option ", _WORDS)
        if self.cut_in_step0 and self.signal != "sparsity":
            raise SeerError("cut_in_step0 needs signal='sparsity' (the others read the logits)")

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
            {**as_dict(self), **{k: v for k, v in d.items() if v is not None}}
        )

    @property
    def uses_sparsity(self) -> bool:
        return self.signal in ("sparsity", "combined")

    @property
    def snr(self):
        """The rule applied to the sparsity profile."""
        from seer.boundary.detector import ChangePointRule, SNRRule

        if self.rule == "changepoint":
            return ChangePointRule(self.z, self.direction)
        return SNRRule(self.tau_jump, self.gamma, self.lookahead, self.direction)

    @property
    def threshold(self):
        """The rule applied to the end probability (a `ThresholdRule`)."""
        from seer.boundary.detector import ThresholdRule

        return ThresholdRule(self.eos_tau, self.eos_run)


def as_dict(cfg: SeerConfig) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
