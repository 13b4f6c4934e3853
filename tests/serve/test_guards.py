"""The server's guards, end to end on a real `seer serve`: the API key before the body (and on
/metrics), strict integers, images that do not decode, the prompt-length bound, the local image
folder. The bad requests are the corpus files tests/corpus/http_guards.yaml and the `http` half
of more_cases.yaml; the rest checks what a corpus case cannot (a good local image answers, every
refusal reads the same, /health stays open) and the preparation's parts in-process (the pixel
budget, the time limit).
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
from pathlib import Path

import pytest
import yaml
from corpus.corpus import MORE, case_id, cases, png, png_uri, substitute
from serve_helpers import KEY, Server, httpx

MODEL = "builtin-vqa"
CORPUS = Path(__file__).parents[1] / "corpus" / "http_guards.yaml"
HTTP = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["http"] + cases("http", MORE)
REFUSED = "image_url is not an image file under the server's image folder"


def bad_png() -> bytes:
    """A PNG with one byte of its IDAT chunk flipped (the CRC no longer matches)."""
    raw = bytearray(png())
    at = raw.index(b"IDAT")
    raw[at + 6] ^= 0xFF
    return bytes(raw)


def uri(raw: bytes, kind: str = "png") -> str:
    return f"data:image/{kind};base64," + base64.b64encode(raw).decode()


def fill(body):
    """The corpus file's substitutions (see its header)."""
    if body == "{ids_600}":
        return [5] * 600
    if isinstance(body, dict):
        return {k: fill(v) for k, v in body.items()}
    if isinstance(body, list):
        return [fill(v) for v in body]
    return substitute(
        body,
        png=png_uri(),
        bad_png=uri(bad_png()),
        long_text="a " * 10_000,
        bad_ppm=uri(b"P6\n32 x\n255\n" + bytes(96), "x-portable-pixmap"),
    )


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("images")
    (folder / "ok.png").write_bytes(png())
    (folder / "x").mkdir()
    os.symlink("/etc/hostname", folder / "link.png")  # a link out of the folder
    return folder


@pytest.fixture(scope="module")
def server(images):
    srv = Server(
        "--model",
        MODEL,
        "--api-key",
        KEY,
        "--allow-local-images",
        str(images),
        "--max-body-mb",
        "1",
    )
    yield srv.wait()
    assert srv.stop() == 0, srv.log.read_text()[-2000:]
    log = srv.log.read_text()
    assert "Traceback" not in log and " 500" not in log, log[-3000:]


def send(server, case: dict) -> httpx.Response:
    key = case.get("key", KEY)
    headers = {"Authorization": f"Bearer {key}".encode()} if key else {}
    url = f"{server.url}{case.get('path', '/v1/chat/completions')}"
    if "raw" in case:
        headers["Content-Type"] = "application/json"
        return httpx.post(url, content=case["raw"].encode(), headers=headers, timeout=60)
    if case.get("method") == "GET":
        return httpx.get(url, headers=headers, timeout=60)
    return httpx.post(url, json=fill(case["json"]), headers=headers, timeout=60)


def test_the_corpus_file_is_well_formed():
    keys = {"path", "method", "key", "json", "raw", "status", "error", "code"}
    for case in HTTP:
        assert set(case) <= keys and "status" in case, case
        assert ("json" in case) + ("raw" in case) + (case.get("method") == "GET") == 1, case


@pytest.mark.parametrize("case", HTTP, ids=[case_id(c) for c in HTTP])
def test_the_guards_corpus(server, case):
    r = send(server, case)
    assert r.status_code == case["status"], r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert "\n" not in err["message"] and "Traceback" not in err["message"], err
    assert case.get("error", "") in err["message"], err["message"]
    if "code" in case:
        assert err["code"] == case["code"], err


def _image(server, url: str) -> httpx.Response:
    parts = [
        {"type": "text", "text": "what colour ?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    body = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": parts}]}
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=120,
    )


def test_a_local_image_in_the_folder_answers_as_its_data_uri(server, images):
    by_uri = _image(server, png_uri()).json()["choices"][0]["message"]["content"]
    for name in ("ok.png", str(images / "ok.png"), f"file://{images / 'ok.png'}", "./x/../ok.png"):
        r = _image(server, name)
        assert r.status_code == 200, (name, r.text)
        assert r.json()["choices"][0]["message"]["content"] == by_uri


def test_every_refused_path_reads_the_same_whether_or_not_it_exists(server, images):
    paths = [
        "/etc/passwd",
        "/etc/no-such-file",
        "../../etc/hostname",
        "link.png",
        "missing.png",
        "x",
        "/",
        "ok.png/..",
        "\x00",
    ]
    said = {_image(server, p).json()["error"]["message"] for p in paths}
    assert len(said) == 1 and REFUSED in said.pop()


