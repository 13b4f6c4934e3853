"""Options declared once: each field of a config dataclass carries its help, its range or
choices and the names the front ends give it, and every front end is generated from that.

    steps: int | None = option(None, "denoising steps", lo=1, flag="--steps", api=True)

- the library (`SamplingParams.__post_init__`, `SeerConfig`) checks types and ranges with
  `check_type` and `check`;
- the CLI (`seer.commands.options`) builds its argument groups with `argparse_kwargs`;
- the server (`seer.serve.protocol`) builds its pydantic request fields with `problem` as their
  validator;
- the harness (`seer.harness.options`) takes every scalar field as a model argument.

A bad value gets one message everywhere: `problem` says what is wrong ("must be >= 1, got 0")
and each front end puts its own name for the option before it (`steps must be ...` in the
library, `argument --steps: must be ...` on the command line, `steps: must be ...` in a 400).
So adding an option is one field (plus its implementation). vLLM's `EngineArgs` / `get_kwargs`
(argparse arguments read from config dataclasses) is the model; here the metadata is explicit,
since our flags have their own names (`--alg` for `remasking`, `max_tokens` for `gen_length`).

Nothing here imports torch: `seer --help` reads these specs.
"""

from __future__ import annotations

import argparse
import math
import numbers
from collections.abc import Callable, Collection
from dataclasses import Field, dataclass, field, fields
from typing import Any, cast

from seer.errors import SeerError

KIND_TEXT = {int: "an integer", float: "a number", str: "a string", bool: "True or False"}


@dataclass(frozen=True, slots=True)
class Spec:
    """What the front ends need to know of one option (a dataclass field's metadata)."""

    help: str  # one line for `--help`, the API schema and the docs
    lo: float | None = None  # smallest value allowed (None: unbounded)
    hi: float | None = None  # largest value allowed (None: unbounded)
    open_lo: bool = False  # lo itself is refused (> lo rather than >= lo)
    says: str | None = None  # the range in words, when bounds say it badly ("a 64-bit integer")
    note: str = ""  # what the range means, said after the bound ("a confidence in [0, 1]")
    choices: tuple[str, ...] = ()  # the values a str option takes
    noun: str = "value"  # a bad choice is "unknown {noun} 'x'; choose one of ..."
    hint: str = ""  # said after the choices of a bad choice
    flag: str | None = None  # the CLI flag; None: not on the command line
    aliases: tuple[str, ...] = ()  # more CLI flags for it (--alg for --remasking)
    negatable: bool = False  # bool flag with a --no- form (it overrides a stored True)
    group: str = ""  # the CLI argument group it is listed in
    metavar: str | None = None  # the CLI's name for the value (default: N or X by kind)
    api: bool | str = False  # in the server's request body (True: under its own name)
    implies: str | None = None  # giving this option turns that bool option on (daedal_* -> daedal)
    scale: float = 1  # the CLI's value times this is the field's (--max-body-mb: MB -> bytes)
    none: str = ""  # what None means, said after the bound in the library's message ("no bound")


def option(default: Any, help: str, **spec: Any) -> Any:
    """A dataclass field with its `Spec` (see the module docstring)."""
    return field(default=default, metadata={"spec": Spec(help, **spec)})


def spec_of(f: Field[Any]) -> Spec | None:
    return cast("Spec | None", f.metadata.get("spec"))


def specs(cls: type[Any]) -> list[tuple[Field[Any], Spec]]:
    """The declared options of a dataclass, in field order. A class composed of others (core
    options and the decoding policies' own, `seer.sampling.SamplingParams`) names its flat view
    in `__spec_view__`: its options are that view's."""
    view = getattr(cls, "__spec_view__", None)
    return [(f, s) for f in fields(view or cls) if (s := spec_of(f)) is not None]


def kind(f: Field[Any]) -> type | None:
    """The scalar type of a field (int, float, str, bool) from its annotation; None for others
    (token-id tuples). `x: int | None` is an int that may be None."""
    text = str(f.type).split("|")[0].strip()
    return {"int": int, "float": float, "str": str, "bool": bool}.get(text)


def optional(f: Field[Any]) -> bool:
    return "None" in str(f.type)


def type_ok(k: type, value: Any) -> bool:
    """`value` is of kind `k`: an int is a float too, a bool is neither."""
    if k is bool or k is str:
        return isinstance(value, k)
    want = numbers.Integral if k is int else numbers.Real
    return isinstance(value, want) and not isinstance(value, bool)


