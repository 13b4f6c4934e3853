"""`seer ui` and `seer serve --ui`: the page is mounted on the server's app, the API beside it."""

from __future__ import annotations

import socket

import pytest

from seer.cli import main

pytest.importorskip("gradio", reason="the ui extra is not installed (pip install 'seer[ui]')")
pytest.importorskip("fastapi", reason="the serve extra is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served(monkeypatch) -> dict:
    """What `seer.serve.server.run` was given (it is replaced: nothing listens)."""
    import seer.serve.server

    served = {}

    def run(app, sock, *args, **kw):
        served.update(app=app, at=sock.getsockname())
        sock.close()

    monkeypatch.setattr(seer.serve.server, "run", run)
    return served


@pytest.mark.parametrize("argv", [["ui"], ["serve", "--model", "builtin", "--ui"]])
def test_the_page_is_served_beside_the_api(argv, monkeypatch, capsys):
    from fastapi.testclient import TestClient

    served, port = _served(monkeypatch), _free_port()
    assert main(["--quiet", *argv, "--port", str(port)]) == 0
    assert served["at"] == ("127.0.0.1", port)  # loopback by default
    if argv[0] == "ui":
        assert f"http://127.0.0.1:{port}/ui/" in capsys.readouterr().err
    with TestClient(served["app"]) as client:
        page = client.get("/ui/")
        assert page.status_code == 200 and "Seer" in page.text
        assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
        assert client.get("/health").json() == {"status": "ok"}
        models = client.get("/v1/models").json()["data"]
        assert models[0]["id"] == "builtin"


def test_serve_ui_refuses_replicas(capsys):
    assert main(["serve", "--ui", "--replicas", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("seer: error: --ui runs on one server")


@pytest.mark.parametrize("argv", [["ui"], ["serve", "--model", "builtin", "--ui"]])
def test_an_api_key_guards_the_api_and_the_page_asks_for_it(argv, monkeypatch):
    from fastapi.testclient import TestClient

    served = _served(monkeypatch)
    assert main(["--quiet", *argv, "--port", str(_free_port()), "--api-key", "sésame"]) == 0
    with TestClient(served["app"]) as client:
        assert client.get("/health").json() == {"status": "ok"}  # probes need no key
        assert client.get("/v1/models").status_code == 401
        assert client.get("/metrics").status_code == 401
        key = {"Authorization": "Bearer sésame".encode()}
        assert client.get("/v1/models", headers=key).status_code == 200
        # the page: Gradio's login, the key as the password; nothing runs before it
        config = client.get("/ui/config")
        assert config.status_code == 401 or config.json().get("auth_required"), config.text
        bad = client.post("/ui/login", data={"username": "me", "password": "nope"})
        assert bad.status_code == 400
        # the page's own API (heartbeat, queue, reset, cancel) needs the login too
        for method, path in GRADIO_API:
            assert client.request(method, path).status_code == 401, path
        assert client.get("/openapi.json").status_code == 404  # no schema for anyone
        ok = client.post("/ui/login", data={"username": "me", "password": "sésame"})
        assert ok.status_code == 200, ok.text
        assert "components" in client.get("/ui/config").json()
        reset = client.post("/ui/gradio_api/reset", json={"session_hash": "x", "fn_index": 0})
        assert reset.status_code != 401  # past the guard, Gradio's own answer


GRADIO_API = [
    ("GET", "/ui/gradio_api/heartbeat/abc"),
    ("GET", "/ui/gradio_api/queue/data"),
    ("POST", "/ui/gradio_api/reset"),
    ("POST", "/ui/gradio_api/cancel"),
    ("POST", "/ui/gradio_api/queue/join"),
    ("POST", "/ui/gradio_api/upload"),
]
