"""The multimodal trainer: batches splice the image where the processor does; a few steps
export a checkpoint in the LaViDa layout that `seer.load` answers image questions with."""

from __future__ import annotations

import random

import torch

import seer
from seer.models.factory import make_random_checkpoint
from seer.models.vision import IMAGE_TOKEN_INDEX
from synthetic import vqa
from training import builtin_vqa as train_vqa

TINY = dict(
    d_model=32,
    n_layers=2,
    n_heads=2,
    mlp_hidden_size=64,
    vision_hidden=16,
    vision_layers=2,
    vision_heads=2,
    batch_size=4,
    total_steps=3,
    init_from="",
)


def test_batches_match_the_inference_prompt_and_training_exports_a_loadable_model(tmp_path):
    c = train_vqa.TrainConfig(**TINY)
    tok, raw, model, proc, lm = train_vqa.build(tmp_path, c)
    batcher = train_vqa.Batcher(proc, tok, c.window)
    examples = vqa.generate_examples(4, seed=0, split="train")
    x, am, p, wins, image_at, tiles = batcher(examples, random.Random(0), 1.0)
    assert image_at.sum(1).tolist() == [batcher.n_image] * 4
    for r, e in enumerate(examples):  # the training row is the inference prompt, image spliced
        prompt = lm.prompt(e.question, e.image())
        row = x[r, :p][am[r, :p].bool()]
        keep = ~image_at[r, :p][am[r, :p].bool()]
        assert row[keep].tolist() == [
            t for t, k in zip(prompt.ids, keep.tolist(), strict=True) if k
        ]
        assert IMAGE_TOKEN_INDEX not in row.tolist()
        feats = proc.image_features(e.image())
        at = int(torch.nonzero(image_at[r])[0]) - (p - len(prompt.ids))
        assert torch.allclose(prompt.embeds[at : at + feats.shape[0]], feats)
    train_vqa.train(tmp_path, minutes=5, c=c, eval_every=10**6)
    loaded = seer.load(tmp_path / "export")
    assert loaded.multimodal and loaded.processor.system is None
    g = loaded.generate(examples[0].question, image=examples[0].image(), gen_length=8, steps=4)
    assert len(g.token_ids) == 8


def test_demo_shows_images_questions_and_answers(tmp_path, capsys, monkeypatch):
    from seer.demo import run_demo

    monkeypatch.setenv("COLUMNS", "250")  # rich folds cells to the terminal width
    folder = make_random_checkpoint("lavida-llada", tmp_path / "m", layers=4, width=32)
    png = tmp_path / "demo.png"
    assert run_demo(folder, png, repeats=1) == png
    out = capsys.readouterr().out
    assert "00_colour" in out and "image encoding" in out and "speedup" in out
    assert "=base" in out and "=ref" in out
    assert png.stat().st_size > 1000


def test_the_first_multimodal_model_loads_and_answers_its_sample_colours():
    from seer.demo import sample_images

    lm = seer.load("builtin-vqa-v1")
    assert lm.multimodal and lm.meta["seer"]["config"]["signal"] == "eos_prob"
    colours = [s for s in sample_images("builtin-vqa-v1") if s["family"] == "colour"]
    outs = lm.generate(
        [s["question"] for s in colours], image=[s["file"] for s in colours], seer=True
    )
    assert [g.text for g in outs] == [s["answer"] for s in colours]
    assert all(g.stats.window < 64 for g in outs)  # Seer cut the 64-position window


def test_the_shipped_multimodal_model_is_calibrated_on_its_own_task_in_its_window():
    """`builtin-vqa` (the VQA model v2, any release): its seer.json was calibrated on its own
    task in its own 128 window, and Seer answers its samples in that window (never an answer's
    particular words: a release changes them)."""
    from seer.demo import sample_images

    lm = seer.load("builtin-vqa")
    meta = lm.meta["seer"]
    assert lm.multimodal and meta["gen_length"] == lm.sampling().gen_length == 128
    assert meta["calibration"]["data"] == "builtin-vqa"
    assert meta["calibration"]["evaluation"]["no_boundary"] == 0  # a boundary in every row
    samples = sample_images("builtin-vqa")[:2]
    outs = lm.generate(
        [s["question"] for s in samples], image=[s["file"] for s in samples], seer=True
    )
    assert all(g.stats.gen_length == 128 and g.text for g in outs)
    assert all(g.stats.window < 128 for g in outs)  # Seer cut the windows of one-word answers
