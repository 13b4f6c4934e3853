"""Calibration on image questions: the step-0 profiles come from the spliced canvas that
`generate` denoises, the task follows the model, and seer.json keeps the keys it does not set."""

from __future__ import annotations

import json

import pytest
import torch

import seer
from seer.boundary import calibrate as cal
from seer.boundary.probe import end_probability
from seer.commands.calibrate import run_calibration, write_defaults
from seer.config import SamplingParams
from seer.data import builtin_examples
from seer.demo import vqa
from seer.errors import SeerError
from seer.models.factory import make_random_checkpoint


@pytest.fixture(scope="module")
def lavida_dir(tmp_path_factory):
    folder = make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=4)
    (folder / "seer.json").write_text(json.dumps({"system_prompt": None}))
    return folder


@pytest.fixture(scope="module")
def lavida(lavida_dir):
    return seer.load(lavida_dir)


def test_task_follows_the_model_and_is_checked(lavida, tmp_path):
    text_lm = seer.load(make_random_checkpoint("llada", tmp_path / "t"))
    assert cal.task_for(lavida, None) == "vqa" and cal.task_for(text_lm, None) == "text"
    assert cal.task_for(lavida, "text") == "text"  # text prompts suit a multimodal model too
    with pytest.raises(SeerError, match="text model"):
        cal.task_for(text_lm, "vqa")
    with pytest.raises(SeerError, match="unknown task"):
        cal.task_for(lavida, "audio")


def test_heldout_vqa_examples_carry_images_and_the_bare_question():
    ex = cal.heldout_examples("vqa", 5, seed=3)
    ref = builtin_examples("builtin-vqa", 5, seed=3, part="eval")
    assert [e.answer for e in ex] == [r.answer for r in ref]
    assert all(e.image.size == (vqa.IMAGE_SIZE,) * 2 for e in ex)
    assert all("<image>" not in e.text for e in ex)  # the processor places the image
    text = cal.heldout_examples("text", 4, seed=7)
    assert all(e.image is None for e in text)


def test_collect_measures_the_spliced_image_canvas(lavida):
    g = 16
    ex = cal.heldout_examples("vqa", 3, seed=0)
    samples = cal.collect(lavida, ex, g, batch=2)
    assert [s.family for s in samples] == [e.family for e in ex]
    n_layers = len(lavida.model.layers)
    for s in samples:
        assert s.sparsity.shape == (2, n_layers, len(cal.THETAS), g)
        assert s.end_prob.shape == (g,) and 0 <= s.true_len <= g
    # one request alone: the same answer and step-0 P(end) as generate / canvas with its image
    (one,) = cal.collect(lavida, ex[:1], g, batch=1)
    gen = lavida.generate(ex[0].text, image=ex[0].image, gen_length=g)
    assert one.true_len == gen.stats.tokens
    p = SamplingParams(gen_length=g, remasking="low_confidence")
    logits = lavida.loop.forward(lavida.canvas(ex[0].text, p, ex[0].image), p, 0, g)
    assert torch.allclose(one.end_prob, end_probability(logits, lavida.tokens.enders)[0])
    # and the image matters: another picture gives another profile
    (other,) = cal.collect(lavida, [cal.Example(ex[0].family, ex[0].text, "", ex[1].image)], g)
    assert not torch.allclose(one.end_prob, other.end_prob)


def test_write_defaults_keeps_other_keys(tmp_path):
    (tmp_path / "seer.json").write_text(json.dumps({"system_prompt": None, "config": {"x": 1}}))
    write_defaults(tmp_path, 32, {"signal": "eos_prob"}, {"signal": "sparsity"}, {"n": 3})
    meta = json.loads((tmp_path / "seer.json").read_text())
    assert meta["system_prompt"] is None and meta["config"] == {"signal": "eos_prob"}
    assert meta["gen_length"] == 32 and meta["calibration"] == {"n": 3}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    write_defaults(fresh, 8, {}, {}, {})
    keys = set(json.loads((fresh / "seer.json").read_text()))
    assert keys == {"gen_length", "config", "sparsity_config", "calibration"}


def test_calibrate_cli_on_a_multimodal_model_writes_defaults_and_plots(lavida_dir, tmp_path):
    report = run_calibration(lavida_dir, 5, tmp_path / "cal", write=True, max_over=0.5)
    assert report["task"] == "vqa" and report["n"] == 5
    assert set(report["baseline_exact_match_per_family"]) <= set(vqa.FAMILIES)
    for png in ("sparsity_aligned.png", "sparsity_aligned_best.png", "end_prob_aligned.png"):
        assert (tmp_path / "cal" / png).is_file()
    meta = json.loads((lavida_dir / "seer.json").read_text())
    assert "system_prompt" in meta and meta["system_prompt"] is None
    assert meta["calibration"]["task"] == "vqa"
    lm = seer.load(lavida_dir)
    assert lm.processor.system is None  # the kept key still reaches the processor
    assert seer.boundary.truncation.resolve(lm, True).signal == meta["config"]["signal"]
