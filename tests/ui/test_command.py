"""`seer ui` and `seer serve --ui`: the page is mounted on the server's app, the API beside it."""

from __future__ import annotations

import pytest

from seer.cli import main

pytest.importorskip("gradio", reason="the ui extra is not installed (pip install 'seer[ui]')")
pytest.importorskip("fastapi", reason="the serve extra is not installed")


@pytest.mark.parametrize("argv", [["ui"], ["serve", "--model", "builtin", "--ui"]])
def test_the_page_is_served_beside_the_api(argv, monkeypatch, capsys):
    from fastapi.testclient import TestClient

    import seer.serve.server

    served = {}

    def run(app, host, port, *args, **kw):
        served.update(app=app, at=(host, port))

    monkeypatch.setattr(seer.serve.server, "run", run)
    assert main(["--quiet", *argv, "--port", "7999"]) == 0
    assert served["at"] == ("127.0.0.1", 7999)  # loopback by default
    if argv[0] == "ui":
        assert "http://127.0.0.1:7999/ui/" in capsys.readouterr().err
    with TestClient(served["app"]) as client:
        page = client.get("/ui/")
        assert page.status_code == 200 and "Seer" in page.text
        assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
        assert client.get("/health").json() == {"status": "ok"}
        models = client.get("/v1/models").json()["data"]
        assert models[0]["id"] == "builtin"


@pytest.mark.parametrize("flags", [["--api-key", "k"], ["--replicas", "2"]])
def test_serve_ui_refuses_what_the_page_cannot_honour(flags, capsys):
    assert main(["serve", "--ui", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("seer: error: --ui runs on one server")
