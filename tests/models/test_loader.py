"""The loader: every bad model folder gives one clear `CheckpointError`; good ones load exactly."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import seer
from seer import CheckpointError, SeerError
from seer.models.configs import dream_config, llada_config
from seer.models.factory import random_model, save_checkpoint
from seer.models.loader import load_model, resolve_dtype

IDS = {"mask_token_id": 62, "eos_token_id": 61, "pad_token_id": 61}
INPUT = torch.tensor([[5, 9, 17, 33, 62, 62, 62, 2]])


def _raw(arch: str) -> dict:
    if arch == "llada":
        return llada_config(64, d_model=32, n_layers=2, n_heads=2, **IDS)
    return dream_config(
        64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, **IDS
    )


def make(folder: Path, arch: str = "llada", seed: int = 0) -> Path:
    raw = _raw(arch)
    return save_checkpoint(random_model(raw, seed=seed, std=0.2), raw, folder)


@pytest.fixture(scope="module")
def llada_dir(tmp_path_factory) -> Path:
    return make(tmp_path_factory.mktemp("llada") / "ckpt", "llada")


@pytest.fixture(scope="module")
def dream_dir(tmp_path_factory) -> Path:
    return make(tmp_path_factory.mktemp("dream") / "ckpt", "dream")


@pytest.fixture
def copy(tmp_path, llada_dir):
    """A fresh copy of the LLaDA checkpoint that a test may damage."""
    dst = tmp_path / "copy"
    shutil.copytree(llada_dir, dst)
    return dst


def _error(path, **kw) -> str:
    """The message of the CheckpointError that loading `path` raises; it must be one line."""
    with pytest.raises(CheckpointError) as info:
        load_model(path, **kw)
    msg = str(info.value)
    assert isinstance(info.value, SeerError)
    assert msg and "\n" not in msg, msg
    return msg


def _rewrite_weights(folder: Path, edit) -> None:
    state = load_file(folder / "model.safetensors")
    edit(state)
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})


def _logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(INPUT).logits


# -- good folders ------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_roundtrip_gives_the_saved_model(tmp_path, arch):
    raw = _raw(arch)
    model = random_model(raw, seed=3, std=0.2)
    save_checkpoint(model, raw, tmp_path)
    loaded = load_model(tmp_path)
    assert type(loaded) is type(model)
    assert not loaded.training
    torch.testing.assert_close(_logits(loaded), _logits(model), rtol=0, atol=0)


def test_architecture_from_architectures_when_model_type_is_absent(copy):
    raw = json.loads((copy / "config.json").read_text())
    del raw["model_type"]  # architectures == ["LLaDAModelLM"] still names it
    (copy / "config.json").write_text(json.dumps(raw))
    assert type(load_model(copy)).__name__ == "LLaDAModelLM"


def _shard(src: Path, dst: Path) -> dict:
    """Split src's model.safetensors into two shards + an HF index in dst."""
    shutil.copytree(src, dst)
    (dst / "model.safetensors").unlink()
    state = load_file(src / "model.safetensors")
    names = sorted(state)
    half = len(names) // 2
    files = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    weight_map = {}
    for fname, part in zip(files, (names[:half], names[half:]), strict=True):
        save_file({k: state[k] for k in part}, dst / fname, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, fname))
    total = sum(t.numel() * t.element_size() for t in state.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (dst / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return index


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_sharded_checkpoint_gives_the_same_logits(tmp_path, llada_dir, dream_dir, arch):
    src = llada_dir if arch == "llada" else dream_dir
    index = _shard(src, tmp_path / "sharded")
    assert len(set(index["weight_map"].values())) == 2
    single, sharded = load_model(src), load_model(tmp_path / "sharded")
    torch.testing.assert_close(_logits(sharded), _logits(single), rtol=0, atol=0)


def test_bfloat16_loads_and_runs(llada_dir, dream_dir):
    for folder in (llada_dir, dream_dir):
        model = load_model(folder, dtype="bfloat16")
        assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
        logits = _logits(model)
        assert logits.dtype == torch.bfloat16
        assert torch.isfinite(logits.float()).all()
        # bf16 is a rounding of the float32 model, not another model
        ref = _logits(load_model(folder))
        agree = (logits.float().argmax(-1) == ref.argmax(-1)).float().mean()
        assert agree >= 0.75


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_bfloat16_pipeline_generates(tmp_path, arch):
    from seer.models.factory import make_random_checkpoint

    folder = make_random_checkpoint(arch, tmp_path / "m", layers=1, width=32)
    lm = seer.load(folder, dtype="bf16")
    assert lm.model.get_input_embeddings().weight.dtype == torch.bfloat16
    g = lm.generate("repeat star 3 times", gen_length=8)
    assert len(g.token_ids) == 8
    assert g.stats.nfe == 8


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("float32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16), (None, None)],
)
def test_resolve_dtype(name, dtype):
    assert resolve_dtype(name) == (dtype or torch.float32)
    assert resolve_dtype(torch.float16) is torch.float16


# -- bad folders -------------------------------------------------------------------------------


def test_missing_folder(tmp_path):
    msg = _error(tmp_path / "nowhere")
    assert "nowhere" in msg and "does not exist" in msg


def test_missing_folder_through_seer_load(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        seer.load(tmp_path / "nowhere")


def test_file_instead_of_folder(tmp_path):
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"")
    assert "does not exist" in _error(f)


def test_folder_without_config(tmp_path):
    msg = _error(tmp_path)
    assert "config.json" in msg


def test_invalid_json(copy):
    (copy / "config.json").write_text('{"model_type": "llada",')
    msg = _error(copy)
    assert "config.json" in msg and "not valid JSON" in msg


def test_unknown_architecture(copy):
    raw = json.loads((copy / "config.json").read_text())
    raw.update(model_type="gpt2", architectures=["GPT2LMHeadModel"])
    (copy / "config.json").write_text(json.dumps(raw))
    msg = _error(copy)
    assert "unknown architecture" in msg and "gpt2" in msg
    assert "llada" in msg and "dream" in msg  # says what is supported


@pytest.mark.parametrize(("arch", "field"), [("llada", "d_model"), ("dream", "hidden_size")])
def test_config_missing_a_required_field(tmp_path, arch, field):
    folder = make(tmp_path, arch)
    raw = json.loads((folder / "config.json").read_text())
    del raw[field]
    (folder / "config.json").write_text(json.dumps(raw))
    msg = _error(folder)
    assert field in msg and "config.json" in msg


def test_config_with_unsupported_value(copy):
    raw = json.loads((copy / "config.json").read_text())
    raw["block_type"] = "sequential"
    (copy / "config.json").write_text(json.dumps(raw))
    msg = _error(copy)
    assert "block_type" in msg and "sequential" in msg


def test_no_weights_file(copy):
    (copy / "model.safetensors").unlink()
    msg = _error(copy)
    assert "model.safetensors" in msg


def test_only_a_bin_file(copy):
    (copy / "model.safetensors").unlink()
    (copy / "pytorch_model.bin").write_bytes(b"\x80\x02}q\x00.")
    msg = _error(copy)
    assert ".bin" in msg and "safetensors" in msg


def test_missing_key(copy):
    _rewrite_weights(copy, lambda s: s.pop("model.transformer.ln_f.weight"))
    msg = _error(copy)
    assert "1 missing key" in msg and "model.transformer.ln_f.weight" in msg
    assert "unexpected" not in msg


def test_renamed_key_is_missing_and_unexpected(copy):
    old, new = "model.transformer.wte.weight", "model.transformer.embed.weight"
    _rewrite_weights(copy, lambda s: s.__setitem__(new, s.pop(old)))
    msg = _error(copy)
    assert "1 missing key" in msg and old in msg
    assert "1 unexpected key" in msg and new in msg


def test_many_unexpected_keys_list_only_the_first_few(copy):
    def add(s):
        for i in range(7):
            s[f"extra.{i}.weight"] = torch.zeros(2)

    _rewrite_weights(copy, add)
    msg = _error(copy)
    assert "7 unexpected key" in msg
    listed = set(re.findall(r"extra\.\d\.weight", msg))
    assert 1 <= len(listed) <= 3
    assert "missing" not in msg


def test_wrong_shape(copy):
    name = "model.transformer.blocks.0.q_proj.weight"
    _rewrite_weights(copy, lambda s: s.__setitem__(name, torch.zeros(32, 16)))
    msg = _error(copy)
    assert "wrong shape" in msg and name in msg
    assert "(32, 16)" in msg and "(32, 32)" in msg


def test_many_wrong_shapes_list_only_the_first_few(copy):
    def shrink(s):
        for i in range(2):
            for proj in ("q_proj", "k_proj", "v_proj"):
                s[f"model.transformer.blocks.{i}.{proj}.weight"] = torch.zeros(1, 1)

    _rewrite_weights(copy, shrink)
    msg = _error(copy)
    assert "6 tensor(s) have the wrong shape" in msg
    assert 1 <= len(re.findall(r"_proj\.weight", msg)) <= 3


def test_shard_named_in_index_but_absent(tmp_path, llada_dir):
    _shard(llada_dir, tmp_path / "sharded")
    (tmp_path / "sharded" / "model-00002-of-00002.safetensors").unlink()
    msg = _error(tmp_path / "sharded")
    assert "model-00002-of-00002.safetensors" in msg and "missing" in msg
    assert "model-00001-of-00002" not in msg


def test_index_with_missing_keys(tmp_path, llada_dir):
    index = _shard(llada_dir, tmp_path / "sharded")
    index["weight_map"].pop("model.transformer.ln_f.weight")
    (tmp_path / "sharded" / "model.safetensors.index.json").write_text(json.dumps(index))
    msg = _error(tmp_path / "sharded")
    assert "missing key" in msg and "model.transformer.ln_f.weight" in msg


@pytest.mark.parametrize("text", ['{"weight_map": ', '{"metadata": {}}'])
def test_malformed_index(tmp_path, llada_dir, text):
    _shard(llada_dir, tmp_path / "sharded")
    (tmp_path / "sharded" / "model.safetensors.index.json").write_text(text)
    msg = _error(tmp_path / "sharded")
    assert "index" in msg


def test_config_that_is_not_an_object(copy):
    (copy / "config.json").write_text("[1, 2]")
    assert "config.json" in _error(copy)


@pytest.mark.parametrize("keep", [0, 5, 1000])
def test_corrupt_safetensors(copy, keep):
    data = (copy / "model.safetensors").read_bytes()
    (copy / "model.safetensors").write_bytes(data[:keep])
    assert "model.safetensors" in _error(copy)


@pytest.mark.parametrize(
    ("arch", "field"), [("llada", "n_heads"), ("dream", "num_attention_heads")]
)
def test_zero_heads(tmp_path, arch, field):
    folder = make(tmp_path, arch)
    raw = json.loads((folder / "config.json").read_text())
    raw[field] = 0
    (folder / "config.json").write_text(json.dumps(raw))
    assert field in _error(folder)


@pytest.mark.parametrize(("hidden", "heads", "kv"), [(30, 4, 2), (32, 4, 3)])
def test_dream_heads_that_do_not_divide(tmp_path, hidden, heads, kv):
    raw = dream_config(64, hidden_size=32, num_hidden_layers=1, **IDS)
    save_checkpoint(random_model(raw), raw, tmp_path)
    raw.update(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    assert "heads" in _error(tmp_path)


@pytest.mark.parametrize("dtype", ["float8", "int8", "half-precision"])
def test_unknown_dtype(llada_dir, dtype):
    msg = _error(llada_dir, dtype=dtype)
    assert repr(dtype) in msg and "bfloat16" in msg
