"""A new user's first hour: what is refused before torch is imported (one line each), the
thread count chosen for the model's size, the first line of a command, the server's URL, and
answers that say when they reached their window's end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seer import threads
from seer.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import sys; from seer.cli import main; rc = main(sys.argv[1:]); "
    "print(json.dumps([rc, 'torch' in sys.modules]))"
)


def _before_torch(argv: list[str]) -> str:
    """Run `seer ARGV` in a fresh interpreter; assert it exits 2 with one line on stderr and
    never imported torch; return that line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SEER_NO_PROGRESS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "import json; " + PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    rc, torch_imported = json.loads(done.stdout.strip().splitlines()[-1])
    lines = done.stderr.strip().splitlines()
    assert rc == 2 and len(lines) == 1, done.stderr
    assert not torch_imported, f"torch was imported before refusing {argv}"
    assert lines[0].startswith("seer: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["generate", "--model", "/no/such/model", "--prompt", "x"], ["does not exist"]),
        (["generate", "--model", "builtn", "--prompt", "x"], ["did you mean builtin?"]),
        (
            ["batch", "--model", "bultin-vqa", "--data", "builtin", "--out", "a.jsonl"],
            ["did you mean builtin-vqa?"],
        ),
        (["calibrate", "--model", "builtin-vq"], ["did you mean builtin-vqa?"]),
        (["generate", "--model", "src", "--prompt", "x"], ["has no config.json"]),
        (["generate", "--model", "builtin", "--prompt", "   "], ["empty prompt"]),
        (
            ["generate", "--model", "builtin", "--prompt", "x", "--gen-length", "100000"],
            ["--gen-length 100000", "context of 1024"],
        ),
        (
            ["generate", "--model", "builtin", "--promt", "x"],
            ["unknown option --promt", "did you mean --prompt?", "(see seer generate --help)"],
        ),
        (
            ["generate", "--model", "builtin", "--prompt", "x", "--seer-sigal", "eos_prob"],
            ["unknown option --seer-sigal", "--seer-signal", "(see seer generate --help)"],
        ),
        (
            ["batch", "--data", "builtin", "--out", "a.jsonl", "--modle", "builtin"],
            ["unknown option --modle", "--model", "(see seer batch --help)"],
        ),
    ],
)
def test_a_mistake_is_refused_in_one_line_before_torch_is_imported(argv, words):
    line = _before_torch(argv)
    for w in words:
        assert w in line, line


def test_abbreviations_and_values_that_look_like_options_are_not_unknown():
    from seer.cli import build_parser, unknown_option

    p = build_parser()
    assert unknown_option(p, ["generate", "--mod", "builtin", "--prompt", "x"]) is None
    assert unknown_option(p, ["generate", "--model=builtin", "--prompt=--x"]) is None
    assert unknown_option(p, ["-q", "generate", "--model", "builtin", "--", "--odd"]) is None


# -- threads ------------------------------------------------------------------------------------
@pytest.fixture
def torch_threads(monkeypatch):
    """torch's thread count as a user gets it (no OMP_NUM_THREADS), restored afterwards."""
    before = torch.get_num_threads()
    for k in threads.ENVIRONMENT:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setitem(threads._STATE, "ours", None)
    yield
    torch.set_num_threads(before)


def _start_count() -> int:
    n = max(threads._cores())
    torch.set_num_threads(n)  # torch's own start-up count (one per core)
    return n


