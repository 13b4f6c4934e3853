"""The multimodal v2 trainer: batches splice the image where the processor does and group by
answer length; a few steps export a LaViDa-layout checkpoint that `seer.load` answers with, and a
second call resumes the run."""

from __future__ import annotations

import itertools
import json
import random

import torch

import seer
from seer.models.vision import IMAGE_TOKEN_INDEX
from synthetic import vqa2
from training import builtin_vqa2 as train_vqa2

TINY = dict(
    d_model=32,
    n_layers=2,
    n_heads=2,
    mlp_hidden_size=64,
    vision_hidden=16,
    vision_layers=2,
    vision_heads=2,
    batch_size=4,
    total_steps=2,
    window=16,
    init_from="",
    eval_n=2,
)


def test_batches_match_the_inference_prompt(tmp_path):
    c = train_vqa2.TrainConfig(**TINY)
    tok, raw, model, proc, lm = train_vqa2.build(tmp_path, c)
    assert tok.convert_tokens_to_ids("<image>") == 7
    batcher = train_vqa2.Batcher(proc, tok, c.window)
    examples = vqa2.generate_examples(4, seed=0, split="train", families=("read", "describe"))
    x, am, p, wins, image_at, tiles = batcher(examples, random.Random(0), False)
    assert image_at.sum(1).tolist() == [64] * 4  # 8 x 8 pooled tokens per 128 px picture
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
        answer = x[r, p : p + wins[r]].tolist()
        assert answer[-1] in (batcher.eot, batcher.eos) and len(answer) <= c.window
    x, am, p, wins, *_ = batcher(examples, random.Random(0), True)
    assert wins.tolist() == [c.window] * 4


def test_grouped_batches_sort_answers_by_length(tmp_path):
    c = train_vqa2.TrainConfig(**TINY)
    tok, raw, model, proc, lm = train_vqa2.build(tmp_path, c)
    batcher, queue, rng = train_vqa2.Batcher(proc, tok, c.window), [], random.Random(0)
    chunks = [train_vqa2.next_batch(queue, c, rng, batcher)[0] for _ in range(train_vqa2.GROUP)]
    spans = sorted(
        (min(lens), max(lens))
        for lens in ([len(batcher.answer(e.answer)) for e in ch] for ch in chunks)
    )
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # chunks do not interleave


def test_training_exports_a_loadable_model_and_resumes(tmp_path):
    c = train_vqa2.TrainConfig(**TINY)
    train_vqa2.train(tmp_path, minutes=5, c=c, eval_every=2)
    log = torch.load(tmp_path / "state.pt", weights_only=False)["log"]
    assert log[-1]["step"] == 2 and 0 <= log[-1]["heldout_exact_match"]["all"] <= 1
    loaded = seer.load(tmp_path / "export")
    assert loaded.multimodal and loaded.processor.system is None
    e = vqa2.generate_examples(1, seed=0, split="heldout")[0]
    g = loaded.generate(e.question, image=e.image(), gen_length=8, steps=4)
    assert len(g.token_ids) == 8
    saved = json.loads((tmp_path / "train_config.json").read_text())
    more = train_vqa2.TrainConfig(**{**saved, "total_steps": 3})
    train_vqa2.train(tmp_path, minutes=5, c=more, eval_every=100)
    assert torch.load(tmp_path / "state.pt", weights_only=False)["step"] == 3


def test_realism_benchmark_reports_every_family_and_mode(tmp_path):
    from conftest import benchmark

    c = train_vqa2.TrainConfig(**{**TINY, "total_steps": 1})
    train_vqa2.train(tmp_path, minutes=5, c=c, eval_every=100)
    with benchmark("bench_vqa2") as bench:
        mean, (lo, hi) = bench.paired_interval([1, 1, 0, 1], [0, 1, 0, 1])
        assert mean == 0.25 and lo <= mean <= hi
        argv = [
            "--model",
            str(tmp_path / "export"),
            "--n",
            "1",
            "--window",
            "16",
            "--tokens-per-step",
            "1,8",
            "--batch",
            "9",
        ]
        record = bench.main(argv)
    assert set(record["accuracy"]) == {"k=1", "k=8", "seer"}
    assert set(record["accuracy"]["k=1"]) == {*vqa2.FAMILIES, "all"}
    assert record["drop"]["k=1"]["points"] == 0.0  # the baseline against itself
    assert record["seer_mean_window"] <= 16 and record["median_answer"]["reference"] <= 4
