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


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("family", CASES)
def test_default_call_matches_the_official_readme_call(tmp_path, family, dtype):
    g = json.loads((GOLDEN / "defaults" / f"{family}.json").read_text())
    want = g[dtype][0]
    prompt = g["prompt_ids"][0]
    folder = _checkpoint(tmp_path, g["checkpoint"], len(prompt) + len(want))
    has_tokenizer = (folder / "tokenizer.json").is_file()
    lm = seer.load(folder, dtype=dtype, tokenizer=has_tokenizer)
    assert lm.sampling().gen_length == len(want)  # the README call's window is the default
    out = lm.generate(prompt, seed=g["seed"])  # nothing else: the model's defaults
    assert out.token_ids == want
