"""`seer serve` end to end: a real uvicorn process, the official `openai` client, `httpx` errors.

One server for the module (built-in multimodal model, Seer on by default, small limits so the
413/429 paths are reachable). Every answer is compared with `DiffusionLM.generate` in this
process with the same options: the server must not change a single token.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from corpus.corpus import case_id, cases, png_uri, substitute
from serve_helpers import KEY, Server, data_uri, httpx, metrics, total

from seer.demo import sample_images
from synthetic.vqa2 import generate_examples  # the shipped model's own task

openai = pytest.importorskip("openai")  # the serve extra

MODEL = "builtin-vqa"
LIST = next(s for s in sample_images() if s["family"] == "list")  # an answer of several blocks


@pytest.fixture(scope="module")
def vqa_lm():
    import seer
    from seer.models.loader import builtin_path

    return seer.load(builtin_path("builtin-vqa"))


@pytest.fixture(scope="module")
def server(request):
    srv = Server("--model", MODEL, "--api-key", KEY, "--max-image-mb", "0.05", "--max-body-mb", "1")
    request.getfixturevalue("vqa_lm")  # loads here while the server starts
    yield srv.wait()
    assert srv.stop() == 0, srv.log.read_text()[-2000:]


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0) as c:
        yield c


def offline(lm, prompt, image=None, seer=True, chat=True, **options):
    """The answer `DiffusionLM.generate` gives with the options the server received."""
    return lm.generate(prompt, lm.sampling(**options), seer=seer or None, image=image, chat=chat)


def image_message(question: str, uri: str) -> list[dict]:
    parts = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": uri}}]
    return [{"role": "user", "content": parts}]


def check_same(choice, usage, g, gen_length: int, solo: bool = True) -> None:
    text = choice.message.content if hasattr(choice, "message") else choice.text
    assert text == g.text
    assert usage.completion_tokens == g.stats.tokens
    info = choice.seer  # our per-choice object
    assert info["window"] == g.stats.window
    if solo:  # NFE counts the forward passes of the row's batch
        assert info["nfe"] == g.stats.nfe
    assert info["gen_length"] == gen_length
    assert info["detected"] == (g.boundary.length if g.boundary is not None else None)


# -- answers ---------------------------------------------------------------------------------
def test_text_chat_equals_generate_and_the_cli(client, vqa_lm, capsys):
    from seer.cli import main

    q = "what colour is the shape ?"
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": q}])
    g = offline(vqa_lm, q)
    check_same(r.choices[0], r.usage, g, g.stats.gen_length)
    assert r.object == "chat.completion" and r.choices[0].finish_reason == "stop"
    assert main(["generate", "--model", MODEL, "--prompt", q, "--seer", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cli["answer"] == r.choices[0].message.content
    assert (cli["window"], cli["nfe"]) == (r.choices[0].seer["window"], r.choices[0].seer["nfe"])


def test_image_chat_equals_generate_and_the_cli(client, vqa_lm, capsys):
    from seer.cli import main

    for s in sample_images()[:3]:
        opts = {"max_tokens": 32, "steps": 16, "block_length": 16}
        r = client.chat.completions.create(
            model=MODEL,
            messages=image_message(s["question"], data_uri(s["file"])),
            max_tokens=32,
            extra_body={"steps": 16, "block_length": 16},
        )
        g = offline(vqa_lm, s["question"], s["file"], gen_length=32, steps=16, block_length=16)
        check_same(r.choices[0], r.usage, g, opts["max_tokens"])
    s = LIST
    r = client.chat.completions.create(
        model=MODEL, messages=image_message(s["question"], data_uri(s["file"]))
    )
    argv = ["generate", "--model", MODEL, "--prompt", s["question"], "--image", str(s["file"])]
    assert main([*argv, "--seer", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cli["answer"] == r.choices[0].message.content


def test_seer_off_per_request_and_completions(client, vqa_lm):
    q = "how many shapes are there ?"
    r = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": q}],
        max_tokens=16,
        extra_body={"seer": False, "remasking": "low_confidence"},
    )
    g = offline(vqa_lm, q, seer=False, gen_length=16, remasking="low_confidence")
    check_same(r.choices[0], r.usage, g, 16)
    assert r.choices[0].seer["window"] == 16 and r.choices[0].seer["detected"] is None
    c = client.completions.create(model=MODEL, prompt=q, max_tokens=16, temperature=0)
    g = offline(vqa_lm, q, chat=False, gen_length=16, temperature=0.0)
    check_same(c.choices[0], c.usage, g, 16)
    assert c.object == "text_completion"
    # OpenAI's stop strings become the engine's stop sequences (encoded as `seer generate --stop`)
    from dataclasses import replace

    from seer.models.tokens import stop_ids

    stop = ("red",)
    c = client.completions.create(model=MODEL, prompt=q, max_tokens=16, stop=list(stop))
    p = vqa_lm.sampling(gen_length=16)
    p = replace(p, stop=stop_ids(vqa_lm.tokenizer, stop))
    g = vqa_lm.generate(q, p, seer=True, chat=False)
    check_same(c.choices[0], c.usage, g, 16)


def test_daedal_request_equals_generate_and_turns_the_default_seer_off(client, vqa_lm):
    q = "describe the picture ."
    extra = {"daedal": True, "daedal_initial": 8, "daedal_block": 8}
    r = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": q}], max_tokens=32, extra_body=extra
    )
    g = offline(vqa_lm, q, seer=False, gen_length=32, **extra)
    check_same(r.choices[0], r.usage, g, 32)
    assert r.choices[0].seer["detected"] is None
    with pytest.raises(openai.BadRequestError, match="daedal sets the answer length"):
        msgs = [{"role": "user", "content": q}]
        client.chat.completions.create(
            model=MODEL, messages=msgs, max_tokens=32, extra_body={**extra, "seer": True}
        )


def test_streaming_concatenates_to_the_answer(client, server, vqa_lm):
    s = LIST
    messages = image_message(s["question"], data_uri(s["file"]))
    extra = {"steps": 32, "block_length": 4, "seer": False}
    full = client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=32, extra_body=extra
    )
    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=messages,
            max_tokens=32,
            extra_body=extra,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(pieces) == full.choices[0].message.content
    g = offline(
        vqa_lm, s["question"], s["file"], seer=False, gen_length=32, steps=32, block_length=4
    )
    assert full.choices[0].message.content == g.text
    assert chunks[0].choices[0].delta.role == "assistant"
    last = [c for c in chunks if c.choices][-1]
    assert last.choices[0].finish_reason == "stop" and last.choices[0].seer["window"] == 32
    assert chunks[-1].usage.completion_tokens == g.stats.tokens
    assert sum(1 for p in pieces if p) >= 2  # each semi-AR block is sent when final


def test_async_client_streaming_and_not(server, vqa_lm):
    async def main():
        async with openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0) as c:
            q = "spell sun"
            r = await c.completions.create(model=MODEL, prompt=q, max_tokens=16)
            stream = await c.completions.create(model=MODEL, prompt=q, max_tokens=16, stream=True)
            text = "".join([ch.choices[0].text async for ch in stream if ch.choices])
            return r, text

    r, text = asyncio.run(main())
    g = offline(vqa_lm, "spell sun", chat=False, gen_length=16)
    assert r.choices[0].text == text == g.text


def test_32_concurrent_requests_each_equal_its_solo_answer(server, vqa_lm):
    examples = generate_examples(32, seed=3, split="heldout")
    opts = {"max_tokens": 32, "extra_body": {"steps": 16}}

    async def ask(c, ex, i):
        if i % 4 == 3:  # a quarter text-only, a quarter without Seer
            messages = [{"role": "user", "content": ex.question}]
        else:
            messages = image_message(ex.question, data_uri(ex.image()))
        extra = {**opts["extra_body"], "seer": i % 4 != 1}
        return await c.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=opts["max_tokens"], extra_body=extra
        )

    async def main():
        async with openai.AsyncOpenAI(
            base_url=f"{server.url}/v1", api_key=KEY, max_retries=0, timeout=120
        ) as c:
            return await asyncio.gather(*(ask(c, ex, i) for i, ex in enumerate(examples)))

    responses = asyncio.run(main())
    assert len({r.id for r in responses}) == 32
    for i, (ex, r) in enumerate(zip(examples, responses, strict=True)):
        image = None if i % 4 == 3 else ex.image()
        g = offline(vqa_lm, ex.question, image, seer=i % 4 != 1, gen_length=32, steps=16)
        check_same(r.choices[0], r.usage, g, 32, solo=False)


# -- errors ----------------------------------------------------------------------------------
def _post(server, body, key=KEY, path="/v1/chat/completions", **kw):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=60, **kw)


def _error(r, status: int, *words: str) -> None:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    for w in words:
        assert w in err["message"], err["message"]


HTTP = cases("http")  # the HTTP half of tests/corpus/bad_inputs.yaml


def test_the_server_says_when_a_model_needs_its_chat_template(server):
    said = [line for line in server.log.read_text().splitlines() if "chat_only" in line]
    assert said == [
        "builtin-vqa answers only inside its chat template (seer.json: chat_only): "
        "/v1/completions sends the prompt without it and gets empty answers; use "
        "/v1/chat/completions"
    ]


@pytest.mark.parametrize("case", HTTP, ids=[case_id(c) for c in HTTP])
def test_the_bad_request_corpus(server, case):
    key = case.get("key", KEY)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = f"{server.url}{case.get('path', '/v1/chat/completions')}"
    if "raw" in case:
        headers["Content-Type"] = "application/json"
        r = httpx.post(url, content=case["raw"].encode(), headers=headers, timeout=60)
    elif case.get("method") == "GET":
        r = httpx.get(url, headers=headers, timeout=60)
    else:
        body = substitute(case["json"], png=png_uri())
        r = httpx.post(url, json=body, headers=headers, timeout=60)
    _error(r, case["status"], *([case["error"]] if "error" in case else []))
    err = r.json()["error"]
    assert "\n" not in err["message"] and "Traceback" not in err["message"], err
    if "code" in case:
        assert err["code"] == case["code"], err


def test_error_codes_400_401_404_413_have_openai_bodies(server):
    hi = [{"role": "user", "content": "hi"}]
    _error(_post(server, {"model": MODEL}), 400, "messages")
    _error(_post(server, {"model": MODEL, "messages": hi, "stepz": 3}), 400, "stepz")
    _error(_post(server, {"model": MODEL, "messages": hi, "max_tokens": 100000}), 400, "context")
    _error(_post(server, {"model": MODEL, "messages": hi, "remasking": "best"}), 400, "remasking")
    _error(_post(server, {"model": MODEL, "messages": hi, "seer": {"nope": 1}}), 400, "seer")
    _error(_post(server, {"model": MODEL, "messages": hi, "n": 2}), 400, "n")
    bad = image_message("what ?", "data:image/png;base64," + "A" * 64)
    _error(_post(server, {"model": MODEL, "messages": bad}), 400, "image")
    remote = image_message("what ?", "http://example.com/a.png")
    _error(_post(server, {"model": MODEL, "messages": remote}), 400, "not fetched")
    local = image_message("what ?", str(LIST["file"]))
    _error(_post(server, {"model": MODEL, "messages": local}), 400, "--allow-local-images")
    turns = [*hi, {"role": "assistant", "content": "x"}, *hi]
    _error(_post(server, {"model": MODEL, "messages": turns}), 400, "one user message")
    r = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=b"{not json",
        headers={"Authorization": f"Bearer {KEY}"},
    )
    _error(r, 400)
    _error(_post(server, {"model": MODEL, "messages": hi}, key=None), 401, "API key")
    _error(_post(server, {"model": MODEL, "messages": hi}, key="wrong"), 401)
    _error(httpx.get(f"{server.url}/v1/models"), 401)
    _error(_post(server, {"model": "gpt-4o", "messages": hi}), 404, "gpt-4o")
    _error(_post(server, {"model": MODEL, "messages": hi * 40000}), 413, "body")

    def chunked():  # no Content-Length: the limit is enforced while reading
        yield b'{"model": "builtin-vqa", "messages": ['
        for _ in range(40):
            yield b'{"role": "user", "content": "' + b"x" * 40000 + b'"},'
        yield b'{"role": "user", "content": "hi"}]}'

    r = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=chunked(),
        timeout=60,
        headers={"Authorization": f"Bearer {KEY}"},
    )
    _error(r, 413, "body")
    import numpy as np
    from PIL import Image

    noise = np.random.default_rng(0).integers(0, 256, (160, 160, 3), dtype=np.uint8)
    big = image_message("what ?", data_uri(Image.fromarray(noise)))
    _error(_post(server, {"model": MODEL, "messages": big}), 413, "image")
    # the server is unharmed: a good request still gets the offline answer
    assert _post(server, {"model": MODEL, "messages": hi}).status_code == 200


def test_client_disconnect_aborts_the_request(server):
    before = metrics(server.url)
    body = {
        "model": MODEL,
        "prompt": "spell sun",
        "max_tokens": 128,
        "steps": 128,
        "block_length": 32,
        "seer": False,
        "stream": True,
    }
    t0 = time.monotonic()
    with httpx.stream(
        "POST",
        f"{server.url}/v1/completions",
        json=body,
        timeout=60,
        headers={"Authorization": f"Bearer {KEY}"},
    ) as r:
        assert r.status_code == 200
        next(r.iter_lines())  # the first chunk, then hang up
    deadline = time.monotonic() + 30
    while True:
        m = metrics(server.url)
        gone = total(m, "seer_requests_total", status="disconnected")
        if gone > total(before, "seer_requests_total", status="disconnected"):
            break
        assert time.monotonic() < deadline, "the disconnect was not noticed"
        time.sleep(0.05)
    # the aborted request does not hold the engine: a short one is answered at once
    r = _post(
        server, {"model": MODEL, "prompt": "spell sun", "max_tokens": 8}, path="/v1/completions"
    )
    assert r.status_code == 200
    answered = total(m, "seer_request_latency_seconds_count")
    assert answered == total(before, "seer_request_latency_seconds_count"), "it was answered"
    assert time.monotonic() - t0 < 30


def test_metrics_parse_and_add_up(server):
    before = metrics(server.url)
    hi = [{"role": "user", "content": "spell sun"}]
    good = [_post(server, {"model": MODEL, "messages": hi, "max_tokens": n}) for n in (8, 16, 32)]
    bad = _post(server, {"model": MODEL, "messages": hi, "max_tokens": 0})
    missing = _post(server, {"model": "nope", "messages": hi})
    assert [r.status_code for r in good] == [200] * 3
    assert (bad.status_code, missing.status_code) == (400, 404)
    after = metrics(server.url)

    def delta(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    chat = "/v1/chat/completions"
    assert delta("seer_requests_total", endpoint=chat, status="200") == 3
    assert delta("seer_requests_total", endpoint=chat, status="400") == 1
    assert delta("seer_requests_total", endpoint=chat, status="404") == 1
    assert delta("seer_requests_total", endpoint=chat) == 5
    usage = [r.json()["usage"] for r in good]
    assert delta("seer_answer_tokens_total") == sum(u["completion_tokens"] for u in usage)
    assert delta("seer_prompt_tokens_total") == sum(u["prompt_tokens"] for u in usage)
    assert delta("seer_nfe_total") == sum(r.json()["choices"][0]["seer"]["nfe"] for r in good)
    assert delta("seer_request_latency_seconds_count") == 3
    assert delta("seer_time_to_first_block_seconds_count") == 3
    assert delta("seer_window_ratio_count") == 3
    assert delta("seer_rows_total") == 3
    ratios = [r.json()["choices"][0]["seer"] for r in good]
    assert delta("seer_window_ratio_sum") == pytest.approx(
        sum(s["window"] / s["gen_length"] for s in ratios)
    )
    assert delta("seer_seer_rows_total") == 3  # the server runs Seer by default
    assert delta("seer_no_boundary_total") == sum(s["detected"] is None for s in ratios)
    assert total(after, "seer_queue_depth") >= 0 and total(after, "seer_running_rows") >= 0
