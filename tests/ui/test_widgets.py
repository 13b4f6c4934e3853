"""The page's option fields are made from the options' specs (`seer.ui.widgets.widget`): each
scalar option of `SamplingParams` and `SeerConfig` becomes a field with its name, its help,
its choices, its bounds and its default; a value out of range reaches the library's check."""

from __future__ import annotations

import pytest

pytest.importorskip("gradio", reason="the ui extra is not installed (pip install 'seer[ui]')")

import gradio as gr  # noqa: E402

from seer.boundary.config import SeerConfig  # noqa: E402
from seer.sampling import SamplingParams  # noqa: E402
from seer.spec import kind, specs  # noqa: E402
from seer.ui.widgets import option_of, widget  # noqa: E402

SCALARS = [
    (cls, f, s)
    for cls in (SamplingParams, SeerConfig)
    for f, s in specs(cls)
    if kind(f) is not None
]


@pytest.mark.parametrize("cls, f, s", SCALARS, ids=lambda x: getattr(x, "name", ""))
def test_a_field_says_what_its_spec_says(cls, f, s):
    with gr.Blocks():
        w = widget(cls, f.name)
    assert option_of(w) == (cls, f.name)
    assert w.info == s.help and f.name in w.label
    assert w.value == f.default
    if s.choices:
        assert isinstance(w, gr.Dropdown) and [c[1] for c in w.choices] == list(s.choices)
    elif kind(f) is bool:
        assert isinstance(w, gr.Checkbox)
    else:
        assert isinstance(w, gr.Number) and w.precision == (0 if kind(f) is int else None)
        assert w.maximum == s.hi and w.minimum == (None if s.open_lo else s.lo)


def test_the_page_shows_its_own_value_and_words():
    with gr.Blocks():
        w = widget(SamplingParams, "threshold", 0, label="threshold (0: off)", elem_id="t")
        seer = widget(SeerConfig, "signal")
    assert (w.value, w.label, w.elem_id, w.minimum, w.maximum) == (
        0,
        "threshold (0: off)",
        "t",
        0,
        1,
    )
    assert seer.label == "Seer signal" and seer.value == "sparsity"


def test_a_value_out_of_range_is_left_to_the_librarys_one_line():
    """Gradio would refuse it with its own pop-up; the page's message area says the library's
    line instead (`gen_length must be >= 1, got 0`)."""
    with gr.Blocks():
        w = widget(SamplingParams, "gen_length")
    assert w.preprocess(0) == 0 and w.preprocess(None) is None and w.preprocess(8.0) == 8
    assert isinstance(w.preprocess(8.0), int) and (w.minimum, w.maximum) == (1, None)


def test_only_scalar_options_have_a_field():
    with pytest.raises(TypeError, match="not a scalar option"):
        widget(SamplingParams, "stop")
    with pytest.raises(TypeError, match="not a declared option"):
        widget(SamplingParams, "resolve")
