"""A user's first runs show Seer's cut on the shipped models: the README's `seer generate ...
--seer` example and Python quick start, `seer demo --text`'s requests, `seer bench`, `stream` and
the web page's default prompts. Each must cut the window (a boundary found, fewer positions and
forwards than the full window), not only answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import seer

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def text_lm():
    return seer.load("builtin")


def _cut(g) -> None:
    assert g.boundary is not None and g.boundary.length is not None, g.boundary
    assert g.stats.window < g.stats.gen_length and g.stats.nfe < g.stats.gen_length


def test_the_readme_generate_example_reports_a_cut():
    line = next(
        x
        for x in README.splitlines()
        if x.startswith("seer generate --model builtin") and "--seer" in x
    )
    command = line.split("  #")[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=300, check=True
    )
    record = json.loads(out.stdout)
    assert record["boundary"]["length"] is not None, out.stderr
    assert record["nfe"] < record["gen_length"] and record["window"] < record["gen_length"]
    assert "no boundary" not in out.stderr


def test_the_readme_python_quick_start_cuts(capsys):
    block = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    runnable = block.split("\n\n")[:2]  # the import and the built-in model's lines
    assert 'seer.load("builtin")' in runnable[1]
    scope: dict = {}
    exec("\n\n".join(runnable), scope)
    _cut(scope["g"])
    assert "L*=" in capsys.readouterr().out


def test_stream_reports_the_cut(text_lm):
    from seer.demo import text_requests

    last = list(text_lm.stream(text_requests("builtin")[0].prompt, seer=True))[-1]
    _cut(last.result)


def test_seer_demo_text_requests_are_all_cut(text_lm):
    from seer.batch import encoder
    from seer.demo import text_requests

    encode = encoder(text_lm)
    requests = text_requests("builtin")
    gens = [text_lm.generate(encode(text_lm, ex), seer=True) for ex in requests]
    for g in gens:
        _cut(g)


def test_seer_bench_runs_seer_rows_on_cut_windows(text_lm):
    from seer import throughput
    from seer.engine import Engine

    g = text_lm.sampling().gen_length  # seer bench's default window: the model's
    p = text_lm.sampling(gen_length=g, steps=g, temperature=0.0)
    cfg = throughput.seer_config(text_lm)
    held = throughput.heldout(text_lm, 16, p)
    routed = throughput.requests(held, "seer-routed", p, cfg)
    out = Engine(text_lm, throughput.engine_config("seer-routed", 16, 0.4)).generate(routed)
    assert all(o.boundary is not None and o.boundary.length is not None for o in out)
    assert sum(o.nfe for o in out) < 0.5 * g * len(out)  # well under the full window's forwards


@pytest.mark.parametrize("name", ["builtin", "builtin-vqa"])
def test_the_web_pages_default_prompt_is_cut(name):
    from seer.ui.page import _example

    lm = seer.load(name)
    prompt, image = _example(lm)
    assert prompt
    _cut(lm.generate(prompt, image=image, seer=True))


# what each command of the README needs installed beyond `pip install -e .` (pyproject's extras)
NEEDS = {
    "seer serve": {"serve"},
    "seer ui": {"serve", "ui"},
    "--replicas": {"ray"},
    "--ray ": {"ray"},
    "mkdocs": {"docs"},
    "lm_eval": {"eval"},
}


def _readme_commands() -> list[str]:
    from test_docs_commands import commands

    return [c for _, c in commands(ROOT / "README.md")]


def test_the_readme_installs_each_extra_before_the_first_command_that_needs_it():
    installed: set[str] = set()
    order = _readme_commands()
    assert order[0].startswith("python3 -m venv") and "seer demo" in order[0]  # install first
    for command in order:
        for step in command.split("&&"):
            if m := re.search(r'pip install -e "\.\[([^\]]*)\]"', step):
                installed |= set(m.group(1).split(","))
                continue
            needs = set().union(*(v for k, v in NEEDS.items() if k in step + " "))
            assert needs <= installed, f"{step.strip()!r} needs {needs - installed} first"


@pytest.mark.slow
def test_the_readme_quick_start_commands_run_as_written_in_order(tmp_path):
    """Every README command a new user can run as written (no placeholder folder, no server),
    in the README's order, in a fresh folder."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("OMP_NUM_THREADS", None)  # the defaults a user gets
    runnable = [
        c
        for c in _readme_commands()
        if c.startswith("seer ") and not c.startswith(("seer serve", "seer ui")) and "DIR" not in c
    ]
    assert [c.split()[1] for c in runnable] == ["demo", "generate", "batch"]
    for command in runnable:
        done = subprocess.run(
            ["bash", "-c", command],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=3600,
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])
        said = done.stderr.splitlines()  # what it loads, and from where, at once
        assert any(x.startswith("loading builtin") and " from " in x for x in said[:2]), said[:3]
    assert (tmp_path / "seer-demo.png").is_file() and (tmp_path / "answers.jsonl").is_file()
