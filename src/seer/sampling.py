"""Typed, validated configuration: per-request `SamplingParams` and the token ids of a model.

Validation happens in `__post_init__` (types, each option's declared range or choices, the rules
between options) and in `seer.engine.request.resolve` (the rules that need the model), and every
failure is a `SeerError` whose message names the problem and the fix.

`SamplingParams` holds the core sampling options and the options of the decoding policies that
are on (`policies`); each policy declares its own options, traits and rules in its module
(`seer.policies`). `SamplingOptions` is the flat view of both — one field per option, under the
names every front end shows — generated from the declarations: `seer.spec.specs(SamplingParams)`
reads it, so the CLI flags, the server's fields, the harness, the web page and the options
reference are generated from the policies' own declarations.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass, field, fields, make_dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from seer import policies as registry
from seer.errors import SeerError
from seer.spec import check, check_type, option, spec_of, specs

LLADA_RULES = ("low_confidence", "random")  # LLaDA's remasking: linear schedule, semi-AR blocks
DREAM_RULES = ("origin", "maskgit_plus", "topk_margin", "entropy")  # Dream's algorithms
RULES = LLADA_RULES + DREAM_RULES
CACHES = ("none", "prefix", "dual", "prefix_lm", "dpad")  # KV-cache policies (seer.diffusion.cache)
# the models loadable by name (`builtin_folder`): the two shipped in the package
# (seer/assets/<name>: the text model v2 and the multimodal model v2), and the first text and
# multimodal models, kept in the repository (checkpoints/<name>) for its tests and the
# records measured on them, not in the package. Each one's own task is the data source of the
# same name (`seer.data.builtin`).
SHIPPED_MODELS = ("builtin", "builtin-vqa")
RETIRED_MODELS = ("builtin-v1", "builtin-vqa-v1")
BUILTIN_MODELS = SHIPPED_MODELS + RETIRED_MODELS
SCHEDULES = ("linear", "timestep", "shift")  # reveal counts per step (seer.diffusion.schedule)
# LLaDA's Gumbel-max divides exp(logits) by (-log u) ** temperature in float64: past ~20 the
# power underflows to 0 for u near 1 (and overflows for u near 0), the draw becomes inf / inf
# and the answer garbage; 10 keeps every term finite (and is already all but uniform)
MAX_TEMPERATURE = 10


def builtin_folder(name: str) -> Path:
    """The folder of a built-in model: a shipped one's in the package (seer/assets/<name>); a
    retired one's in the repository beside the package (checkpoints/<name>), so it loads
    by name from a checkout only; elsewhere a `SeerError` says where it lives."""
    package = Path(str(resources.files("seer")))
    if name in SHIPPED_MODELS:
        return package / "assets" / name
    if name not in RETIRED_MODELS:
        raise SeerError(f"unknown built-in model {name!r}; choose {', '.join(BUILTIN_MODELS)}")
    folder = package.parents[1] / "checkpoints" / name
    if not (folder / "config.json").is_file():
        raise SeerError(
            f"{name} is not in the package: it lives in the Seer repository "
            f"(checkpoints/{name}); run from a checkout of it, pass that folder, or use "
            f"{' / '.join(SHIPPED_MODELS)}"
        )
    return folder


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


SUFFIX_RULE = "a generation suffix needs cache='none' and no window policy (Seer)"


@dataclass(slots=True, frozen=True)
class SamplingParams:
    """How to denoise one request: the core sampling options and the decoding policies that are
    on, each with its options. `None` fields take the model family's default.

    Each core field declares its help, range and front-end names (`seer.spec`), and each policy
    its own (`seer.policies`): the CLI flags, the server's request fields and the harness's model
    arguments are generated from them (`SamplingOptions`, the flat view).

    Two ways to turn a policy on, equal in every way (the same object, the same hash):

        SamplingParams(gen_length=64, policies=(Daedal(daedal_initial=32),))
        SamplingParams(gen_length=64, daedal=True, daedal_initial=32)  # the flat keywords

    The flat keywords are the names the front ends use (`--daedal-initial`, the server's
    `daedal_initial`), kept as the library's too: a policy's switch (`daedal`, `rho_eos`,
    `early_stop`) or its options (`threshold`, `stop`; DPad: `cache='dpad'`) turn it on, as
    `policies` does; options of a policy left off are checked, then dropped. Every flat name
    reads back as an attribute (`p.daedal`, `p.daedal_initial`, `p.threshold`: the policy's
    value, or its declared default when it is off) and `dataclasses.replace` takes them too."""

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
    suffix: tuple[int, ...] = option((), "ids fixed after the answer window")
    # (LLaDA-V's generation_suffix): attended to, never revealed, not part of the answer
    policies: tuple[Any, ...] = field(default=())
    # the options of each decoding policy that is on (`seer.policies`: `Daedal`, `RhoEos`,
    # `Parallel`, `EarlyStop`, `Stop`, `DPad`), one each, kept in the registry's order

    def __post_init__(self) -> None:
        self._check_policies()
        self._check_types()
        for f, spec in specs(SamplingParams):  # each option's range or choices, as declared
            check(f.name, spec, getattr(self, f.name))
        for name in ("banned_ids", "suffix"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))  # frozen: normalise lists once
        self._normalise_stop()
        registry.check(self)  # the policies compose: from their traits, once
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

    def _check_policies(self) -> None:
        """`policies` holds options of declared policies, one each, kept in registry order."""
        kinds = {d.options: d for d in registry.REGISTRY}
        given = self.policies
        if not isinstance(given, (tuple, list)) or any(type(o) not in kinds for o in given):
            raise SeerError(
                "policies takes the options of decoding policies (seer.policies: "
                f"{', '.join(k.__name__ for k in kinds)}), got {given!r}"
            )
        if len({type(o) for o in given}) < len(given):
            raise SeerError("policies holds each policy once")
        order = [d.options for d in registry.REGISTRY]
        object.__setattr__(
            self, "policies", tuple(sorted(given, key=lambda o: order.index(type(o))))
        )

    def _normalise_stop(self) -> None:
        """Stop sequences as tuples of int ids, none empty (or one line)."""
        stop = self.stop
        if isinstance(stop, str) or any(isinstance(s, str) for s in stop):
            raise SeerError("stop takes token-id sequences; encode stop words with the tokenizer")
        clean = tuple(tuple(map(int, s)) for s in stop)
        if any(not s for s in clean):
            raise SeerError("stop sequences must hold at least one token id each")
        if clean != stop:
            ps = tuple(replace(o, stop=clean) if hasattr(o, "stop") else o for o in self.policies)
            object.__setattr__(self, "policies", ps)

    def __getattr__(self, name: str) -> Any:
        """A policy's option by its flat name (`p.daedal_initial`; a switch: `p.daedal`): its
        value, or its declared default when the policy is off."""
        d = _OWNERS.get(name)
        if d is None:
            raise AttributeError(f"'SamplingParams' object has no attribute {name!r}")
        opts = self.options_of(d.name)
        if d.switch is not None and name == d.name:
            return opts is not None
        return getattr(opts, name) if opts is not None else _POLICY_DEFAULTS[name]

    def options_of(self, name: str) -> Any:
        """The options of policy `name` (`seer.policies`) if it is on, else None."""
        kind = _KINDS[name]
        return next((o for o in self.policies if type(o) is kind), None)

    def flat(self) -> dict[str, Any]:
        """Every option under its flat name (`SamplingOptions`' fields): what the front ends
        and `SamplingParams(**...)` speak."""
        return {f.name: getattr(self, f.name) for f in fields(SamplingOptions)}

    def _check_types(self) -> None:
        """Each option has its type (an int is a float too; a bool is neither), or one line."""
        for f in fields(SamplingOptions):
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
        if self.sets_length:
            return ("sets_length", replace(self, seed=None))
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
    def sets_length(self) -> bool:
        """A policy that sets the answer length itself is on (its traits say so: DAEDAL,
        ρ-EOS): Seer, a fixed window and the guard do not apply."""
        return bool(self.length_setters)

    @property
    def length_setters(self) -> list[str]:
        """The names of the policies on that set the answer length (`sets_length`)."""
        return [d.name for o in self.policies if (d := _DECLARED[type(o)]).traits.sets_length]

    @property
    def parallel(self) -> bool:
        """Confidence-driven parallel decoding (threshold or factor): a block runs until it
        has no masks, revealing as many positions per step as the rule accepts."""
        return self.threshold is not None or self.factor is not None

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


# -- the flat view and the flat keywords -------------------------------------------------------
_DECLARED = {d.options: d for d in registry.REGISTRY}  # options class -> its declaration
_KINDS = {d.name: d.options for d in registry.REGISTRY}  # policy name -> its options class
_OWNERS = registry.owners()  # flat policy option -> its declaration
_CORE = {f.name for f in fields(SamplingParams)}  # the core keywords (and `policies`)
registry.CORE_DEFAULTS.update({f.name: f.default for f in fields(SamplingParams)})

# one field per option, core then each policy's (switch, options), under its flat name
SamplingOptions = make_dataclass(
    "SamplingOptions",
    registry.flat_fields(SamplingParams),
    frozen=True,
    slots=True,
)
SamplingOptions.__module__ = __name__
SamplingOptions.__doc__ = "The flat view of `SamplingParams`: every option the front ends show."
_VIEW = {f.name: f for f in fields(SamplingOptions)}
_POLICY_DEFAULTS = {name: _VIEW[name].default for name in _OWNERS}
SamplingParams.__spec_view__ = SamplingOptions  # type: ignore[attr-defined]  # `seer.spec.specs`


def _fold(kw: dict[str, Any]) -> dict[str, Any]:
    """Keywords of `SamplingParams` with the flat policy options folded into `policies`: each
    given one checked (type and range, as the library says it), and each policy that the flat
    options turn on (`Declaration.wanted`) built from them over what `policies` holds."""
    flat = {k: v for k, v in kw.items() if k in _OWNERS}
    for name, value in flat.items():
        check_type(_VIEW[name], value, "bad generation option: ")
        spec = spec_of(_VIEW[name])
        if spec is not None:
            check(name, spec, value)
    out = {k: v for k, v in kw.items() if k not in _OWNERS}
    held = out.get("policies", ())
    if not isinstance(held, (tuple, list)):
        return out  # `_check_policies` says what is wrong
    given: dict[str, Any] = {}
    if len({type(o) for o in held}) < len(held):
        return out  # `_check_policies` says what is wrong
    for o in held:
        d = _DECLARED.get(type(o))
        if d is None:
            return out
        if d.switch is not None:
            given[d.name] = True
        if d.needs is not None:
            out.setdefault(*d.needs)  # DPad's options given: cache='dpad'
        given |= {f.name: getattr(o, f.name) for f in fields(o)}
    given = {k: v for k, v in given.items() if v is not None} | flat
    given |= {k: out[k] for k in ("cache",) if k in out}
    ps = []
    for d in registry.REGISTRY:
        if d.wanted(given):
            names = [f.name for f in fields(d.options) if f.name in given]
            ps.append(d.options(**{name: given[name] for name in names}))
    out["policies"] = tuple(ps)
    return out


_dataclass_init = SamplingParams.__init__


@functools.wraps(_dataclass_init)  # help() and signature() show the dataclass's keywords
def _init(self: SamplingParams, *args: Any, **kw: Any) -> None:
    _dataclass_init(self, *args, **_fold(kw))


SamplingParams.__init__ = _init  # type: ignore[method-assign]  # the flat keywords too

# kept for callers of the flat era: the policies' groups and rules, said by their declarations
DAEDAL = registry.daedal.GROUP
RHO_EOS = registry.rho_eos.GROUP
RHO_SCHEDULERS = registry.rho_eos.SCHEDULERS