def test_a_small_model_gets_one_thread_a_large_one_every_core(torch_threads):
    _start_count()
    small = torch.nn.Linear(8, 8)
    assert threads.choose(small, torch.device("cpu")) == 1 == torch.get_num_threads()
    assert threads.for_size(threads.SMALL_MODEL) == max(threads._cores())
    assert threads.for_size(threads.SMALL_MODEL - 1) == 1
    big = torch.nn.Linear(threads.SMALL_MODEL // 1000, 1000, bias=False, device="meta")
    assert threads.choose(big, torch.device("cpu")) == max(threads._cores())  # Seer's 1 undone
    torch.set_num_threads(1)  # a user's own count: a large model does not undo it
    threads._STATE["ours"] = None
    assert threads.choose(big, torch.device("cpu")) == 1


def test_the_users_thread_count_wins(torch_threads, monkeypatch):
    small = torch.nn.Linear(8, 8)
    cpu = torch.device("cpu")
    assert threads.choose(small, cpu, threads=3) == 3  # threads= (the CLI's --threads)
    torch.set_num_threads(5)  # the user's own set_num_threads (not torch's start-up count)
    assert threads.choose(small, cpu) == 5
    n = _start_count()
    monkeypatch.setenv("OMP_NUM_THREADS", str(n))  # the environment
    assert threads.choose(small, cpu) == n
    assert threads.choose(small, torch.device("meta")) == torch.get_num_threads()


def test_loading_the_builtin_model_picks_one_thread(torch_threads):
    import seer

    _start_count()
    seer.load("builtin")
    assert torch.get_num_threads() == 1


def test_the_cli_passes_threads_to_the_library(monkeypatch, capsys):
    import seer

    seen = {}

    def load(name, **kw):
        seen.update(kw, name=name)
        raise seer.SeerError("stop here")

    monkeypatch.setattr(seer, "load", load)
    assert main(["generate", "--model", "builtin", "--prompt", "x", "--threads", "2"]) == 2
    assert seen["threads"] == 2 and seen["name"] == "builtin"


# -- first lines ----------------------------------------------------------------------------------
def test_the_first_line_says_what_loads_from_where_before_it_loads(monkeypatch, capsys):
    import seer
    from seer import progress

    progress.set_enabled(None)  # an earlier in-process `--quiet` call of another test left it off

    def load(name, **kw):
        assert "loading builtin from" in capsys.readouterr().err  # said before the load starts
        raise seer.SeerError("stop here")

    monkeypatch.setattr(seer, "load", load)
    assert main(["generate", "--model", "builtin", "--prompt", "x"]) == 2


def test_seer_serve_prints_the_url_it_listens_on(monkeypatch, capsys):
    import socket

    import seer.serve

    pytest.importorskip("fastapi")

    class LM:
        name = "builtin-vqa"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr("seer.commands.options.load", lambda args, name=None: LM())
    monkeypatch.setattr(seer.serve, "serve", lambda *a, **k: None)
    assert main(["serve", "--port", str(port)]) == 0
    err = capsys.readouterr().err
    assert f"seer: serving builtin-vqa on http://127.0.0.1:{port} (OpenAI API at /v1" in err


# -- answers that reached their window's end -------------------------------------------------------
def test_an_answer_that_fills_its_window_says_so(capsys):
    """A prompt whose answer fills the window: `--json` says it reached the window's end, and a
    plain run says it in one line; an answer that ends inside its window says nothing."""
    from seer.engine.request import GenerationStats

    full = GenerationStats(nfe=8, seconds=0.1, tokens=8, window=8, gen_length=32, grown=1)
    assert full.hit_window
    assert not GenerationStats(8, 0.1, 5, 8, 32).hit_window
    from seer.commands.generate import changed_shape

    line = changed_shape(full)
    assert "the guard grew Seer's window 1 time(s)" in line and "end of Seer's window" in line
    assert changed_shape(GenerationStats(8, 0.1, 5, 8, 32)) is None
    argv = [
        "generate",
        "--model",
        "builtin",
        "--prompt",
        "x",
        "--gen-length",
        "8",
        "--steps",
        "4",
        "--json",
        "--threads",
        "1",
    ]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["hit_window"] == (record["tokens"] >= record["window"])
    assert "guard_grew" in record


def test_batch_rows_and_the_api_carry_hit_window_and_grown():
    from seer.batch import output_row
    from seer.data import Example
    from seer.engine.request import RequestResult
    from seer.serve.responses import seer_info

    res = RequestResult(
        0, "a b c d", [5] * 4, 4, 3, 4, None, 4, 0.1, 0.1, "length", "eager", grown=2, gen_length=32
    )
    row = output_row(Example(id="r0", prompt="x"), res)
    assert row["hit_window"] is True and row["grown"] == 2
    info = seer_info(res, 32)
    assert info["hit_window"] is True and info["grown"] == 2
