"""Typed, validated configuration: per-request `SamplingParams` and the token ids of a model.

Validation happens in `__post_init__` (types, each option's declared range or choices, the rules
between options) and in `resolve` (the rules that need the model), and every failure is a
`SeerError` whose message names the problem and the fix.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields, replace
from typing import Any

from seer.errors import SeerError
from seer.spec import check, check_type, option, specs

LLADA_RULES = ("low_confidence", "random")  # LLaDA's remasking: linear schedule, semi-AR blocks
DREAM_RULES = ("origin", "maskgit_plus", "topk_margin", "entropy")  # Dream's algorithms
RULES = LLADA_RULES + DREAM_RULES
CACHES = ("none", "prefix", "dual", "prefix_lm", "dpad")  # KV-cache policies (seer.diffusion.cache)
# the models shipped in the package (seer/assets/<name>), loadable by name: the text model v2,
# the multimodal model v2, and the first text and multimodal models (kept for the tests and the
# records measured on them). Each one's own task is the data source of the same name
# (`seer.data.builtin`).
BUILTIN_MODELS = ("builtin", "builtin-vqa", "builtin-v1", "builtin-vqa-v1")
SCHEDULES = ("linear", "timestep", "shift")  # reveal counts per step (seer.diffusion.schedule)
# LLaDA's Gumbel-max divides exp(logits) by (-log u) ** temperature in float64: past ~20 the
# power underflows to 0 for u near 1 (and overflows for u near 0), the draw becomes inf / inf
# and the answer garbage; 10 keeps every term finite (and is already all but uniform)
MAX_TEMPERATURE = 10


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


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


DAEDAL = "DAEDAL"  # the CLI group of DAEDAL's options
# the rules between the sampling options and a request's window policy, said once (checked by
# `seer.engine.request.resolve`; the loop's own guards say the same)
DAEDAL_DECIDES = ("daedal sets the answer length itself: drop Seer / the fixed window (they do "
                  "not compose: both decide the length)")  # fmt: skip
RHO_EOS = "rho-EOS"  # the CLI group of ρ-EOS's options
RHO_EOS_DECIDES = (
    "rho_eos sets the answer length itself: drop Seer / the fixed window (they do "
    "not compose: both decide the length)"
)
RHO_SCHEDULERS = ("exp", "linear", "const")  # ρ-EOS: how K grows with the distance to the band
SUFFIX_RULE = "a generation suffix needs cache='none' and no window policy (Seer)"


def _daedal(default: float | int | None, help: str, flag: str, **kw: Any) -> Any:
    """A DAEDAL option (seer.diffusion.daedal), named after the official `generate` argument:
    its own CLI group, in the API, and giving it turns DAEDAL on."""
    if isinstance(default, float):
        kw.update(lo=0, hi=1, note="a confidence in [0, 1]")
    else:
        kw.update(lo=1)
    return option(default, help, flag=flag, group=DAEDAL, api=True, implies="daedal", **kw)


def _rho(default: float | int | str, help: str, flag: str, **kw: Any) -> Any:
    """A ρ-EOS option (seer.diffusion.rho_eos), named after the official `generate` argument in
    its help: its own CLI group, in the API, and giving it turns ρ-EOS on."""
    if isinstance(default, float):
        kw.update(lo=0, hi=1, note="a value in [0, 1]")
    elif isinstance(default, int):
        kw.update(lo=1)
    return option(default, help, flag=flag, group=RHO_EOS, api=True, implies="rho_eos", **kw)


@dataclass(slots=True, frozen=True)
class SamplingParams:
    """How to denoise one request. `None` fields take the model family's default.

    Each field declares its help, range and front-end names (`seer.spec`): the CLI flags, the
    server's request fields and the harness's model arguments are generated from them."""

    gen_length: int = option(
        128, "answer window (tokens)", lo=1, flag="--gen-length", api="max_tokens"
    )
    steps: int | None = option(
        None, "denoising steps (default: gen_length)", lo=1, flag="--steps", api=True
    )
    block_length: int | None = option(
        None, "semi-AR block length (default: gen_length)", lo=1, flag="--block-length", api=True
    )
    temperature: float = option(
        0.0,
        "0 = greedy",
        lo=0,
        hi=MAX_TEMPERATURE,
        note="hotter overflows the sampler's noise and answers garbage",
        flag="--temperature",
        api=True,
    )
    remasking: str | None = option(
        None,
        "unmasking rule (default: the model's own)",
        choices=RULES,
        noun="remasking rule",
        flag="--remasking",
        aliases=("--alg",),
        api=True,
    )
    alg_temp: float | None = option(
        None,
        "Dream: position sampling temperature (softmax of confidence / alg_temp)",
        lo=0,
        flag="--alg-temp",
        api=True,
    )
    top_p: float | None = option(
        None,
        "Dream: nucleus filter before sampling",
        lo=0,
        open_lo=True,
        hi=1,
        flag="--top-p",
        api=True,
    )
    top_k: int | None = option(
        None, "Dream: top-k filter before sampling", lo=1, flag="--top-k", api=True
    )
    cfg_scale: float = option(
        0.0, "LLaDA: classifier-free guidance scale (0 = off)", lo=0, flag="--cfg-scale", api=True
    )
    logits_eos_inf: bool = option(False, "LLaDA: never generate [EOS]")
    confidence_eos_eot_inf: bool = option(
        False, "LLaDA: end-of-turn gets zero confidence (official quirk)"
    )
    eps: float = option(1e-3, "Dream: last time step of linspace(1, eps, steps + 1)")
    seed: int | None = option(
        None,
        "seed of every random draw",
        lo=-(2**63),
        hi=2**64 - 1,
        says="a 64-bit integer",
        flag="--seed",
        api=True,
    )
    cache: str = option(
        "none",
        "KV cache: prefix or dual (Fast-dLLM, per semi-AR block), prefix_lm (LaViDa models only: "
        "the prompt encoded once, alone), dpad (DPad's suffix dropout: the masks past the block's "
        "--dpad-window are left out of each forward) (default none)",
        choices=CACHES,
        noun="cache",
        flag="--cache",
        api=True,
        hint=" (prefix/dual reuse keys and values within each semi-AR block; prefix_lm encodes "
        "the prompt once, on its own; dpad drops the suffix past the block)",
    )
    dpad_window: int = option(
        16,
        "--cache dpad: suffix positions kept past the block (default 16)",
        lo=0,
        flag="--dpad-window",
        api=True,
    )
    # (DPad's `window`; the official generate has no default: 16 is ours, bench_compare's)
    schedule: str | None = option(
        None,
        "reveal counts (default: the rule's)",
        choices=SCHEDULES,
        noun="schedule",
        hint=" (or None for the unmasking rule's own)",
        flag="--schedule",
        api=True,
    )
    banned_ids: tuple[int, ...] | None = option(
        None, "token ids whose logits are -inf at masked positions (None: the model's)"
    )
    # (the model's TokenIds.banned, e.g. LLaDA-V's EOS/BOS/header tokens; () bans nothing)
    stop: tuple[tuple[int, ...], ...] = option((), "stop sequences, as token ids")
    # (LLaDA-V's stopping_criteria): once one appears in the answer, only masks before it are
    # revealed, then the row ends
    suffix: tuple[int, ...] = option((), "ids fixed after the answer window")
    # (LLaDA-V's generation_suffix): attended to, never revealed, not part of the answer
    threshold: float | None = option(
        None,
        "Fast-dLLM parallel decoding: reveal every masked position of the block whose "
        "confidence is >= this (at least one per step)",
        lo=0,
        hi=1,
        note="a confidence in [0, 1]",
        flag="--threshold",
        api=True,
    )
    # the block ends when it has no masks, so `steps` no longer sets the step count
    factor: float | None = option(
        None,
        "Fast-dLLM factor-based parallel decoding",
        lo=0,
        open_lo=True,
        flag="--factor",
        api=True,
    )
    # (the n-th most confident position is revealed while its confidence is >= 1 - factor/(n+1))
    early_stop: bool = option(
        False,
        "dInfer: end once a completed block holds [EOS] (needs --block-length < gen-length)",
        flag="--early-stop",
        api=True,
    )
    # (the rest of its window becomes [EOS]); needs semi-AR blocks to save steps
    daedal: bool = option(
        False,
        "turn DAEDAL on (the --daedal-* options do too)",
        flag="--daedal",
        group=DAEDAL,
        api=True,
    )
    # DAEDAL (seer.diffusion.daedal): the window starts at daedal_initial, grows by end-token
    # confidence, and grows inside during denoising; gen_length is its cap (the official
    # max_gen_length); steps and block_length do not apply (daedal_block does).
    # Defaults: the official script's (scripts/eval_LLaDA_DAEDAL.sh)
    daedal_initial: int = _daedal(64, "initial_gen_length: the first window", "--daedal-initial")
    daedal_block: int = _daedal(
        32, "block_length: blocks over the growing window", "--daedal-block"
    )
    daedal_expand: int = _daedal(
        8,
        "expansion_factor: masks added per sizing step and per insertion point",
        "--daedal-expand",
    )
    daedal_high: float = _daedal(
        0.9, "high_conf_threshold: reveal every block mask above it (at least one)", "--daedal-high"
    )
    daedal_low: float = _daedal(
        0.1, "low_conf_threshold: a mask below it may become an insertion point", "--daedal-low"
    )
    daedal_eos: float = _daedal(
        0.5,
        "eos_confidence_threshold: sizing stops once the end confidence reaches it",
        "--daedal-eos",
    )
    daedal_expand_eos: float = _daedal(
        0.9,
        "expand_eos_confidence_threshold: no insertion once the end confidence reaches it",
        "--daedal-expand-eos",
    )
    daedal_eos_tokens: int = _daedal(
        32,
        "eos_check_tokens: end-token positions averaged from the window's end",
        "--daedal-eos-tokens",
    )
    rho_eos: bool = option(
        False,
        "turn rho-EOS on (the --rho-* options do too)",
        flag="--rho-eos",
        group=RHO_EOS,
        api=True,
    )
    # ρ-EOS (seer.diffusion.rho_eos): the window starts at rho_initial and grows or shrinks every
    # step by the end-token density; gen_length is its cap (the official max_gen_length); steps
    # and block_length do not apply (rho_block does).
    # Defaults: the official script's (scripts/eval_LLaDA_rho_EOS.sh)
    rho_initial: int = _rho(64, "initial_gen_length: the first window", "--rho-initial")
    rho_block: int = _rho(32, "block_length: blocks over the changing window", "--rho-block")
    rho_expand: int = _rho(
        8, "expansion_factor: the unit K of every growth and shrink (x1..x8)", "--rho-expand"
    )
    rho_reveal: float = _rho(
        0.9, "high_conf_threshold: reveal every block mask above it (at least one)", "--rho-reveal"
    )
    rho_low: float = _rho(
        0.4, "low_density_threshold: the window grows while the density is below it", "--rho-low"
    )
    rho_high: float = _rho(
        0.6,
        "high_density_threshold: the window shrinks while the density is above it",
        "--rho-high",
    )
    rho_eos_tokens: int = _rho(
        32,
        "eos_check_tokens: end-token positions averaged from the window's end",
        "--rho-eos-tokens",
    )
    rho_scheduler: str = _rho(
        "exp",
        "scheduler: how K grows with the density's distance to the band (exp 1,2,4,8; linear "
        "1,2,3..8; const 1)",
        "--rho-scheduler",
        choices=RHO_SCHEDULERS,
        noun="rho_scheduler",
    )

    def __post_init__(self) -> None:
        self._check_types()
        for f, spec in specs(SamplingParams):  # each option's range or choices, as declared
            check(f.name, spec, getattr(self, f.name))
        self._check_parallel()
        self._check_daedal()
        self._check_rho_eos()
        for name in ("banned_ids", "suffix"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))  # frozen: normalise lists once
        if isinstance(self.stop, str) or any(isinstance(s, str) for s in self.stop):
            raise SeerError("stop takes token-id sequences; encode stop words with the tokenizer")
        object.__setattr__(self, "stop", tuple(tuple(map(int, s)) for s in self.stop))
        if any(not s for s in self.stop):
            raise SeerError("stop sequences must hold at least one token id each")
        if self.steps is not None and self.steps > self.gen_length and not self.sets_length:
            raise SeerError(
                f"steps {self.steps} exceeds gen_length {self.gen_length}: there are only "
                f"{self.gen_length} tokens to reveal, so the extra steps do nothing but cost "
                "time; use at most gen_length steps"
            )
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
        """threshold / factor (Fast-dLLM): one of them, with a top-k rule."""
        if self.threshold is not None and self.factor is not None:
            raise SeerError("give threshold or factor, not both (two parallel-decoding rules)")
        if self.parallel and (self.remasking == "origin" or self.alg_temp):
            raise SeerError(
                "threshold/factor rank positions by confidence: use a top-k rule "
                "(not remasking='origin', no alg_temp)"
            )

    def _check_daedal(self) -> None:
        """Nothing DAEDAL does not compose with (its options' ranges are declared)."""
        if self.daedal:
            self._check_length_policy(
                "daedal", "daedal_initial", "DAEDAL", "it inserts masks inside the window"
            )

    def _check_rho_eos(self) -> None:
        """Nothing ρ-EOS does not compose with (its options' ranges are declared)."""
        if not self.rho_eos:
            return
        if self.daedal:
            raise SeerError("daedal and rho_eos both set the answer length: turn one of them off")
        if self.rho_low > self.rho_high:
            raise SeerError(
                f"rho_low {self.rho_low} exceeds rho_high {self.rho_high}: the window keeps its "
                "length while the density lies between them; give rho_low <= rho_high"
            )
        self._check_length_policy(
            "rho_eos", "rho_initial", "rho-EOS", "it changes the window every step"
        )

    def _check_length_policy(self, name: str, option: str, who: str, how: str) -> None:
        """A policy that sets the length while it denoises (DAEDAL, ρ-EOS): its first window
        (`option`) fits gen_length, it reveals by confidence, and it has its own reveal and end
        rules."""
        initial = getattr(self, option)
        if initial > self.gen_length:
            raise SeerError(
                f"{option} {initial} exceeds gen_length {self.gen_length} (the longest window "
                f"{who} may grow to): lower {option} or raise gen_length"
            )
        if self.remasking not in (None, "low_confidence"):
            raise SeerError(
                f"{name} reveals by confidence as LLaDA's sampler does: use "
                f"remasking='low_confidence', not {self.remasking!r}"
            )
        clash = [option for option, on in (
            ("cache", self.cache != "none"), ("threshold", self.threshold is not None),
            ("factor", self.factor is not None), ("early_stop", self.early_stop),
            ("stop", bool(self.stop)), ("suffix", bool(self.suffix)),
            ("logits_eos_inf", self.logits_eos_inf),
            ("confidence_eos_eot_inf", self.confidence_eos_eot_inf)) if on]  # fmt: skip
        if clash:
            raise SeerError(
                f"{name} does not combine with {clash[0]} ({how} and has its own reveal and end "
                "rules); drop one of them"
            )

    @property
    def sets_length(self) -> bool:
        """A policy that sets the answer length itself runs (DAEDAL, ρ-EOS): Seer, a fixed
        window and the guard do not apply."""
        return self.daedal or self.rho_eos

    @property
    def parallel(self) -> bool:
        """Confidence-driven parallel decoding (threshold or factor): a block runs until it
        has no masks, revealing as many positions per step as the rule accepts."""
        return self.threshold is not None or self.factor is not None

    def _check_types(self) -> None:
        """Each option has its type (an int is a float too; a bool is neither), or one line."""
        for f in fields(self):
            check_type(f, getattr(self, f.name), "bad generation option: ")
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
    def layout_key(self) -> tuple[object, ...]:
        """What rows sharing one forward must agree on: what changes the tensors or the forward
        (the KV cache, classifier-free guidance, the suffix; under a cache the block layout too).
        Everything else — temperature, top-p/top-k, seed, threshold/factor, stop sequences,
        gen_length, steps, the unmasking rule — is held per row (`LoopState.rows`). DAEDAL and
        ρ-EOS re-plan every row with the run's options: their rows agree on all but the seed."""
        if self.daedal:
            return ("daedal", replace(self, seed=None))
        if self.rho_eos:
            return ("rho_eos", replace(self, seed=None))
        blocks = (self.gen_length, self.total_steps, self.block) if self.cache != "none" else ()
        return (self.cache, self.dpad_window, self.cfg_scale, self.suffix, *blocks)

    @property
    def sampling_key(self) -> tuple[object, ...]:
        """The options one reveal reads (`unmask.propose`, `select`, the counting rule): rows
        equal in these and drawing nothing random are revealed together."""
        return (
            self.temperature,
            self.remasking,
            self.alg_temp,
            self.top_p,
            self.top_k,
            self.logits_eos_inf,
            self.confidence_eos_eot_inf,
            self.eps,
            self.counting,
            self.banned_ids,
            self.threshold,
            self.factor,
        )

    @property
    def draws(self) -> bool:
        """Whether a reveal draws random numbers (sampled tokens or positions)."""
        return self.temperature > 0 or self.remasking in ("random", "origin") or bool(self.alg_temp)

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
        """These params with `rule` (the model's unmasking rule) where none is given."""
        return self if self.remasking else replace(self, remasking=rule)

    def resolve(self, rule: str) -> SamplingParams:
        """These params made concrete for a model whose unmasking rule is `rule`, and the rules
        that depend on it checked (cfg_scale is LLaDA's). `seer.engine.request.resolve` calls it
        once per request and checks the rules that need the window policy; `Engine.add` checks
        the prompt."""
        p = self.with_defaults(rule)
        if p.cfg_scale > 0 and p.remasking not in LLADA_RULES:
            raise SeerError("cfg_scale is only defined for LLaDA's remasking rules")
        return p
