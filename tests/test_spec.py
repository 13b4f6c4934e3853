"""Options declared once (`seer.spec`): every `SamplingParams` field that declares a front end
is reachable there with the same default, and a bad value gets the same line everywhere."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest
from pydantic import ValidationError

from seer.boundary.config import SeerConfig
from seer.errors import SeerError
from seer.harness.options import HarnessOptions
from seer.policies import REGISTRY
from seer.sampling import SamplingParams
from seer.serve.errors import validation_message
from seer.serve.protocol import ChatRequest
from seer.spec import kind, problem, spec_of, specs

HI = [{"role": "user", "content": "hi"}]
SAMPLING = specs(SamplingParams)
SCALAR = [(f, s) for f, s in SAMPLING if kind(f) is not None]


def _parser() -> argparse.ArgumentParser:
    from seer.cli import build_parser

    return build_parser()


def _cli(*argv: str) -> dict:
    from seer.commands import options

    args = _parser().parse_args(["generate", "--model", "m", "--prompt", "p", *argv])
    return options.sampling(args)


def _api(f, s) -> str:
    return s.api if isinstance(s.api, str) else f.name


def _good(f, s):
    """A valid value of the option other than its default."""
    k = kind(f)
    if k is bool:
        return True
    if k is str:
        return next(c for c in s.choices if c != f.default)
    if k is int:
        return int(s.lo) + 1 if s.lo is not None else 2
    return (s.lo + s.hi) / 2 if s.hi is not None else (s.lo or 0) + 0.5


def _bad(f, s):
    """A value outside the declared range, that prints the same as text, int and float."""
    if kind(f) is int:
        return int(s.lo) - 1 if s.lo is not None else int(s.hi) + 1
    return s.lo - 0.5 if s.lo is not None else s.hi + 0.5


def test_every_option_declares_its_help_and_the_front_ends_see_it():
    # every core field but `policies` declared, and every policy's switch and options
    core = set(SamplingParams.__dataclass_fields__) - {"policies"}
    own = {name for d in REGISTRY for name in d.names()}
    names = [f.name for f, _ in SAMPLING]
    assert len(names) == len(set(names)) and set(names) == core | own
    assert all(spec_of(f) for d in REGISTRY for f in fields(d.options))
    flags = {f.name for f, s in SAMPLING if s.flag}
    api = {_api(f, s) for f, s in SAMPLING if s.api}
    assert all(s.help for _, s in SAMPLING)
    args = _parser().parse_args(["generate", "--model", "m", "--prompt", "p"])
    assert flags <= set(vars(args))
    assert api <= set(ChatRequest.model_fields)
    # what stays off the CLI and the server today (the harness takes every scalar option);
    # token ids have no flag or JSON number form
    off = {"logits_eos_inf", "confidence_eos_eot_inf", "eps"}
    assert {f.name for f, _ in SCALAR} - flags == off
    assert {f.name for f, s in SAMPLING if not s.api} == off | {"banned_ids", "stop", "suffix"}
    assert {f.name for f, s in SAMPLING if kind(f) is None} == {"banned_ids", "stop", "suffix"}


def test_unset_options_leave_the_default_to_the_model_everywhere():
    assert _cli() == {}
    assert ChatRequest(model="m", messages=HI).options() == {}
    opts = HarnessOptions.from_args()
    assert opts.sampling == {} and opts.gen_length is None


@pytest.mark.parametrize(("f", "s"), SCALAR, ids=[f.name for f, _ in SCALAR])
def test_a_given_option_reaches_sampling_the_same_from_each_front_end(f, s):
    value = _good(f, s)
    want = {f.name: value, **({s.implies: True} if s.implies else {})}
    SamplingParams(**want)  # a valid value
    if s.flag:
        argv = [s.flag] if kind(f) is bool else [s.flag, str(value)]
        assert _cli(*argv) == want
    if s.api:
        assert ChatRequest(model="m", messages=HI, **{_api(f, s): value}).options() == want
    opts = HarnessOptions.from_args(**{f.name: str(value)})  # lm-eval may pass text
    got = {**opts.sampling, **({"gen_length": opts.gen_length} if opts.gen_length else {})}
    assert got == want or (f.name == "seed" and opts.seed == value)


RANGED = [(f, s) for f, s in SAMPLING if s.lo is not None or s.hi is not None]


@pytest.mark.parametrize(("f", "s"), RANGED, ids=[f.name for f, _ in RANGED])
def test_an_out_of_range_value_gets_the_same_line_from_each_entry_point(f, s, capsys):
    bad = _bad(f, s)
    tail = problem(s, bad)
    assert tail and tail.startswith("must be ") and "\n" not in tail
    with pytest.raises(SeerError) as lib:
        SamplingParams(**{f.name: bad})
    assert str(lib.value) == f"{f.name} {tail}"
    with pytest.raises(SeerError) as harness:
        HarnessOptions.from_args(**{f.name: str(bad)})
    assert str(harness.value) == f"{f.name} {tail}"
    if s.flag:
        with pytest.raises(SystemExit):
            _cli(s.flag, str(bad))
        assert f"argument {s.flag}: {tail}" in capsys.readouterr().err
    if s.api:
        with pytest.raises(ValidationError) as server:
            ChatRequest(model="m", messages=HI, **{_api(f, s): bad})
        assert validation_message(server.value.errors()) == (f"{_api(f, s)}: {tail}", _api(f, s))


CHOICES = [(f, s) for f, s in SAMPLING if s.choices]


@pytest.mark.parametrize(("f", "s"), CHOICES, ids=[f.name for f, _ in CHOICES])
def test_a_name_not_among_the_choices_is_refused_by_each_entry_point(f, s, capsys):
    line = problem(s, "nope")
    assert line.startswith(f"unknown {s.noun} 'nope'; choose one of ")
    with pytest.raises(SeerError) as lib:
        SamplingParams(**{f.name: "nope"})
    assert str(lib.value) == line
    with pytest.raises(SeerError) as harness:
        HarnessOptions.from_args(**{f.name: "nope"})
    assert str(harness.value) == line
    with pytest.raises(ValidationError) as server:
        ChatRequest(model="m", messages=HI, **{_api(f, s): "nope"})
    assert validation_message(server.value.errors())[0] == f"{_api(f, s)}: {line}"
    with pytest.raises(SystemExit):  # argparse lists the choices itself
        _cli(s.flag, "nope")
    assert "invalid choice: 'nope'" in capsys.readouterr().err


SEER_RANGED = [(f, s) for f, s in specs(SeerConfig) if s.lo is not None]


@pytest.mark.parametrize(("f", "s"), SEER_RANGED, ids=[f.name for f, _ in SEER_RANGED])
def test_seer_ranges_are_the_librarys(f, s, capsys):
    """Each Seer flag refuses what SeerConfig refuses, and takes its boundary when SeerConfig
    does (SeerConfig words some ranges together, as its users have read them)."""
    bad = _bad(f, s)
    with pytest.raises(SeerError):
        SeerConfig(**{f.name: bad})
    with pytest.raises(SystemExit):
        _parser().parse_args(["generate", "--model", "m", "--prompt", "p", s.flag, str(bad)])
    assert f"argument {s.flag}: {problem(s, bad)}" in capsys.readouterr().err
    edge = s.lo + (0.5 if s.open_lo else 0)
    edge = int(edge) if kind(f) is int else float(edge)
    SeerConfig(**{f.name: edge})  # inside the range: accepted


def test_daedal_options_turn_daedal_on_and_refuse_daedal_false_everywhere():
    assert _cli("--daedal-initial", "8") == {"daedal_initial": 8, "daedal": True}
    with pytest.raises(SeerError, match="daedal false"):
        ChatRequest(model="m", messages=HI, daedal=False, daedal_initial=8).options()
    with pytest.raises(SeerError, match="daedal false"):
        HarnessOptions.from_args(daedal=False, daedal_initial=8)


def test_rho_options_turn_rho_eos_on_everywhere():
    assert _cli("--rho-low", "0.3") == {"rho_low": 0.3, "rho_eos": True}
    assert _cli("--rho-scheduler", "linear") == {"rho_scheduler": "linear", "rho_eos": True}
    body = ChatRequest(model="m", messages=HI, rho_initial=16).options()
    assert body == {"rho_initial": 16, "rho_eos": True}
    with pytest.raises(SeerError, match="rho_eos false"):
        HarnessOptions.from_args(rho_eos=False, rho_high=0.7)
