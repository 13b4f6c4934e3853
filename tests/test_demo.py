"""The demo's requests: the package's sample images are `seer.demo.draw_samples`' output (one
held-out request per family of the built-in multimodal model's task, on its evaluation side),
and each model shows its own samples (a folder's `images/`, else the package's)."""

from __future__ import annotations

import json

from PIL import Image, ImageChops

from seer.data import Example, in_calibration, score
from seer.demo import IMAGE_FAMILIES, _reference, draw_samples, sample_images
from seer.models.loader import builtin_path


def test_the_package_samples_are_draw_samples_output(tmp_path):
    shipped = sample_images()
    folder = shipped[0]["file"].parent
    (tmp_path / "samples.json").write_text('[{"file": "stale.png"}]')
    (tmp_path / "stale.png").write_bytes(b"")
    paths = draw_samples(tmp_path)  # what tools/draw_samples.py writes into the package
    assert not (tmp_path / "stale.png").exists()  # a previous draw's files go
    drawn = json.loads((tmp_path / "samples.json").read_text())
    assert drawn == json.loads((folder / "samples.json").read_text())
    assert sorted(p.name for p in folder.glob("*.png")) == [p.name for p in paths]
    for p in paths:
        a, b = Image.open(p).convert("RGB"), Image.open(folder / p.name).convert("RGB")
        assert ImageChops.difference(a, b).getbbox() is None, p.name
    assert [s["family"] for s in shipped] == list(IMAGE_FAMILIES)
    for s in shipped:  # held out, never on the calibration side, right by their own metric
        ex = Example("x", s["question"], image=Image.open(s["file"]).convert("RGB"))  # as drawn
        assert not in_calibration(ex) and s["prompt"] == f"<image>\n{s['question']}"
        assert score(_reference(s), s["answer"]) == 1.0
    lists = next(s for s in shipped if s["family"] == "list")
    assert score(_reference(lists), ", ".join(reversed(lists["reference"]))) == 1.0  # any order


def test_each_model_shows_its_own_samples():
    assert sample_images("builtin-vqa") == sample_images()
    v1 = sample_images("builtin-vqa-v1")  # the first VQA model's six, in its folder
    assert v1[0]["file"].parent == builtin_path("builtin-vqa-v1") / "images"
    assert [s["family"] for s in v1] == ["colour", "count", "read", "describe", "chart", "colour"]
    assert all(isinstance(_reference(s), str) for s in v1)  # exact match, as it was trained


def test_seer_is_timed_over_as_many_runs_as_the_baseline():
    from types import SimpleNamespace

    from seer import demo

    class LM:
        def __init__(self, seconds):
            self.seconds, self.calls = list(seconds), 0

        def generate(self, prompt, image=None, gen_length=None, seer=None):
            self.calls += 1
            return SimpleNamespace(stats=SimpleNamespace(seconds=self.seconds.pop(0)))

    slow = LM([0.9, 0.1, 0.1])  # a full window over MIN_SECONDS: one run
    best, runs = demo._fastest(slow, "p", None, 8, None, 3)
    assert (runs, best.stats.seconds, slow.calls) == (1, 0.9, 1)
    seer = LM([0.05, 0.01, 0.02])
    best, n = demo._fastest(seer, "p", None, 8, True, runs, until=None)
    assert (n, best.stats.seconds) == (1, 0.05)  # not the fastest of three
    quick = LM([0.1, 0.2, 0.05])
    best, runs = demo._fastest(quick, "p", None, 8, None, 3)
    assert (runs, best.stats.seconds) == (3, 0.05)


def test_a_family_the_task_lacks_is_refused_before_anything_is_removed(tmp_path):
    import pytest

    from seer.errors import SeerError

    draw_samples(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SeerError, match="has no held-out number, table, list request"):
        draw_samples(tmp_path, "builtin-vqa-v1")  # the first task has no numbers to read
    assert sorted(p.name for p in tmp_path.iterdir()) == before
