"""seer.progress: quiet off a terminal or when switched off; one display at a time."""

from __future__ import annotations

import sys

import pytest

from seer import progress


@pytest.fixture(autouse=True)
def _reset():
    yield
    progress.set_enabled(None)
    progress.set_lines(None)


def test_quiet_when_stderr_is_not_a_terminal(capsys):
    assert list(progress.track(range(3), "counting")) == [0, 1, 2]
    with progress.status("loading"), progress.bar("working", 2) as advance:
        advance(2)
    assert capsys.readouterr().err == ""


def test_quiet_when_switched_off_even_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert progress.enabled()
    progress.set_enabled(False)
    assert list(progress.track([1, 2], "counting")) == [1, 2]
    with progress.status("loading"):
        pass
    assert capsys.readouterr().err == ""


def test_shows_when_enabled_and_nested_displays_stay_silent(capsys):
    progress.set_enabled(True)
    with progress.status("loading the model"):
        assert not progress.enabled()  # one display at a time
        assert list(progress.track(range(4), "inner")) == [0, 1, 2, 3]
    items = list(progress.track(iter(range(5)), "counting", total=5))
    err = capsys.readouterr().err
    assert items == [0, 1, 2, 3, 4]
    assert "loading the model" in err and "counting" in err and "inner" not in err


def test_the_cli_quiet_flag_and_environment(monkeypatch, capsys, tmp_path):
    from seer.cli import main

    calls: list = []
    monkeypatch.setattr(progress, "set_enabled", calls.append)
    main(["--quiet", "make-checkpoint", "--out", str(tmp_path / "a"), "--width", "16"])
    main(["make-checkpoint", "--out", str(tmp_path / "b"), "--width", "16", "-q"])
    assert calls == [False, False]
    monkeypatch.setenv("SEER_NO_PROGRESS", "1")
    main(["make-checkpoint", "--out", str(tmp_path / "c"), "--width", "16"])
    monkeypatch.setenv("SEER_NO_PROGRESS", "0")
    main(["make-checkpoint", "--out", str(tmp_path / "d"), "--width", "16"])
    assert calls == [False, False, False]
    capsys.readouterr()


def test_plain_lines_off_a_terminal_when_a_front_end_asks(capsys):
    progress.set_lines(0.0)  # a line at every advance (the CLI: every 30 s)
    with progress.bar("batch → out.jsonl", 4) as advance:
        advance(1)
        advance(3, info="2.0 rows/s")
    with progress.status("loading builtin", first=True):
        pass
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("batch → out.jsonl: 1/4 (25%), 0s elapsed, ~")
    assert lines[1].endswith("4/4 (100%), 0s elapsed, 2.0 rows/s")  # the end: said once
    assert lines[2] == "loading builtin ..."  # what starts, at once
    assert lines[3].startswith("loading builtin: done in") and len(lines) == 4
    assert "\x1b" not in "".join(lines)  # no terminal codes in a log
    progress.set_enabled(False)  # --quiet wins
    with progress.bar("batch", 2) as advance:
        advance(2)
    assert capsys.readouterr().err == ""


def test_a_repeated_library_warning_shows_once_then_one_line_with_the_count(caplog):
    import logging

    log = logging.getLogger("seer.models")
    with caplog.at_level(logging.WARNING, "seer.models"), progress.one_line_per_kind():
        for words in (["Zoë"], ["Åke", "Zoë"], ["Ñu"]):
            log.warning(
                "unknown", extra={"seer_repeat": ("unknown words", len(words), words, "<|unk|>")}
            )
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "unknown" and len(said) == 2
    assert said[1] == (
        "seer: warning: in all, 3 prompts held 4 piece(s) outside the model's "
        "vocabulary, read as <|unk|> (e.g. 'Zoë', 'Åke', 'Ñu')"
    )


def test_a_silent_stretch_still_prints_a_line_every_interval(capsys):
    import time

    progress.set_lines(1.0)
    with progress.bar("batch → out.jsonl", 10):
        time.sleep(2.5)  # no row finishes: the heartbeat still speaks
    with progress.status("loading builtin", first=True):
        time.sleep(2.5)
    lines = capsys.readouterr().err.splitlines()
    bar = [x for x in lines if x.startswith("batch → out.jsonl: 0/10 (0%)")]
    assert bar and all("left" not in x for x in bar)  # nothing done: no guess at the time left
    assert lines[len(bar)] == "loading builtin ..."
    assert any(x.startswith("loading builtin: ") and x.endswith("elapsed") for x in lines)


def test_the_time_left_counts_the_steps_of_the_rows_in_flight(capsys, monkeypatch):
    clock = iter([0.0, 600.0, 600.0, 600.0, 600.0, 600.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    progress.set_lines(30.0)
    with progress.bar("batch → out.jsonl", 60) as advance:
        # 10 minutes in: 1 row done, and the 29 rows in flight half done (their steps)
        advance(1, partial=14.5)
    line = capsys.readouterr().err.splitlines()[0]
    # 15.5 rows' worth done in 600 s: ~44.5 x 38.7 s left (the old guess: 59 x 600 s = 590 min)
    assert line == "batch → out.jsonl: 1/60 (2%), 10m00s elapsed, ~28m42s left", line
