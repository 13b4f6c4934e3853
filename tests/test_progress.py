"""seer.progress: quiet off a terminal or when switched off; one display at a time."""

from __future__ import annotations

import sys

import pytest

from seer import progress


@pytest.fixture(autouse=True)
def _reset():
    yield
    progress.set_enabled(None)


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
