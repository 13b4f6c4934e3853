"""The page's pieces without a browser: a canvas's chips, the option fields, `seer ui`."""

from __future__ import annotations

import re

import pytest
from conftest import TOKENS

from seer.boundary.detector import BoundaryReport
from seer.engine.request import StepView
from seer.errors import SeerError
from seer.ui import render

M, E = TOKENS.mask, TOKENS.eos
LABELS = {5: "four", 6: "plus", E: "EOS", TOKENS.eot: "EOT"}


def view(ids, window, step=1, final=False, boundary=None) -> StepView:
    return StepView(0, step, ids, window, len(ids), boundary, final)


def chips(html: str) -> list[tuple[str, str]]:
    """(classes, text) of every chip, in order."""
    return re.findall(r'<span class="chip ([^"]+)" data-pos="\d+">([^<]*)</span>', html)


def test_a_canvas_shows_masks_new_tokens_ends_and_the_cut():
    b = BoundaryReport(3, 2, 0.9, 0.01, "eos_prob", window=4, profile=[0.0] * 8)
    before = [5, M, M, M, E, E, E, E]
    after = [5, 6, M, TOKENS.eot, E, E, E, E]
    html = render.canvas(view(after, 4, step=2, boundary=b), before, LABELS, TOKENS, "Seer")
    assert chips(html) == [
        ("token", "four"),  # revealed earlier
        ("token new", "plus"),  # revealed by this step
        ("masked", "·"),
        ("end new", "EOT"),
        *[("cut", "·")] * 4,  # past the window Seer kept: never computed
    ]
    assert html.count('class="seer-cut"') == 1  # the red line, before position 4
    assert html.index('class="seer-cut"') < html.index('data-pos="4"')
    assert 'data-step="2"' in html and 'data-window="4"' in html and 'data-final="0"' in html
    assert "L* = 3, kept 4 of 8" in html


def test_a_full_window_has_no_cut_and_step0_marks_every_token_new():
    html = render.canvas(view([5, M, E, E], 4), None, LABELS, TOKENS, "baseline")
    assert chips(html) == [
        ("token new", "four"),
        ("masked", "·"),
        ("end new", "EOS"),
        ("end new", "EOS"),
    ]
    assert "seer-cut" not in html


def test_token_text_is_escaped():
    html = render.canvas(view([5, E], 2), None, {5: "<b>&"}, TOKENS, "x<y>")
    assert "&lt;b&gt;&amp;" in html and "x&lt;y&gt;" in html and "<b>&" not in html


def test_a_message_is_one_escaped_line():
    out = render.message("bad <input>")
    assert out.count('class="error"') == 1 and "&lt;input&gt;" in out


@pytest.fixture(scope="module")
def lm():
    import seer

    return seer.load("builtin-v1")


@pytest.fixture(scope="module")
def page():
    return pytest.importorskip("seer.ui.page", reason="the ui extra (gradio) is not installed")


def test_options_fill_the_models_defaults_and_take_tokens_per_step(lm, page):
    base = lm.sampling()
    p = page.Options(None, None, None, None, None, "none", "eos_prob").sampling(lm)
    assert p == base
    p = page.Options(64, 64, 4, None, 0, "none", "eos_prob").sampling(lm)
    assert (p.gen_length, p.total_steps, p.threshold) == (64, 16, None)
    with pytest.raises(SeerError, match="tokens per step must divide the window"):
        page.Options(64, None, 5, None, None, "none", "eos_prob").sampling(lm)
    with pytest.raises(SeerError, match="gen_length"):
        page.Options(0, None, None, None, None, "none", "eos_prob").sampling(lm)