def test_health_needs_no_key_and_says_only_ok(server):
    r = httpx.get(f"{server.url}/health", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert httpx.get(f"{server.url}/metrics", timeout=10).status_code == 401
    ok = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert ok.status_code == 200 and "seer_requests_total" in ok.text


def test_max_completion_tokens_sets_the_window_and_may_repeat_max_tokens(server):
    hi = [{"role": "user", "content": "hi"}]
    for extra in ({"max_completion_tokens": 8}, {"max_completion_tokens": 8, "max_tokens": 8}):
        body = {"model": MODEL, "messages": hi, **extra}
        r = httpx.post(
            f"{server.url}/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=120,
        )
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["seer"]["gen_length"] == 8


# -- the preparation's parts, in-process ------------------------------------------------------
def test_the_pixel_budget_lets_images_through_only_while_they_fit():
    from seer.serve.prepare import PixelBudget

    async def run():
        budget = PixelBudget(100)
        a = await budget.acquire(60)
        b = asyncio.ensure_future(budget.acquire(60))  # 60 + 60 > 100: waits
        big = asyncio.ensure_future(budget.acquire(500))  # over the whole budget: waits for 0
        await asyncio.sleep(0.01)
        assert not b.done() and not big.done() and budget.used == 60
        budget.release(a)
        await asyncio.sleep(0.01)
        assert b.done() and not big.done() and budget.used == 60
        budget.release(b.result())
        assert await big == 100 and budget.used == 100  # capped at the budget
        budget.release(100)
        assert budget.used == 0 and not budget._waiters

    asyncio.run(run())


@pytest.fixture(scope="module")
def text_lm():
    import seer
    from seer.models.loader import builtin_path

    return seer.load(builtin_path("builtin-v1"))


def test_preparing_past_the_time_limit_is_a_503_and_the_server_goes_on(text_lm):
    from fastapi.testclient import TestClient

    from seer.serve import build

    body = {"model": "builtin-v1", "prompt": "spell sun", "max_tokens": 8}
    with TestClient(build(text_lm, prepare_timeout=0.0)) as client:  # no time at all
        r = client.post("/v1/completions", json=body)
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.json()["error"]["code"] == "timeout"
        assert "preparing the request" in r.json()["error"]["message"]
    with TestClient(build(text_lm)) as client:
        assert client.post("/v1/completions", json=body).status_code == 200


def test_the_key_is_compared_as_bytes_and_checked_before_the_body(text_lm):
    from fastapi.testclient import TestClient

    from seer.serve import build

    with TestClient(build(text_lm, api_key="clé", public_metrics=True)) as client:
        url = "/v1/completions"
        assert (
            client.post(url, content=b"{bad", headers={"Authorization": "Bearer x"}).status_code
            == 401
        )
        good = {"Authorization": "Bearer clé".encode(), "Content-Type": "application/json"}
        assert client.post(url, content=b"{bad", headers=good).status_code == 400  # then the body
        assert client.get("/metrics").status_code == 200  # --public-metrics
        for scheme in (b"bearer", b"Bearer", b"BEARER"):
            assert (
                client.get(
                    "/v1/models", headers={"Authorization": scheme + " clé".encode()}
                ).status_code
                == 200
            )
        assert (
            client.get("/v1/models", headers={"Authorization": b"Basic cl\xc3\xa9"}).status_code
            == 401
        )


def test_images_are_sized_from_their_header_and_any_decoder_error_is_a_400(text_lm):
    """The preparer reads an image's size before decoding it (413 over the limit), and whatever
    the decoder raises, the client gets 400 naming image_url."""
    from PIL import Image

    from seer.serve.errors import APIError
    from seer.serve.prepare import Limits, Preparer

    prep = Preparer(text_lm, Limits(max_image_pixels=300))
    try:
        for raw in (bad_png(), b"P6\n32 x\n255\n" + bytes(96), b"\x89PNG\r\n\x1a\n" + bytes(40)):
            with pytest.raises(APIError) as e:
                prep._decode(prep._open_image(uri(raw))[0])
            assert e.value.status == 400 and e.value.param == "image_url", e.value.message
        buf = io.BytesIO()
        Image.new("RGB", (8, 8)).save(buf, format="PNG")
        raw, pixels = prep._open_image(uri(buf.getvalue()))
        assert pixels == 64 and prep._decode(raw).size == (8, 8)
        Image.new("RGB", (20, 16)).save(buf := io.BytesIO(), format="PNG")
        with pytest.raises(APIError) as e:
            prep._open_image(uri(buf.getvalue()))
        assert e.value.status == 413 and "20x16" in e.value.message
    finally:
        prep.close()
