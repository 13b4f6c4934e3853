"""`lm.generate(prompt)` with no option equals the official README call, token for token, in
float32 and in bfloat16 (goldens from tools/goldens/make_default_goldens.py, official code).

The official samplers do not check the model's context; the tiny fixtures say 512, shorter than
prompt + the README windows (Dream: 512 new tokens), so the test raises the field in a copy
(rotary positions do not depend on it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import seer

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"
CASES = sorted(p.stem for p in (GOLDEN / "defaults").glob("*.json"))
CONTEXT_FIELDS = ("max_sequence_length", "max_position_embeddings")
# known, not yet explained: Seer's tokens leave the official ones (from index 2 on); float32 and
# every other family in bfloat16 match. Strict: the test fails once it passes, to be unmarked.
KNOWN = {
    ("lavida_dream", "bfloat16"): "LaViDa-Dream in bfloat16 differs from the official code "
    "from the 3rd answer token (cause not found yet: image path or sampling in bf16)",
}
PARAMS = [
    pytest.param(f, d, marks=pytest.mark.xfail(strict=True, reason=KNOWN[f, d]))
    if (f, d) in KNOWN
    else pytest.param(f, d)
    for f in CASES
    for d in ("float32", "bfloat16")
]


def _checkpoint(tmp_path: Path, name: str, need: int) -> Path:
    folder = GOLDEN / name
    raw = json.loads((folder / "config.json").read_text())
    if all(raw.get(f, need) >= need for f in CONTEXT_FIELDS):
        return folder
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    raw.update({f: need for f in CONTEXT_FIELDS if f in raw})
    (copy / "config.json").write_text(json.dumps(raw))
    return copy


@pytest.mark.parametrize("family, dtype", PARAMS)
def test_default_call_matches_the_official_readme_call(tmp_path, family, dtype):
    g = json.loads((GOLDEN / "defaults" / f"{family}.json").read_text())
    want = g[dtype][0]
    call = g["call"]
    folder = _checkpoint(tmp_path, g["checkpoint"], len(g["prompt_ids"][0]) + 512)
    has_tokenizer = (folder / "tokenizer.json").is_file()
    lm = seer.load(folder, dtype=dtype, tokenizer=has_tokenizer)
    window = lm.sampling().gen_length
    if "image" in call:  # a multimodal README call: question + image through the processor
        question = call["question"].removeprefix("<image>\n")
        out = lm.generate(question, image=folder / call["image"], seed=g["seed"])
        assert lm.prompt(question, folder / call["image"]).ids is not None
    else:
        out = lm.generate(g["prompt_ids"][0], seed=g["seed"])  # nothing else: the defaults
    if call.get("stopping_criteria") and len(want) < window:  # the official code cuts at the
        assert out.token_ids[len(want) :] == [lm.tokens.eos] * (window - len(want))  # stop word
    else:
        assert len(want) == window  # the README call's window is the model's default
    assert out.token_ids[: len(want)] == want
