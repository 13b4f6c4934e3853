"""The page's requests pass the server's own checks (`seer.serve.prepare`): a prompt over the
prompt-length bound or an upload over the pixel limit is the page's one-line message at once,
and nothing reaches the engine; a prompt within them runs. The page's handler is called
directly (no browser)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("gradio", reason="the ui extra is not installed (pip install 'seer[ui]')")
pytest.importorskip("fastapi", reason="the serve extra is not installed")

from corpus.corpus import png  # noqa: E402  (after the skips: needs Pillow only)


@pytest.fixture(scope="module")
def served():
    """The page's handler on a server of builtin-vqa that takes images of at most 200 pixels."""
    from fastapi.testclient import TestClient

    import seer
    from seer.serve import build
    from seer.ui import page

    lm = seer.load("builtin-vqa")
    app = build(lm, max_image_pixels=200)
    with TestClient(app):  # the engine's thread runs while the app lives
        blocks = page.build(lm, app.state.service)
        fn = next(f for f in blocks.fns.values() if f.fn.__name__ == "run")
        ids = [o.elem_id for o in fn.outputs]
        yield lm, app.state.service, fn.fn, ids


def click(run, ids, text, image=None, window=8) -> dict:
    """Every output the handler gave, by elem_id, the last value of each kept."""

    async def go():
        out = {}
        async for update in run(
            text, image, window, window, 0, None, 0, "none", "eos_prob", True, False, 0.0
        ):
            for comp, value in update.items():
                out[comp.elem_id] = value
        return out

    return asyncio.run(asyncio.wait_for(go(), 120))


def test_a_prompt_over_the_servers_bound_is_one_line_and_runs_nothing(served):
    lm, service, run, ids = served
    added = service.worker.engine._next_id
    bound = service.preparer.limits.chars_per_token * lm.max_length
    out = click(run, ids, "a" * (bound + 1))
    message = out["seer-message"]
    assert f"characters; this server takes at most {bound:,}" in message, message
    assert message.count('class="error"') == 1 and "\n" not in message.strip()
    assert not out["seer-base-canvas"]
    assert service.worker.engine._next_id == added  # never queued


def test_an_image_over_the_pixel_limit_is_one_line_and_runs_nothing(served, tmp_path):
    _, service, run, ids = served
    path = tmp_path / "big.png"
    path.write_bytes(png())  # 16 x 16 = 256 pixels: over the 200 this server takes
    added = service.worker.engine._next_id
    out = click(run, ids, "what colour ?", str(path))
    assert "the image is 16x16" in out["seer-message"], out["seer-message"]
    assert "megapixels (--max-image-mp); resize it" in out["seer-message"]
    assert not out["seer-base-canvas"]
    assert service.worker.engine._next_id == added


def test_a_prompt_within_the_limits_runs(served):
    _, _, run, ids = served
    out = click(run, ids, "what colour is the sky ?")
    assert not out["seer-message"], out["seer-message"]
    assert 'class="chip' in out["seer-base-canvas"] and out["seer-base-stats"]
