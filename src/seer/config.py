"""Typed, validated configuration: per-request `SamplingParams` and the token ids of a model.

Validation happens in `__post_init__` (or `check`, for rules that need the model), and every
failure is a `SeerError` whose message names the problem and the fix.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields, replace

from seer.errors import SeerError

LLADA_RULES = ("low_confidence", "random")  # LLaDA's remasking: linear schedule, semi-AR blocks
DREAM_RULES = ("origin", "maskgit_plus", "topk_margin", "entropy")  # Dream's algorithms
RULES = LLADA_RULES + DREAM_RULES
CACHES = ("none", "prefix", "dual", "prefix_lm", "dpad")  # KV-cache policies (seer.diffusion.cache)
SCHEDULES = ("linear", "timestep", "shift")  # reveal counts per step (seer.diffusion.schedule)


@dataclass(slots=True, frozen=True)
class TokenIds:
    """Special token ids of a model, read from its config and tokenizer (never literals)."""

    mask: int  # the [MASK] token that fills the answer window
    eos: int  # end of text; pads the answer window after the answer
    pad: int  # left padding of batched prompts
    eot: int | None = None  # end of turn (<|eot_id|>, <|im_end|>), if the model has one
    bos: int | None = None
    banned: tuple[int, ...] = ()  # never proposed at masked positions by the official sampler

    @property
    def enders(self) -> tuple[int, ...]:
        """Tokens whose presence means the answer has ended."""
        return (self.eos,) if self.eot is None else (self.eos, self.eot)

    def answer_length(self, ids: list[int]) -> int:
        """Answer tokens before the first end token."""
        return next((i for i, t in enumerate(ids) if t in self.enders), len(ids))


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# DAEDAL's options (seer.diffusion.daedal), named after the official `generate` arguments
DAEDAL_INTS = ("daedal_initial", "daedal_block", "daedal_expand", "daedal_eos_tokens")
DAEDAL_FLOATS = ("daedal_high", "daedal_low", "daedal_eos", "daedal_expand_eos")

# SamplingParams fields -> their kind (numbers.Integral / numbers.Real / str / bool)
_KINDS = {
    **dict.fromkeys(
        ("gen_length", "steps", "block_length", "top_k", "seed", "dpad_window"), numbers.Integral
    ),
    **dict.fromkeys(DAEDAL_INTS, numbers.Integral),
    **dict.fromkeys(
        ("temperature", "alg_temp", "top_p", "cfg_scale", "eps", "threshold", "factor"),
        numbers.Real,
    ),
    **dict.fromkeys(DAEDAL_FLOATS, numbers.Real),
    **dict.fromkeys(("remasking", "cache", "schedule"), str),
    **dict.fromkeys(("logits_eos_inf", "confidence_eos_eot_inf", "early_stop", "daedal"), bool),
}
_KINDS_TEXT = {numbers.Integral: "an integer", numbers.Real: "a number", str: "a string",
               bool: "True or False"}  # fmt: skip


@dataclass(slots=True, frozen=True)
class SamplingParams:
    """How to denoise one request. `None` fields take the model family's default."""

    gen_length: int = 128  # answer window, in tokens
    steps: int | None = None  # denoising steps over the full window (default: gen_length)
    block_length: int | None = None  # semi-autoregressive block (default: gen_length)
    temperature: float = 0.0  # 0 = greedy
    remasking: str | None = None  # unmasking rule, see RULES (default: the model's own)
    alg_temp: float | None = None  # Dream: sample positions from softmax(conf / alg_temp)
    top_p: float | None = None  # Dream: nucleus filter before sampling
    top_k: int | None = None  # Dream: top-k filter before sampling
    cfg_scale: float = 0.0  # classifier-free guidance (LLaDA); 0 = off
    logits_eos_inf: bool = False  # LLaDA: never generate [EOS]
    confidence_eos_eot_inf: bool = False  # LLaDA: end-of-turn gets zero confidence (official quirk)
    eps: float = 1e-3  # Dream: last time step of linspace(1, eps, steps + 1)
    seed: int | None = None  # seeds the torch.Generator used for every random draw
    cache: str = "none"  # KV cache: none | prefix | dual (Fast-dLLM) | prefix_lm (LaViDa) |
    # dpad (DPad's suffix dropout: the masked suffix past the block is left out of the forward)
    dpad_window: int = 16  # cache="dpad": suffix positions kept after the current block (DPad's
    # `window`; the official generate has no default: 16 is ours, bench_compare's setting)
    schedule: str | None = None  # reveal counts: linear | timestep | shift (default: the rule's)
    banned_ids: tuple[int, ...] | None = None  # logits -inf at masked positions (None: the
    # model's TokenIds.banned, e.g. LLaDA-V's EOS/BOS/header tokens; () bans nothing)
    stop: tuple[tuple[int, ...], ...] = ()  # stop sequences (LLaDA-V's stopping_criteria, as
    # ids): once one appears in the answer, only masks before it are revealed, then the row ends
    suffix: tuple[int, ...] = ()  # ids fixed after the answer window (LLaDA-V's
    # generation_suffix): attended to, never revealed, not part of the returned answer
    threshold: float | None = None  # Fast-dLLM parallel decoding: reveal every masked position
    # of the block whose confidence is >= threshold (at least one per step); the block ends
    # when it has no masks, so `steps` no longer sets the step count (seer.diffusion.unmask)
    factor: float | None = None  # Fast-dLLM's factor-based parallel decoding (the n-th most
    # confident position is revealed while its confidence is >= 1 - factor / (n + 1))
    early_stop: bool = False  # dInfer: a row ends once a filled block holds [EOS] (the rest of
    # its window becomes [EOS]); needs semi-AR blocks (block_length < gen_length) to save steps
    daedal: bool = False  # DAEDAL (seer.diffusion.daedal): the window starts at daedal_initial,
    # grows by end-token confidence, and grows inside during denoising; gen_length is its cap
    # (the official max_gen_length); steps and block_length do not apply (daedal_block does).
    # Defaults: the official script's (scripts/eval_LLaDA_DAEDAL.sh)
    daedal_initial: int = 64  # initial_gen_length: the first window
    daedal_block: int = 32  # block_length: DAEDAL's blocks over the growing window
    daedal_expand: int = 8  # expansion_factor: masks added per sizing step / per inserted point
    daedal_high: float = 0.9  # high_conf_threshold: reveal every block mask above it (>= 1)
    daedal_low: float = 0.1  # low_conf_threshold: a mask below it may become an insertion point
    daedal_eos: float = 0.5  # eos_confidence_threshold: stop sizing once the end is this sure
    daedal_expand_eos: float = 0.9  # expand_eos_confidence_threshold: no insertion above it
    daedal_eos_tokens: int = 32  # eos_check_tokens: end-token positions averaged (from the end)

    def __post_init__(self) -> None:
        self._check_types()
        for name in ("temperature", "alg_temp", "top_p", "cfg_scale", "eps"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise SeerError(f"{name} must be a finite number, got {value}")
        if self.gen_length < 1:
            raise SeerError(f"gen_length must be >= 1, got {self.gen_length}")
        if self.steps is not None and self.steps < 1:
            raise SeerError(f"steps must be >= 1, got {self.steps}")
        if self.block_length is not None and self.block_length < 1:
            raise SeerError(f"block_length must be >= 1, got {self.block_length}")
        if self.remasking is not None and self.remasking not in RULES:
            raise SeerError(
                f"unknown remasking rule {self.remasking!r}; choose one of {', '.join(RULES)}"
            )
        if self.cache not in CACHES:
            raise SeerError(
                f"unknown cache {self.cache!r}; choose one of {', '.join(CACHES)} "
                "(prefix/dual reuse keys and values within each semi-AR block; prefix_lm "
                "encodes the prompt once, on its own; dpad drops the suffix past the block)"
            )
        if self.dpad_window < 0:
            raise SeerError(f"dpad_window must be >= 0, got {self.dpad_window}")
        if self.schedule is not None and self.schedule not in SCHEDULES:
            raise SeerError(
                f"unknown schedule {self.schedule!r}; choose one of {', '.join(SCHEDULES)} "
                "(or None for the unmasking rule's own)"
            )
        if self.temperature < 0:
            raise SeerError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise SeerError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.seed is not None and not (
            isinstance(self.seed, int) and -(2**63) <= self.seed < 2**64
        ):
            raise SeerError(f"seed must be a 64-bit integer, got {self.seed}")
        if self.top_k is not None and self.top_k < 1:
            raise SeerError(f"top_k must be >= 1, got {self.top_k}")
        if self.cfg_scale < 0:
            raise SeerError(f"cfg_scale must be >= 0, got {self.cfg_scale}")
        self._check_parallel()
        self._check_daedal()
        for name in ("banned_ids", "suffix"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))  # frozen: normalise lists once
        if isinstance(self.stop, str) or any(isinstance(s, str) for s in self.stop):
            raise SeerError("stop takes token-id sequences; encode stop words with the tokenizer")
        object.__setattr__(self, "stop", tuple(tuple(map(int, s)) for s in self.stop))
        if any(not s for s in self.stop):
            raise SeerError("stop sequences must hold at least one token id each")
        block = self.block_length or self.gen_length
        if self.gen_length % block:
            raise SeerError(
                f"gen_length {self.gen_length} is not a multiple of block_length {block}; "
                "pick a block_length that divides gen_length"
            )
        blocks = self.gen_length // block
        if self.total_steps % blocks:
            raise SeerError(
                f"steps {self.total_steps} cannot be spread over {blocks} blocks; "
                f"use a multiple of {blocks}"
            )

    def _check_parallel(self) -> None:
        """threshold / factor (Fast-dLLM): one of them, a finite value in range, a top-k rule."""
        for name in ("threshold", "factor"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise SeerError(f"{name} must be a finite number, got {value}")
        if self.threshold is not None and self.factor is not None:
            raise SeerError("give threshold or factor, not both (two parallel-decoding rules)")
        if self.threshold is not None and not 0 <= self.threshold <= 1:
            raise SeerError(f"threshold is a confidence in [0, 1], got {self.threshold}")
        if self.factor is not None and self.factor <= 0:
            raise SeerError(f"factor must be > 0, got {self.factor}")
        if self.parallel and (self.remasking == "origin" or self.alg_temp):
            raise SeerError(
                "threshold/factor rank positions by confidence: use a top-k rule "
                "(not remasking='origin', no alg_temp)"
            )

    def _check_daedal(self) -> None:
        """DAEDAL's options in range, and nothing it does not compose with."""
        for name in DAEDAL_FLOATS:
            value = getattr(self, name)
            if not math.isfinite(value) or not 0 <= value <= 1:
                raise SeerError(f"{name} is a confidence in [0, 1], got {value}")
        for name in DAEDAL_INTS:
            if getattr(self, name) < 1:
                raise SeerError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.daedal:
            return
        if self.daedal_initial > self.gen_length:
            raise SeerError(
                f"daedal_initial {self.daedal_initial} exceeds gen_length {self.gen_length} (the "
                "longest window DAEDAL may grow to): lower daedal_initial or raise gen_length"
            )
        if self.remasking not in (None, "low_confidence"):
            raise SeerError(
                "daedal reveals by confidence as LLaDA's sampler does: use "
                f"remasking='low_confidence', not {self.remasking!r}"
            )
        clash = [name for name, on in (
            ("cache", self.cache != "none"), ("threshold", self.threshold is not None),
            ("factor", self.factor is not None), ("early_stop", self.early_stop),
            ("stop", bool(self.stop)), ("suffix", bool(self.suffix)),
            ("logits_eos_inf", self.logits_eos_inf),
            ("confidence_eos_eot_inf", self.confidence_eos_eot_inf)) if on]  # fmt: skip
        if clash:
            raise SeerError(
                f"daedal does not combine with {clash[0]} (it inserts masks inside the window "
                "and has its own reveal and end rules); drop one of them"
            )

    @property
    def parallel(self) -> bool:
        """Confidence-driven parallel decoding (threshold or factor): a block runs until it
        has no masks, revealing as many positions per step as the rule accepts."""
        return self.threshold is not None or self.factor is not None

    def _check_types(self) -> None:
        """Each option has its type (an int is a float too; a bool is neither), or one line."""
        for f in fields(self):
            value, kind = getattr(self, f.name), _KINDS.get(f.name)
            if kind is None or (value is None and "None" in str(f.type)):
                continue
            if kind is bool:
                ok = isinstance(value, bool)
            elif kind is str:
                ok = isinstance(value, str)
            else:
                ok = isinstance(value, kind) and not isinstance(value, bool)
            if not ok:
                raise SeerError(
                    f"bad generation option: {f.name} must be {_KINDS_TEXT[kind]}, got {value!r}"
                )
        for name in ("banned_ids", "suffix"):
            ids = getattr(self, name)
            if ids is not None and not (
                isinstance(ids, (list, tuple)) and all(_is_int(i) for i in ids)
            ):
                raise SeerError(f"{name} must be a sequence of token ids, got {ids!r}")
        stop = self.stop
        if not isinstance(stop, str) and not (
            isinstance(stop, (list, tuple))
            and all(
                isinstance(s, str) or (isinstance(s, (list, tuple)) and all(map(_is_int, s)))
                for s in stop
            )
        ):
            raise SeerError(f"stop must be a sequence of token-id sequences, got {stop!r}")

    @property
    def total_steps(self) -> int:
        return self.steps or self.gen_length

    @property
    def block(self) -> int:
        return self.block_length or self.gen_length

    @property
    def counting(self) -> str:
        """The reveal-count schedule in force: `schedule`, else the rule family's own."""
        return self.schedule or ("linear" if self.remasking in LLADA_RULES else "timestep")

    def with_defaults(self, rule: str) -> SamplingParams:
        return self if self.remasking else replace(self, remasking=rule)
