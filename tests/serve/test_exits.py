"""How `seer serve` starts and ends: one line and exit 2 when it cannot listen (checked before
the model loads); exit 0 after any clean shutdown, whatever signal started it (SIGINT, SIGTERM,
a second signal during the drain), each running request answered with 503 ``shutting_down``.
"""

from __future__ import annotations

import signal
import socket
import threading
import time

import pytest
from serve_helpers import Server, httpx, metrics, total

from seer.cli import main

MODEL = "builtin-v1"
LONG = {"model": MODEL, "prompt": "spell sun", "max_tokens": 448, "steps": 448}


@pytest.mark.parametrize("host", ["999.1.1.1", "no-such-host.invalid"])
def test_a_host_that_is_not_this_machine_is_one_line(host, capsys):
    assert main(["serve", "--model", MODEL, "--host", host, "--port", "8000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"seer: error: cannot listen on --host {host}")


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_an_empty_api_key_is_refused(command, capsys):
    if command == "ui":
        pytest.importorskip("gradio", reason="the ui extra is not installed")
    assert main([command, "--model", MODEL, "--api-key", " "]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("seer: error: --api-key: give a key")


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_a_port_in_use_is_one_line_before_the_model_loads(command, capsys, monkeypatch):
    import seer.commands.options

    if command == "ui":
        pytest.importorskip("gradio", reason="the ui extra is not installed")

    monkeypatch.setattr(seer.commands.options, "load", lambda args: pytest.fail("model loaded"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([command, "--model", MODEL, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in err


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--merge-on", "h999"], "merge_on 'h999': unknown gpu"),
        (["--merge-on", "h100:nope"], "unknown model shape 'nope'"),
        (["--merge-on", "h100:"], "merge_on 'h100:'"),
        (["--merge-on", "auto:llada-8b"], "merge_on 'auto:llada-8b': auto prices the GPU"),
    ],
)
def test_a_bad_engine_option_is_one_line_before_the_model_loads(flags, says, capsys, monkeypatch):
    import seer.commands.options

    monkeypatch.setattr(seer.commands.options, "load", lambda args: pytest.fail("model loaded"))
    assert main(["serve", "--model", MODEL, "--port", "0", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def _running(srv: Server, n: int = 1) -> None:
    deadline = time.monotonic() + 60
    while total(metrics(srv.url), "seer_running_rows") < n:
        assert time.monotonic() < deadline, "the request did not reach the engine"
        time.sleep(0.02)


def _logged(srv: Server, text: str) -> None:
    deadline = time.monotonic() + 30
    while text not in srv.log.read_text():
        assert time.monotonic() < deadline, srv.log.read_text()[-2000:]
        time.sleep(0.02)


class Long(threading.Thread):
    """One long request in the background; `status` is what it got."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.status = url, None

    def run(self) -> None:
        self.status = httpx.post(f"{self.url}/v1/completions", json=LONG, timeout=120).status_code


@pytest.mark.parametrize(
    "signals", [[signal.SIGINT], [signal.SIGTERM, signal.SIGTERM]], ids=["SIGINT", "SIGTERM twice"]
)
def test_a_shutdown_by_any_signal_exits_0_and_answers_what_runs(signals):
    srv = Server("--model", MODEL, "--no-seer", "--drain-timeout", "120", "--log-level", "info")
    try:
        srv.wait()
        call = Long(srv.url)
        call.start()
        _running(srv)
        for sig in signals:
            srv.proc.send_signal(sig)
            if sig == signal.SIGTERM:  # the drain has started before the next signal is sent
                _logged(srv, "SIGTERM: draining")
        assert srv.proc.wait(60) == 0, srv.log.read_text()[-2000:]
        call.join(60)
    finally:
        srv.stop()
    assert call.status == 503  # ended, not left hanging for the 120 s drain
    log = srv.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    assert log.count("ended by the shutdown (503 shutting_down)") == 1, log[-3000:]
