"""Model `seer` through lmms-eval's own evaluator, on a tiny local VQA task (no downloads).

The task (tests/harness/lmms_tasks) asks the first built-in multimodal model (`builtin-vqa-v1`,
whose answers the score check pins) about its own sample images; the harness's answers and score
must equal a direct loop of `DiffusionLM.generate` over the same JSON Lines rows, one image at a
time.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

pytest.importorskip("lmms_eval")

import seer  # noqa: E402
from seer.errors import SeerError  # noqa: E402
from seer.harness.lmms_eval import SeerLMMs  # noqa: E402  (registers model "seer")
from seer.harness.options import HarnessOptions  # noqa: E402

TASKS = Path(__file__).parent / "lmms_tasks"
IMAGES = Path(seer.__file__).parents[2] / "checkpoints" / "builtin-vqa-v1" / "images"


@pytest.fixture(scope="module")
def vlm():
    return HarnessOptions(pretrained="builtin-vqa-v1").load()


@pytest.mark.parametrize("use_seer", [False, True], ids=["baseline", "seer"])
def test_generate_until_equals_direct_loop(monkeypatch, offline, vlm, use_seer):
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    monkeypatch.chdir(TASKS.parents[2])  # the task names its data file from the repository root
    out = evaluator.simple_evaluate(
        model="seer",
        model_args=f"pretrained=builtin-vqa-v1,batch_size=4,seer={use_seer}",
        tasks=["seer_tiny_vqa"],
        task_manager=TaskManager(include_path=str(TASKS), include_defaults=False),
        log_samples=True,
    )
    samples = sorted(out["samples"]["seer_tiny_vqa"], key=lambda s: s["doc_id"])
    rows = [json.loads(x) for x in (TASKS / "seer_tiny_vqa.jsonl").read_text().splitlines()]
    direct = []
    for r in rows:  # the task's max_new_tokens is 32; the placeholder is the processor's job
        question = r["question"].removeprefix("<image>\n")
        image = Image.open(IMAGES / r["image"]).convert("RGB")
        g = vlm.generate(question, image=image, gen_length=32, seer=True if use_seer else None)
        direct.append(g.text)
    assert [
        s["resps"][0][0] if isinstance(s["resps"][0], list) else s["resps"][0] for s in samples
    ] == direct
    expected = sum(d == r["answer"] for d, r in zip(direct, rows, strict=True)) / len(rows)
    score = out["results"]["seer_tiny_vqa"]["exact_match,none"]
    assert score == pytest.approx(expected)
    assert 0 < score < 1  # the model reads colours, not text: a real measurement


def _adapter(vlm, docs):
    lm = SeerLMMs.__new__(SeerLMMs)
    lm.opts, lm.lm = HarnessOptions(pretrained="builtin-vqa-v1"), vlm
    lm.task_dict = {"t": {"test": docs}}
    return lm


def test_several_visuals_and_loglikelihood_are_clear_errors(vlm):
    img = Image.open(IMAGES / "00_colour.png").convert("RGB")
    lm = _adapter(vlm, [{"q": "what colour ?"}])
    two = SimpleNamespace(args=("q", {}, lambda d: [img, img], 0, "t", "test"))
    with pytest.raises(SeerError, match="2 visuals"):
        lm._prompt(two)
    with pytest.raises(SeerError, match="does not support loglikelihood"):
        lm.loglikelihood([two])
    one = SimpleNamespace(args=("<image>\nwhat colour ?", {}, lambda d: [img], 0, "t", "test"))
    assert lm._prompt(one) == ("what colour ?", img)


def test_entry_point_manifest():
    """pyproject.toml declares the entry point lmms-eval reads; it names the adapter class."""
    import tomllib
    from importlib.metadata import entry_points

    from lmms_eval.models import get_model

    from seer.harness import lmms_manifest

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = pyproject["project"]["entry-points"]["lmms_eval.models"]
    assert declared == {"seer": "seer.harness:lmms_manifest"}
    m = lmms_manifest()
    assert m.model_id == "seer" and m.simple_class_path == "seer.harness.lmms_eval.SeerLMMs"
    assert get_model("seer") is SeerLMMs
    installed = [e for e in entry_points(group="lmms_eval.models") if e.name == "seer"]
    for ep in installed:  # an installed seer (pip install -e .) carries it too
        assert ep.value == "seer.harness:lmms_manifest"
