"""The page in a real browser: headless Chromium (Debian's package) driven by Playwright.

The page is served on 127.0.0.1 (a free port) as `seer ui` serves it: the OpenAI app of the
built-in multimodal model with the page mounted. The test types a question, uploads the image,
runs both sides and checks that steps arrive one after another, that Seer's cut is drawn, and
that both answers equal `seer generate`'s for the same settings; bad inputs (empty prompt, a
file that is not an image, a window of 0) each show one clear message and the server goes on.
Skipped (with the reason) only where Chromium or Playwright is missing; .ci/run installs both.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip("no chromium (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="no playwright (pip install playwright)"
)
pytest.importorskip("gradio", reason="the ui extra is not installed (pip install 'seer[ui]')")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

WINDOW = 128  # the shipped multimodal model's window (the page's block length field holds it too)
SETTINGS = ["--gen-length", str(WINDOW), "--steps", "16"]  # 8 tokens per step: a short test
SHOT = os.environ.get("SEER_UI_SCREENSHOT")  # where to save the page at the end (docs/figures)

# every data-step the two canvases show, in the order the browser saw them
WATCH = """() => {
  window.seerSteps = {base: [], seer: []};
  for (const [key, id] of [["base", "#seer-base-canvas"], ["seer", "#seer-seer-canvas"]]) {
    const seen = () => {
      const side = document.querySelector(id + " .seer-side");
      if (side) window.seerSteps[key].push(Number(side.dataset.step));
    };
    new MutationObserver(seen).observe(document.querySelector(id),
                                       {subtree: true, childList: true, attributes: true});
  }
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """`seer ui --model builtin-vqa`, served from a thread of this process."""
    import uvicorn

    import seer
    from seer.serve import build, model_names
    from seer.ui import PATH, mount

    lm = seer.load("builtin-vqa")
    app = build(lm, model_names=model_names(lm, "builtin-vqa"))
    mount(app, lm)
    port = _free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", loop="asyncio", http="h11", ws="none"
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}{PATH}/"
    srv.should_exit = True
    thread.join(15)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _generate(capsys, question: str, image: str, *seer: str) -> dict:
    """`seer generate --json` with the page's settings."""
    from seer.cli import main

    capsys.readouterr()
    argv = [
        "--quiet",
        "generate",
        "--model",
        "builtin-vqa",
        "--prompt",
        question,
        "--image",
        image,
        "--json",
        *SETTINGS,
        *seer,
    ]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _run(page, timeout: float = 60_000) -> None:
    page.evaluate("document.querySelector('#seer-message .error')?.remove()")  # the last one
    page.click("#seer-run")
    page.wait_for_function(
        """() => document.querySelector('#seer-message .error') !== null
                 || document.querySelector('#seer-compare').innerText.includes('Seer gave')""",
        timeout=timeout,
    )


def _message(page) -> str:
    errors = page.locator("#seer-message .error")
    assert errors.count() == 1  # one message, not a trace or a pile of them
    return errors.inner_text()


def _set(page, selector: str, value: str) -> None:
    page.fill(selector, value)
    page.press(selector, "Tab")  # Gradio reads a number field when it loses focus


def test_the_page_runs_both_sides_and_refuses_bad_inputs(server, browser, tmp_path, capsys):
    from seer.demo import sample_images

    sample = sample_images()[1]
    question, image = sample["question"], str(sample["file"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server)
    page.wait_for_selector("#seer-run")
    assert "builtin-vqa" in page.inner_text("h2")
    prompt, window = "#seer-prompt textarea", "#seer-window input"
    upload = "#seer-image input[type=file]"

    page.fill(prompt, "   ")  # empty prompt
    _run(page)
    assert "empty prompt" in _message(page)

    page.fill(prompt, question)  # a window of 0
    _set(page, window, "0")
    _run(page)
    assert "gen_length must be >= 1" in _message(page)

    _set(page, window, str(WINDOW))  # a file that is not an image
    page.click("#seer-image button[aria-label=Clear]")
    notes = tmp_path / "notes.png"
    notes.write_text("not an image at all")
    page.set_input_files(upload, str(notes))
    page.wait_for_selector("#seer-image .file-preview")
    _run(page)
    assert "image" in _message(page).lower()

    page.click("#seer-image button[aria-label=Clear]")  # now the real thing
    page.set_input_files(upload, image)
    page.wait_for_selector("#seer-image .file-preview")
    _set(page, "#seer-steps input", "16")
    page.evaluate(WATCH)
    _run(page)
    assert page.locator("#seer-message .error").count() == 0
    steps = page.evaluate("window.seerSteps")
    base = _generate(capsys, question, image)
    fast = _generate(capsys, question, image, "--seer", "--seer-signal", "eos_prob")

    # steps arrived one after another, up to the last one
    for key, want in (("base", base), ("seer", fast)):
        seen = [s for k, s in enumerate(steps[key]) if k == 0 or s != steps[key][k - 1]]
        assert seen == sorted(seen) and seen[-1] == want["nfe"], (key, seen)
    assert len(set(steps["base"])) >= 3  # more than the first and the last step came
    # Seer's cut: the red line, and hatched positions that were never computed
    side = page.locator("#seer-seer-canvas .seer-side")
    kept = int(side.get_attribute("data-window"))
    assert kept == fast["window"] < WINDOW
    assert page.locator("#seer-seer-canvas .seer-cut").count() == 1
    assert page.locator("#seer-seer-canvas .chip.cut").count() == WINDOW - kept
    assert page.locator("#seer-base-canvas .seer-cut").count() == 0
    # the final answers are `seer generate`'s
    for stats, want in (("#seer-base-stats", base), ("#seer-seer-stats", fast)):
        text = page.inner_text(stats)
        assert f"Answer: {want['answer'] or '(empty)'}" in text
        assert f"{want['nfe']} NFE" in text
    verdict = page.inner_text("#seer-compare")
    same = base["token_ids"] == fast["token_ids"]
    assert ("the same answer" if same else "different answers") in verdict
    assert page.locator("#seer-profile img").count() == 1  # the step-0 profile plot
    page.screenshot(path=SHOT or str(tmp_path / "ui.png"), full_page=True)
    page.close()
