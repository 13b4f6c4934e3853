"""One input processor: `seer.engine.request` turns what a caller passes (prompts of any kind,
images, `seer=`, sampling options) into resolved `Request`s, and `seer.engine.prompts` encodes
and checks their prompts (text, chats, ids, images). The resolvers and encoders live there and
only there, and the front ends that take a user's input reach them from there (read with `ast`,
so a lazy import counts)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import seer
from seer.engine.request import process, rows, single
from seer.errors import SeerError

SRC = Path(seer.__file__).parent
PROCESSOR = {"engine/request.py", "engine/prompts.py"}
MODULES = ("seer.engine.request", "seer.engine.prompts", "seer.engine")  # and the lazy names
# the names that make a request concrete (the model's defaults under the options, Seer's
# settings, the prompt's rows)
RESOLVERS = {
    "defaults",
    "resolve",
    "process",
    "seer_config",
    "sampling",
    "check_cache",
    "rows",
    "single",
}
# the names that encode and check a prompt (text, a chat, ids, images)
ENCODERS = {"encode", "prompt_input", "prompt_inputs", "chat_ready", "encode_chat"}
ENTRY = RESOLVERS | ENCODERS
# who calls them: the library (generate / stream; sampling, encode / prompt / canvas), `seer
# batch` (its requests, its rows' chats, and its CLI's cache check), the server (the body's
# options and a chat's refusals; the prompt encoded off the engine's thread), the page, the
# engine (submit / generate; every request's prompt at add), the harness, and the library's
# Seer readers
CALLERS = {
    "lm.py": {"defaults", "process", "single", "encode", "prompt_input", "prompt_inputs"},
    "batch.py": {"resolve", "encode_chat"},
    "commands/batch.py": {"check_cache"},
    "serve/convert.py": {"resolve", "chat_ready"},
    "serve/prepare.py": {"encode_chat", "prompt_inputs"},
    "ui/page.py": {"resolve", "seer_config"},
    "engine/engine.py": {"resolve", "prompt_inputs"},
    "harness/lm_eval.py": {"process"},
    "harness/lmms_eval.py": {"process"},
    "demo.py": {"seer_config"},
    "provenance.py": {"seer_config"},
    "throughput.py": {"seer_config"},
    "calibrate/profile.py": {"seer_config"},
}


def _imports(path: Path) -> set[str]:
    """The resolvers and encoders a module imports from the processor (`seer.engine.request`,
    `seer.engine.prompts` or the package's lazy names), under any local name."""
    got = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module in MODULES:
            got |= {a.name for a in node.names if a.name in ENTRY}
    return got


def _defines(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ENTRY}


def test_the_resolvers_are_defined_once_in_the_processor():
    assert _defines(SRC / "engine/request.py") == RESOLVERS
    assert _defines(SRC / "engine/prompts.py") == ENCODERS
    distinct = {"resolve", "process", "seer_config", "check_cache", *ENCODERS - {"encode"}}
    others = {
        str(p.relative_to(SRC)): names
        for p in SRC.rglob("*.py")
        if p.relative_to(SRC).as_posix() not in PROCESSOR and (names := _defines(p) & distinct)
    }
    # same names, other things: a data source's path; the stored config a benchmark measures
    # with (it asks the processor's `seer_config`)
    assert others == {"data/parallelbench.py": {"resolve"}, "throughput.py": {"seer_config"}}


def test_the_front_ends_call_the_processor_and_no_one_else_does():
    calls = {
        p.relative_to(SRC).as_posix(): names
        for p in SRC.rglob("*.py")
        if p.relative_to(SRC).as_posix() not in PROCESSOR | {"engine/__init__.py"}
        and (names := _imports(p))
    }
    assert calls == CALLERS


def test_rows_split_every_kind_of_prompt_and_refuse_a_mix():
    assert rows("hi") == [("hi", None)] and single("hi") and not single(["hi", "ho"])
    assert rows([1, 2, 3], "img") == [([1, 2, 3], "img")]
    assert rows(["a", "b"], ["x", None]) == [("a", "x"), ("b", None)]
    ids = torch.tensor([[0, 5, 6], [7, 8, 9]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    assert [q for q, _ in rows(ids, None, mask)] == [[5, 6], [7, 8, 9]]
    with pytest.raises(SeerError, match="a list of one kind"):
        rows(["a", [1, 2]])
    with pytest.raises(SeerError, match="2 images for 1 prompts"):
        rows("a", ["x", "y"])
    with pytest.raises(SeerError, match="no prompt given"):
        rows([])


def test_process_resolves_once_and_gives_one_request_per_row():
    lm = seer.load("builtin")
    got = process(lm, ["add 1 and 2", "add 3 and 4"], gen_length=8, steps=8, seer=True)
    assert [r.prompt for r in got] == ["add 1 and 2", "add 3 and 4"]
    assert all(r.resolved and r.params == got[0].params and r.seer is got[0].seer for r in got)
    assert got[0].params.gen_length == 8 and got[0].seer is not None
    assert process(lm, "hi", gen_length=8, policy=True, seer=True)[0].seer is None


def test_the_rules_that_need_the_model_are_said_in_one_line():
    lm = seer.load("builtin")
    with pytest.raises(SeerError, match="^cfg_scale is only defined for LLaDA's remasking rules$"):
        process(lm, "hi", cfg_scale=1.0, remasking="entropy")
    with pytest.raises(SeerError, match="^daedal sets the answer length itself: drop Seer"):
        process(lm, "hi", gen_length=64, daedal=True, seer=True)


def test_one_chat_encoder_speaks_each_front_ends_words():
    """The library, `seer batch` and the server encode a whole chat through `encode_chat`; a
    refusal is worded by the front end that passes its words in."""
    from seer.engine.prompts import chat_ready, encode_chat

    lm = seer.load("builtin")
    turn = [{"role": "user", "content": "add 1 and 2"}]
    assert encode_chat(lm, turn) == lm.encode("add 1 and 2")  # one user turn: the text's ids
    with pytest.raises(SeerError, match="^a chat message is a dict of a role and a text content$"):
        encode_chat(lm, [{"role": "user", "content": 3}])
    chat_ready(lm, one_turn="one turn", no_template="no template")  # a text model with a template
    vqa = seer.load("builtin-vqa")  # a prompt processor: one user turn a request
    with pytest.raises(SeerError, match="^row 7: one turn$"):
        encode_chat(vqa, turn, one_turn="row 7: one turn", no_template="no template")
    lm.tokenizer.chat_template = None  # this copy's tokenizer only
    with pytest.raises(SeerError, match="^no template$"):
        encode_chat(lm, turn, one_turn="one turn", no_template="no template", strict=False)


def _calls(name: str) -> set[str]:
    """The modules that call `name` (a function or a method) anywhere."""
    out = set()
    for p in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                if getattr(f, "attr", getattr(f, "id", None)) == name:
                    out.add(p.relative_to(SRC).as_posix())
    return out


def test_the_defaults_are_laid_in_one_place():
    """A caller's options go over the model's defaults in the processor only (`defaults`, which
    `lm.sampling` is); the loader lays the model's own files (`ModelDefaults.build`), and the
    run record fills the rule of the params it is given."""
    laid = {
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ImportFrom)
        and node.module == "seer.models.defaults"
        and any(a.name == "layer" for a in node.names)
    }
    assert laid == {"engine/request.py"}  # and `ModelDefaults.build`, beside `layer`
    assert _calls("with_defaults") == {"engine/request.py", "provenance.py"}
    lm = seer.load("builtin")
    from seer.engine.request import defaults

    assert lm.sampling(gen_length=8) == defaults(lm, gen_length=8) != lm.sampling()
    with pytest.raises(SeerError, match="^unknown generation option 'gen_lenght'"):
        lm.sampling(gen_lenght=8)
