"""LLaDA-V's language model against goldens of the official code (tests/fixtures/golden/llada_v).

The fixture's spliced prompt embeddings (image features in place, made by the official
`prepare_inputs_labels_for_multimodal`) are fed to our language model with 16 mask embeddings
appended, as the official `generate_with_embeds` does; the logits must match the official ones.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from seer.errors import CheckpointError
from seer.models.configs import llada_v_config
from seer.models.factory import save_checkpoint
from seer.models.llada_v import LLaDAVConfig, LLaDAVModelLM, is_language_model_key
from seer.models.loader import load_model, read_config
from seer.models.tokens import load_tokenizer, token_ids

FIXTURE = Path(__file__).parents[1] / "fixtures" / "golden" / "llada_v"


@pytest.fixture(scope="module")
def golden():
    return json.loads((FIXTURE / "golden.json").read_text()), load_file(
        FIXTURE / "golden.safetensors"
    )


@pytest.fixture(scope="module")
def loaded():
    return load_model(FIXTURE)


@pytest.fixture(scope="module")
def tokens():
    _, raw = read_config(FIXTURE)
    return token_ids(raw, load_tokenizer(FIXTURE), LLaDAVModelLM.banned_token_names)


def test_logits_match_official(golden, loaded, tokens):
    meta, g = golden
    model = loaded
    embeds = g["inputs_embeds"]  # (1, Lp, D) official spliced prompt
    n = meta["meta"]["n_logit_masks"]
    mask = model.get_input_embeddings()(torch.tensor([tokens.mask]))  # (1, D)
    x = torch.cat([embeds, mask[None].expand(1, n, -1)], dim=1)
    with torch.no_grad():
        logits = model(inputs_embeds=x).logits.float()
    torch.testing.assert_close(logits[:, embeds.shape[1] :], g["logits_answer"], rtol=0, atol=1e-4)
    torch.testing.assert_close(logits[:, :8], g["logits_prompt_head"], rtol=0, atol=1e-4)


def test_logits_positions_and_prefix_cache_agree(golden, loaded, tokens):
    _, g = golden
    model = loaded
    embeds = g["inputs_embeds"][:, :64]  # a short prompt keeps this fast
    mask = model.get_input_embeddings()(torch.tensor([tokens.mask]))
    x = torch.cat([embeds, mask[None].expand(1, 8, -1)], dim=1)
    with torch.no_grad():
        full = model(inputs_embeds=x).logits
        sliced = model(inputs_embeds=x, logits_positions=slice(64, None)).logits
        cache = model(inputs_embeds=x, use_cache=True).past_key_values
        pos = torch.arange(64, 72)[None]  # absolute positions of the forwarded columns
        cached = model(
            inputs_embeds=x[:, 64:], position_ids=pos, past_key_values=cache, cache_start=64
        ).logits
    torch.testing.assert_close(sliced, full[:, 64:])
    torch.testing.assert_close(cached, full[:, 64:], rtol=1e-5, atol=1e-5)


def test_whole_checkpoint_loads_and_config_kept(loaded):
    model = loaded
    names = set(load_file(FIXTURE / "model.safetensors"))
    assert set(model.state_dict()) == names  # strict: vision keys are the model's too
    others = {k for k in names if not is_language_model_key(k)}
    assert "model.image_newline" in others
    assert any(k.startswith("model.mm_projector.") for k in others)
    assert any(k.startswith("model.vision_tower.vision_tower.vision_model.") for k in others)
    _, raw = read_config(FIXTURE)
    vision = model.config.vision
    assert vision.aspect_ratio == raw["image_aspect_ratio"] == "anyres_max_4"
    assert vision.max_tiles == 4
    assert vision.grid_pinpoints == raw["image_grid_pinpoints"]
    assert vision.merge_type == "spatial_unpad"
    assert vision.mm_hidden_size == raw["mm_hidden_size"]
    assert vision.pool_stride == 1  # LLaDA-V does not pool image features (LaViDa does)
    assert vision.processor == {}  # the official processor ignores preprocessor_config.json
    assert model.config.extra["mm_vision_tower"] == raw["mm_vision_tower"]


def test_probe_attributes(loaded):
    model = loaded
    for layer in model.layers:
        assert layer.down_proj is layer.mlp.down_proj
        assert layer.gate_proj is layer.mlp.gate_proj
        assert layer.down_proj.in_features == model.config.intermediate_size


def _copy_fixture(tmp_path: Path) -> Path:
    dst = tmp_path / "ckpt"
    dst.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(FIXTURE / name, dst / name)
    shutil.copytree(FIXTURE / "siglip2-tiny", dst / "siglip2-tiny")  # named by config.json
    return dst


@pytest.mark.parametrize(
    "old,new",
    [
        ("model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.ff_out.weight"),
        ("lm_head.weight", "model.transformer.ff_out.weight"),  # original-layout name
        ("model.image_newline", "model.image_newline_"),
        ("model.mm_projector.2.weight", "model.mm_projector.1.weight"),
        (
            "model.vision_tower.vision_tower.vision_model.encoder.layers.1.mlp.fc1.weight",
            "model.vision_tower.vision_model.encoder.layers.1.mlp.fc1.weight",
        ),
    ],
)
def test_renamed_key_fails_strict_loading(tmp_path, old, new):
    folder = _copy_fixture(tmp_path)
    state = load_file(folder / "model.safetensors")
    state[new] = state.pop(old)
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="missing"):
        load_model(folder)


def test_extra_tower_layer_fails_strict_loading(tmp_path):
    """The checkpoint holds the tower without its last layer (select_layer -2): a full tower's
    extra layer is an unexpected key."""
    folder = _copy_fixture(tmp_path)
    state = load_file(folder / "model.safetensors")
    pre = "model.vision_tower.vision_tower.vision_model.encoder.layers."
    for k in [k for k in state if k.startswith(pre + "1.")]:
        state[k.replace(pre + "1.", pre + "2.")] = state[k].clone()
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="unexpected"):
        load_model(folder)


def test_text_only_checkpoint_roundtrip(tmp_path):
    raw = llada_v_config(40, hidden_size=32, num_attention_heads=4, vision=False)
    assert LLaDAVConfig.from_dict(raw).vision is None
    torch.manual_seed(0)
    model = LLaDAVModelLM(LLaDAVConfig.from_dict(raw)).eval()  # torch's default init
    save_checkpoint(model, raw, tmp_path)
    loaded = load_model(tmp_path)
    assert loaded.vision is None
    ids = torch.arange(10)[None]
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model(ids).logits)


@pytest.mark.parametrize(
    "change,match",
    [
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "rope_scaling"),
        ({"hidden_act": "gelu"}, "hidden_act"),
        ({"num_attention_heads": 5}, "divisible"),
        ({"mm_projector_type": "linear"}, "mm_projector_type"),
    ],
)
def test_config_validation(change, match):
    raw = llada_v_config(40)
    raw.update(change)
    with pytest.raises(ValueError, match=match):
        LLaDAVConfig.from_dict(raw)


def test_config_requires_sizes():
    raw = llada_v_config(40)
    del raw["intermediate_size"]
    with pytest.raises(ValueError, match="intermediate_size"):
        LLaDAVConfig.from_dict(raw)


def test_fixture_tokenizer_renders_the_official_prompt(golden):
    """The fixture tokenizer, loaded by Seer (transformers 5), gives the official prompt and ids."""
    meta, g = golden
    tok = load_tokenizer(FIXTURE)
    messages = [
        {"role": "system", "content": meta["system"]},
        {"role": "user", "content": meta["question"]},
    ]
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt == meta["prompt"]
    before_image = prompt.split("<image>")[0]
    ids = g["input_ids"][0].tolist()
    assert tok(before_image, add_special_tokens=False)["input_ids"] == ids[: ids.index(-200)]
