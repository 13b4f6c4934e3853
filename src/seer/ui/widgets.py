"""The page's option fields, each made from its option's spec (`seer.spec`), as the CLI's flags
and the server's request fields are: the option's name as the label, its help as the field's
info line, its choices, its bounds and its default come from the dataclass field, never
re-typed here. The page passes the value to show where it shows the model's own default
(`lm.sampling()`, seer.json) rather than the dataclass's.

A number's bounds guide the field (the browser's arrows stop there) but are not Gradio's to
enforce: Gradio would refuse a value out of range with its own pop-up before the page runs,
where the library's one line (`gen_length must be >= 1, got 0`) belongs in the page's
message area, as every other mistake's does.
"""

from __future__ import annotations

from dataclasses import MISSING

import gradio as gr

from seer.boundary.config import SeerConfig
from seer.spec import Spec, kind, specs

PREFIX = {SeerConfig: "Seer "}  # said before the option's name: "Seer signal"


def widget(cls, name: str, value=MISSING, label: str | None = None, **kw) -> gr.Component:
    """The field of option `name` of config dataclass `cls`: a `gr.Number` (an int's precision 0,
    its bounds), a `Dropdown` of its choices or a `Checkbox`, showing `value` (default: the
    option's own default). `label`: the page's words for it where it means more there
    ("threshold (0: off)"); `kw`: more Gradio arguments (elem_id)."""
    declared = {f.name: (f, s) for f, s in specs(cls)}  # SamplingParams: its flat view's
    if name not in declared:
        raise TypeError(f"{cls.__name__}.{name} is not a declared option")
    f, s = declared[name]
    value = f.default if value is MISSING else value
    common = {"label": label or PREFIX.get(cls, "") + name, "info": s.help, **kw}
    k = kind(f)
    if s.choices:
        return _tag(gr.Dropdown(list(s.choices), value=value, **common), cls, name)
    if k is bool:
        return _tag(gr.Checkbox(value=value, **common), cls, name)
    if k in (int, float):
        low, high = bounds(s)
        number = gr.Number(
            value, precision=0 if k is int else None, minimum=low, maximum=high, **common
        )
        number.preprocess = _unbounded(number)  # type: ignore[method-assign]
        return _tag(number, cls, name)
    raise TypeError(f"{cls.__name__}.{name} has no field on the page (not a scalar option)")


def bounds(s: Spec) -> tuple[float | None, float | None]:
    """A number field's (minimum, maximum): the spec's, where Gradio's inclusive bounds can say
    them (an open lower bound, `> 0`, is left to the library's check)."""
    return (None if s.open_lo else s.lo), s.hi


def _unbounded(number: gr.Number):
    """`number`'s preprocess without Gradio's bounds check (module docstring). Set on the
    instance: a subclass of a Gradio component writes a .pyi file beside its module."""
    precision = number.precision

    def preprocess(payload: float | None) -> float | int | None:
        return None if payload is None else gr.Number.round_to_precision(payload, precision)

    return preprocess


def option_of(component) -> tuple[type, str] | None:
    """(config class, option name) of a field `widget` made; None for the page's own fields."""
    return getattr(component, "seer_option", None)


def _tag(component, cls, name: str):
    component.seer_option = (cls, name)
    return component


__all__ = ["bounds", "option_of", "widget"]
