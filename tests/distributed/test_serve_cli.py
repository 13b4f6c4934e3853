"""`seer serve --replicas`: every user mistake is one `seer: error:` line, before Ray starts."""

from __future__ import annotations

import socket
import sys

import pytest

pytest.importorskip("fastapi")  # the serve extra

from seer.cli import main  # noqa: E402


def _error(capsys, *argv: str) -> str:
    assert main(["serve", "--model", "builtin", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("seer: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--replicas", "0"], "--replicas: must be >= 1, got 0"),
        (["--min-replicas", "2"], "--min-replicas needs --replicas N"),
        (["--ray-address", "auto"], "--ray-address needs --replicas N"),
        (["--replicas", "2", "--min-replicas", "3"], "--min-replicas <= --replicas"),
        (["--replicas", "3", "--max-replicas", "2"], "got 3 <= 3 <= 2"),
        (["--replicas", "2", "--model", "/no/such/model"], "does not exist"),
    ],
)
def test_bad_replica_options_are_one_line(capsys, argv, says):
    assert says in _error(capsys, *argv)


def test_replicas_without_ray_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    monkeypatch.setitem(sys.modules, "ray.serve", None)
    assert "pip install 'seer[ray]'" in _error(capsys, "--replicas", "2")


def test_a_taken_port_is_an_error_before_ray_starts(capsys):
    pytest.importorskip("ray.serve")
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = str(s.getsockname()[1])
        assert "choose another --port" in _error(capsys, "--replicas", "1", "--port", port)
