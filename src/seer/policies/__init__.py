"""What each decoding policy is, declared once: its options, its traits and its rules.

A decoding policy (DAEDAL, ρ-EOS, Fast-dLLM's threshold/factor, dInfer's early stop, stop
sequences, DPad) has two halves:

- its *declaration* here, one module each (`seer.policies.daedal`, ...), torch-free so that
  `seer --help` and the option pages read it without loading torch: its options (a frozen
  dataclass whose fields are declared with `seer.spec.option`, under the flat names the front
  ends show: `daedal_initial`, `--daedal-initial`), the bool option that turns it on (if any),
  its `Traits` and its rules against the core sampling options;
- its *hooks* (`seer.diffusion.policy.DecodePolicy`), in the module that `Declaration.hooks`
  names (`seer.diffusion.daedal`): what the one loop calls.

`REGISTRY` lists the declarations. `SamplingParams` holds the core sampling options and the
options of the policies that are on (`SamplingParams.policies`); the flat view of both
(`flat_fields`) is what the CLI, the server, the harness, the web page and the options
reference are generated from, so they are unchanged by where an option is declared.
Compatibility is checked once, from the traits (`check`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, cast

from seer.errors import SeerError
from seer.spec import Spec, spec_of


@dataclass(slots=True, frozen=True)
class Traits:
    """What the loop and `check` need to know of a policy, read once per run."""

    sets_length: bool = False  # decides the answer length (no window policy, no other such one)
    caches: tuple[str, ...] | None = None  # the KV caches it runs with (None: every one)
    whole_window: bool = False  # its steps read the logits of the whole answer window
    limits: bool = False  # it limits which masks the unmasking rule may reveal (`limit`)
    alone: bool = False  # it has its own reveal and end rules: no other decoding policy runs
    rules: tuple[str, ...] | None = None  # the unmasking rules it runs with (None: every one)
    refuses: tuple[str, ...] = ()  # core options it cannot run with unless at their default


@dataclass(slots=True, frozen=True)
class Declaration:
    """One decoding policy as the options and `check` see it (module docstring)."""

    name: str  # as the user names it: its switch, else its first option (one-line errors)
    options: type  # frozen dataclass of its options (fields declared with `seer.spec.option`)
    traits: Traits
    hooks: str | None  # module whose `build(loop, rows, device)` makes its `DecodePolicy`
    # (None: the loop runs it through another seam, e.g. DPad's cache policy)
    switch: Field | None = None  # the bool option that turns it on (its name is `name`)
    on: Callable[[dict[str, Any]], bool] | None = None  # without a switch: on for these
    # flat options (e.g. a threshold is given)
    needs: tuple[str, Any] | None = None  # (core option, value) that turns it on, and that
    # its options given in `policies` set (DPad: cache='dpad')
    check: Callable[[Any], None] | None = None  # its rules against the core options
    how: str = ""  # why it runs alone ("it inserts masks inside the window"), said in errors
    group: str = ""  # the CLI argument group of its options ("": the sampling group)
    group_help: str = ""  # that group's description in `--help`
    doc: str = ""  # that group's paragraph on the options reference page
    after: str | None = None  # the core option its options follow in the flat view (None:
    # after every core option), so `--help` and the pages list it beside what it goes with

    def names(self) -> tuple[str, ...]:
        """Its flat option names: the switch, then the options."""
        own = tuple(f.name for f in fields(self.options))
        return ((self.name,) if self.switch is not None else ()) + own

    def wanted(self, flat: dict[str, Any]) -> bool:
        """Whether flat options (`SamplingParams`' keywords) turn it on."""
        if self.switch is not None:
            return flat.get(self.name) is True
        if self.needs is not None:
            return flat.get(self.needs[0]) == self.needs[1]
        assert self.on is not None  # a declaration without a switch says when it is on
        return self.on(flat)

    def given(self, opts: Any) -> str:
        """The option a user gave to turn it on, as errors name it (`threshold`, `daedal`)."""
        if self.switch is not None:
            return self.name
        for f in fields(self.options):
            if getattr(opts, f.name) != f.default:
                return f.name
        return self.name


def decides(name: str) -> str:
    """The one line for a length-setting policy beside a window policy (Seer, a fixed window)."""
    return (
        f"{name} sets the answer length itself: drop Seer / the fixed window (they do not "
        "compose: both decide the length)"
    )


def fits_cap(p: Any, option: str, who: str) -> None:
    """A length-setting policy's first window (`option`) fits `gen_length`, its cap."""
    initial = getattr(p, option)
    if initial > p.gen_length:
        raise SeerError(
            f"{option} {initial} exceeds gen_length {p.gen_length} (the longest window {who} "
            f"may grow to): lower {option} or raise gen_length"
        )


def check(p: Any) -> None:
    """The policies that are on in `p` (a `SamplingParams`) compose with each other and with
    its core options: said by their traits, then each policy's own rules."""
    on = [(d, o) for d in REGISTRY if (o := p.options_of(d.name)) is not None]
    setters = [d.name for d, _ in on if d.traits.sets_length]
    if len(setters) > 1:
        raise SeerError(
            f"{setters[0]} and {setters[1]} both set the answer length: turn one of them off"
        )
    for d, _ in on:
        t = d.traits
        if t.caches is not None and p.cache not in t.caches:
            raise SeerError(f"{d.name} does not combine with cache={p.cache!r}; drop one of them")
        if t.rules is not None and p.remasking not in (None, *t.rules):
            raise SeerError(
                f"{d.name} reveals by confidence as LLaDA's sampler does: use "
                f"remasking={t.rules[0]!r}, not {p.remasking!r}"
            )
        clash = [o_d.given(o) for o_d, o in on if o_d is not d and o_d.hooks] if t.alone else []
        clash += [name for name in t.refuses if getattr(p, name) != CORE_DEFAULTS[name]]
        if clash:
            raise SeerError(
                f"{d.name} does not combine with {clash[0]} ({d.how} and has its "
                "own reveal and end rules); drop one of them"
            )
    if sum(d.traits.limits for d, _ in on) > 1:
        raise SeerError("two policies limit the reveal: keep one")
    for d, _ in on:
        if d.check is not None:
            d.check(p)


def _copy(f: Field[Any]) -> Field[Any]:
    """A fresh field with `f`'s default and spec (a field belongs to one class)."""
    if f.default is MISSING:
        raise TypeError(f"option {f.name} needs a default")
    return cast("Field[Any]", field(default=f.default, metadata=f.metadata))


def flat_fields(core: type) -> list[tuple[str, Any, Field[Any]]]:
    """`make_dataclass` fields of the flat view: `core`'s declared options with each policy's
    switch and options after the core option it names (`after`), else at the end, in
    `REGISTRY` order."""
    out = [(f.name, f.type, _copy(f)) for f in fields(core) if spec_of(f) is not None]
    policy = {name for d in REGISTRY for name in d.names()}
    for d in REGISTRY:
        own: list[tuple[str, Any, Field[Any]]] = []
        if d.switch is not None:
            own.append((d.name, "bool", _copy(d.switch)))
        own += [(f.name, f.type, _copy(f)) for f in fields(d.options)]
        names = [name for name, *_ in out]
        at = names.index(d.after) + 1 if d.after is not None else len(out)
        while d.after is not None and at < len(out) and out[at][0] in policy:
            at += 1  # after the policies placed there before it
        out[at:at] = own
    return out


def owners() -> dict[str, Declaration]:
    """Each flat policy option's name -> the declaration that holds it."""
    return {name: d for d in REGISTRY for name in d.names()}


def spec(name: str) -> Spec | None:
    """The declared spec of a flat policy option."""
    d = owners().get(name)
    if d is None:
        return None
    if name == d.name and d.switch is not None:
        return spec_of(d.switch)
    return next(spec_of(f) for f in fields(d.options) if f.name == name)


CORE_DEFAULTS: dict[str, Any] = {}  # core option -> default (filled by `seer.sampling`)

# the registry: a new policy is its declaration module and one line here (the order is the
# order of the flat options and of the hooks the loop calls)
from seer.policies import daedal, dpad, early_stop, parallel, rho_eos, stop  # noqa: E402

REGISTRY: tuple[Declaration, ...] = (
    parallel.DECLARATION,  # Fast-dLLM's threshold / factor: closes filled blocks
    early_stop.DECLARATION,  # dInfer's early stop: a filled block holding [EOS] ends the row
    stop.DECLARATION,  # stop sequences (LLaDA-V's stopping_criteria)
    dpad.DECLARATION,  # DPad's suffix dropout (a cache policy: `cache='dpad'`)
    daedal.DECLARATION,  # DAEDAL: the window grows while the end is unsure
    rho_eos.DECLARATION,  # ρ-EOS: the window grows or shrinks by the end-token density
)

# each policy's options, for `SamplingParams(policies=(...))`
Parallel, EarlyStop, Stop = parallel.Parallel, early_stop.EarlyStop, stop.Stop
DPad, Daedal, RhoEos = dpad.DPad, daedal.Daedal, rho_eos.RhoEos
