"""Loading mistakes end in one `CheckpointError` line that names the fix (issue 9): remote code,
pickles, and no stray transformers warning before our own error."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

import seer
from seer.errors import CheckpointError, SeerError
from seer.models.factory import make_random_checkpoint
from seer.models.mmada import load_vq_model

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_remote_code_tokenizer_is_one_line_without_a_web_page(tmp_path):
    ck = make_random_checkpoint("llada", tmp_path / "ck", layers=1, width=32)
    cfg = json.loads((ck / "tokenizer_config.json").read_text())
    cfg.update(tokenizer_class="XTok", auto_map={"AutoTokenizer": ["tokenization_x.XTok", None]})
    (ck / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="never runs") as e:
        seer.load(ck)
    msg = str(e.value)
    assert "\n" not in msg and "http" not in msg and "trust_remote_code" not in msg


@pytest.mark.parametrize("content", ["pickle", "garbage"])
def test_pickled_vq_weights_are_one_line_without_torchs_advice(tmp_path, content):
    folder = tmp_path / "mm"
    shutil.copytree(GOLDEN / "mmada" / "vq_model", folder / "vq_model")
    from safetensors.torch import load_file

    weights = folder / "vq_model" / "pytorch_model.safetensors"
    state = load_file(weights)
    weights.unlink()
    target = folder / "vq_model" / "pytorch_model.bin"
    if content == "pickle":
        torch.save({"state_dict": state, "x": _Evil()}, target)
    else:
        target.write_bytes(b"not a pickle" * 10)
    with pytest.raises(CheckpointError, match="pytorch_model.bin") as e:
        load_vq_model(folder)
    msg = str(e.value)
    assert "\n" not in msg and "weights_only" not in msg.replace("weights-only", "")
    if content == "pickle":
        assert "never unpickles" in msg


def test_a_prompt_over_the_context_prints_only_our_error(capfd):
    lm = seer.load("builtin-v1")
    with pytest.raises(SeerError, match="exceeds the model's context"):
        lm.generate("star " * 600)
    captured = capfd.readouterr()
    assert "Token indices" not in captured.err + captured.out