def check_type(
    f: Field[Any], value: Any, prefix: str = "", words: dict[type, str] = KIND_TEXT
) -> None:
    """A `SeerError` unless `value` has the field's kind (None passes where the type allows)."""
    k = kind(f)
    if k is None or (value is None and optional(f)) or type_ok(k, value):
        return
    raise SeerError(f"{prefix}{f.name} must be {words[k]}, got {value!r}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def problem(s: Spec, value: Any, shown: str | None = None, library: bool = False) -> str | None:
    """What is wrong with a value of the right type, as the tail of a message; None if nothing.
    `shown`: how to print the value (the CLI shows the text the user typed); `library`: say
    what None means too (a flag cannot be None)."""
    if value is None:
        return None
    got = value if shown is None else shown
    if s.choices:
        if value not in s.choices:
            choose = ", ".join(s.choices)
            return f"unknown {s.noun} {value!r}; choose one of {choose}{s.hint}"
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {got}"
    x = cast(float, value)  # a real number (the stubs give numbers.Real no comparisons)
    low = s.lo is not None and (x <= s.lo if s.open_lo else x < s.lo)
    high = s.hi is not None and x > s.hi
    if not (low or high):
        return None
    lo, hi = cast(float, s.lo), cast(float, s.hi)  # the bound that refused it is set
    bound = f"{'>' if s.open_lo else '>='} {_num(lo)}" if low else f"<= {_num(hi)}"
    need = s.says or bound
    notes = [s.note, f"or None for {s.none}" if library and s.none else ""]
    note = "".join(f" ({n})" for n in notes if n)
    return f"must be {need}{note}, got {got}"


def message(name: str, s: Spec, value: Any) -> str | None:
    """The library's one line for a bad value of option `name` (None: the value is fine)."""
    tail = problem(s, value, library=True)
    if tail is None:
        return None
    return tail if s.choices else f"{name} {tail}"


def check(name: str, s: Spec, value: Any) -> None:
    text = message(name, s, value)
    if text is not None:
        raise SeerError(text)


def validate(obj: Any, prefix: str = "", words: dict[type, str] = KIND_TEXT) -> None:
    """Each declared option of dataclass `obj` checked against its spec: its type, then its
    range or choices (`prefix` names the config in the message: "Seer option layer ...").
    The rules between options stay in the dataclass's `__post_init__`."""
    for f, s in specs(type(obj)):
        value = getattr(obj, f.name)
        check_type(f, value, prefix, words)
        check(f"{prefix}{f.name}", s, value)


def defaults(cls: type[Any]) -> dict[str, Any]:
    """Each declared option of `cls` -> its one default (what every front end must show)."""
    return {f.name: f.default for f, _ in specs(cls)}


def implied(cls: type[Any], options: dict[str, Any]) -> dict[str, Any]:
    """`options` with the bool options that given ones imply turned on (a `daedal_*` option
    turns `daedal` on); an implied option given as False is refused in one line."""
    out = dict(options)
    for f, s in specs(cls):
        if s.implies and out.get(f.name) is not None:
            if out.get(s.implies) is False:
                name = s.implies
                raise SeerError(f"{name}_* options were given with {name} false: drop one")
            out[s.implies] = True
    return out


# -- the command line -------------------------------------------------------------------------
def number(k: type, s: Spec) -> Callable[[str], Any]:
    """An argparse type: the flag's text as `k`, checked as the library checks it (a scaled
    option's text is a number of its CLI unit, MB or megapixels, turned into the field's)."""
    scaled = s.scale != 1

    def parse(text: str) -> Any:
        try:
            value = (float if scaled else k)(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {k.__name__}, got {text!r}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if scaled:
            value = k(value * s.scale)
        tail = problem(s, value, shown=text)
        if tail is not None:
            raise argparse.ArgumentTypeError(tail)
        return value

    parse.__name__ = k.__name__
    return parse


def argparse_kwargs(
    f: Field[Any], s: Spec, dest: str, choices: bool = True, show_default: bool = False
) -> dict[str, Any]:
    """`add_argument` keywords of an option: default None (the library decides), the type that
    checks the range, argparse's choices (`choices=False`: the library says which names it
    knows), a flag for a bool. `show_default`: the help says the field's default (in the
    CLI's unit), for options whose default is the dataclass's rather than the model's."""
    k = kind(f)
    help = s.help
    if show_default and f.default is not None and k is not bool:
        default: Any = f.default
        shown = default / s.scale if s.scale != 1 else default
        help += f" (default {_num(shown) if k in (int, float) else shown})"
    kw: dict[str, Any] = {"dest": dest, "default": None, "help": help}
    if k is bool:
        kw["action"] = argparse.BooleanOptionalAction if s.negatable else "store_true"
        return kw
    if k in (int, float):
        kw.update(type=number(k, s), metavar=s.metavar or ("N" if k is int else "X"))
    elif s.choices and choices:
        kw["choices"] = s.choices
    else:
        kw.update(type=str, metavar=s.metavar or "NAME")
    return kw


def add_flags(
    p: argparse._ActionsContainer, cls: type[Any], names: Collection[str] | None = None
) -> None:
    """One flag per declared option of `cls` that has one (only `names`, when given), each
    saying its default; the value lands under the field's name, None when not given."""
    for f, s in specs(cls):
        if s.flag and (names is None or f.name in names):
            p.add_argument(s.flag, *s.aliases, **argparse_kwargs(f, s, f.name, show_default=True))


def given(args: argparse.Namespace, cls: type[Any]) -> dict[str, Any]:
    """The options of `cls` the user gave on the command line (field -> value); the others
    are left to the dataclass's defaults."""
    return {f.name: v for f, s in specs(cls) if (v := getattr(args, f.name, None)) is not None}
