"""MMaDA against goldens recorded with the official code (tests/fixtures/golden/mmada):
MAGVIT-v2 code ids, the framed prompt, LM logits and `mmu_generate` outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.errors import CheckpointError
from seer.lm import load
from seer.models import loader
from seer.models.configs import magvit_config, mmada_config
from seer.models.factory import random_magvit, save_magvit
from seer.models.magvit import MagvitConfig, load_magvit, preprocess
from seer.models.mmada import (
    MMaDAConfig,
    MMaDAModelLM,
    MMaDAProcessor,
    load_vq_model,
    special_token_ids,
)
from seer.models.multimodal import PromptInput
from seer.sampling import SamplingParams

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden" / "mmada"


@pytest.fixture(scope="module")
def golden():
    return load_file(GOLDEN / "golden.safetensors"), json.loads(
        (GOLDEN / "golden.json").read_text()
    )


@pytest.fixture(scope="module")
def lm():
    return load(GOLDEN)  # DiffusionLM: model + tokenizer + token ids


@pytest.fixture(scope="module")
def vq():
    return load_vq_model(GOLDEN)


def _image() -> Image.Image:
    return Image.open(GOLDEN / "image.png").convert("RGB")


def test_preprocess_matches_official(golden, vq):
    g, meta = golden
    pixels = preprocess(_image(), meta["meta"]["resolution"])
    assert torch.equal(pixels, g["pixels"])


def test_vq_codes_match_official(golden, vq):
    g, meta = golden
    pixels = preprocess(_image(), meta["meta"]["resolution"])
    codes = vq.encode(pixels[None])
    assert codes.dtype == torch.long and codes.shape == g["codes"].shape
    assert torch.equal(codes, g["codes"])


def test_unnormalised_pixels_give_other_codes(golden, vq):
    """The code-id test can fail: [0, 1] pixels (no Normalize) change the codes."""
    g, meta = golden
    pixels = preprocess(_image(), meta["meta"]["resolution"]).mul(0.5).add(0.5)
    assert not torch.equal(vq.encode(pixels[None]), g["codes"])


def test_squash_preprocessing_differs(golden):
    g, meta = golden
    squashed = preprocess(_image(), meta["meta"]["resolution"], squash=True)
    assert squashed.shape == g["pixels"].shape and not torch.equal(squashed, g["pixels"])


def test_processor_builds_official_prompt(golden, lm, vq):
    _, meta = golden
    proc = MMaDAProcessor(lm.tokenizer, vq, lm.model.config)
    assert proc.accepts_images and proc.resolution == meta["meta"]["resolution"]
    out = proc(meta["meta"]["question"], _image())
    assert isinstance(out, PromptInput) and out.embeds is None
    assert out.ids == meta["prompt_ids"]
    # without an image: the chat template alone (the tail of the framed prompt)
    text = proc(meta["meta"]["question"], None).ids
    assert meta["prompt_ids"][-len(text) :] == text
    ids = special_token_ids(lm.tokenizer)
    expected = {k: meta["meta"]["reserved_token_mapping"][k] for k in ids}
    assert ids == expected


def test_processor_from_folder_finds_vq(golden, lm):
    _, meta = golden
    proc = MMaDAProcessor.from_folder(GOLDEN, lm.tokenizer, lm.model.config)
    assert proc(meta["meta"]["question"], _image()).ids == meta["prompt_ids"]


def test_loads_as_mmada(lm):
    assert isinstance(lm.model, MMaDAModelLM) and isinstance(lm.model.config, MMaDAConfig)
    cfg = lm.model.config
    assert cfg.new_vocab_size == cfg.llm_vocab_size + cfg.codebook_size == cfg.vocab_size


def test_logits_match_official(golden, lm):
    g, _ = golden
    with torch.no_grad():
        logits = lm.model(g["logits_input_ids"]).logits
    torch.testing.assert_close(logits, g["logits"], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("case", [0, 1])
def test_generation_matches_mmu_generate(golden, lm, case):
    _, meta = golden
    gen = meta["generations"][case]
    kw = gen["kwargs"]
    assert kw["mask_id"] == lm.tokens.mask
    p = SamplingParams(
        gen_length=kw["max_new_tokens"],
        steps=kw["steps"],
        block_length=kw["block_length"],
        temperature=kw["temperature"],
        remasking=kw["remasking"],
    )
    prompt = meta["prompt_ids"]
    canvas = make_canvas([prompt], p.gen_length, lm.tokens, "cpu")
    out = DenoisingLoop(lm.model, lm.tokens).run(canvas, p)
    assert [prompt + out.answer[0].tolist()] == gen["output_ids"], gen["name"]
    # the public pipeline, with token-id prompts, gives the same answer
    res = lm.generate(prompt, p)
    assert res.token_ids == gen["output_ids"][0][len(prompt) :]


def test_renamed_key_fails_strict_loading(tmp_path):
    dst = tmp_path / "ckpt"
    shutil.copytree(GOLDEN, dst)
    state = load_file(dst / "model.safetensors")
    state["model.transformer.blocks.0.ff_gate.weight"] = state.pop(
        "model.transformer.blocks.0.ff_proj.weight"
    )
    save_file(state, dst / "model.safetensors")
    with pytest.raises(CheckpointError, match="missing key"):
        loader.load_model(dst)


def test_renamed_vq_key_fails(tmp_path):
    dst = tmp_path / "vq"
    shutil.copytree(GOLDEN / "vq_model", dst)
    f = dst / "pytorch_model.safetensors"
    state = load_file(f)
    state["encoder.conv_input.weight"] = state.pop("encoder.conv_in.weight")
    save_file(state, f)
    with pytest.raises(CheckpointError, match="conv_in"):
        load_magvit(dst)


def test_vq_decoder_keys_are_ignored(golden):
    state = load_file(GOLDEN / "vq_model" / "pytorch_model.safetensors")
    assert any(k.startswith("decoder.") for k in state)  # the published layout has them
    model = load_magvit(GOLDEN / "vq_model")
    assert not any(k.startswith("decoder.") for k in model.state_dict())


def test_vq_folder_from_seer_json(tmp_path, lm):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    shutil.copytree(GOLDEN / "vq_model", ckpt / "tokenizers" / "magvitv2")
    (ckpt / "seer.json").write_text(json.dumps({"vq_model": "tokenizers/magvitv2"}))
    assert load_vq_model(ckpt).config.codebook_size == lm.model.config.codebook_size
    (ckpt / "seer.json").write_text(json.dumps({"vq_model": "nowhere"}))
    with pytest.raises(CheckpointError, match="not a folder"):
        load_vq_model(ckpt)


@pytest.mark.parametrize("path", ["../tokenizers/magvitv2", "../../../../etc", "/etc", "a/../../b"])
def test_vq_folder_outside_the_checkpoint_is_refused(tmp_path, path):
    """seer.json paths are confined to the checkpoint folder (issue 9): one line, no read."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    shutil.copytree(GOLDEN / "vq_model", tmp_path / "tokenizers" / "magvitv2")
    (ckpt / "seer.json").write_text(json.dumps({"vq_model": path}))
    with pytest.raises(CheckpointError, match="vq_model") as e:
        load_vq_model(ckpt)
    assert "\n" not in str(e.value) and (
        "leaves the model folder" in str(e.value) or "relative" in str(e.value)
    )


def test_image_without_vq_model_is_a_clear_error(tmp_path, lm):
    with pytest.raises(CheckpointError, match="no image tokenizer"):
        load_vq_model(tmp_path)
    proc = MMaDAProcessor.from_folder(tmp_path, lm.tokenizer, lm.model.config)
    assert proc("what color is it ?", None).ids  # text still works
    with pytest.raises(CheckpointError, match="vq_model"):
        proc("what color is it ?", _image())


def test_tokenizer_with_named_tokens(lm):
    """A tokenizer that names <|soi|> itself is used by name, not by reserved slot."""

    class Named:
        def __init__(self, vocab):
            self.vocab = vocab

        def get_vocab(self):
            return self.vocab

    vocab = dict(lm.tokenizer.get_vocab())
    vocab.update({"<|soi|>": 40, "<|eoi|>": 41, "<|mmu|>": 42})
    assert special_token_ids(Named(vocab)) == {"<|soi|>": 40, "<|eoi|>": 41, "<|mmu|>": 42}
    with pytest.raises(CheckpointError, match="soi"):
        special_token_ids(Named({"a": 0}))


def test_factory_round_trip(tmp_path):
    raw = magvit_config()
    vq = random_magvit(raw, seed=3)
    save_magvit(vq, raw, tmp_path / "vq_model")
    again = load_magvit(tmp_path / "vq_model")
    x = torch.rand(2, 3, 16, 16) * 2 - 1
    assert torch.equal(vq.encode(x), again.encode(x))
    assert again.encode(x).shape == (2, 64) and int(again.encode(x).max()) < 64
    cfg = MMaDAConfig.from_dict(mmada_config(256, mask_token_id=2, eos_token_id=1))
    assert cfg.vocab_size == 320 and cfg.num_vq_tokens == 64


def test_the_vq_folder_may_hold_a_pytorch_bin_instead_of_safetensors(tmp_path):
    import shutil

    from safetensors.torch import load_file

    from seer.models.magvit import load_magvit

    src = Path(__file__).parents[1] / "fixtures" / "golden" / "mmada" / "vq_model"
    shutil.copy(src / "config.json", tmp_path / "config.json")
    (weights,) = [p for p in src.iterdir() if p.suffix == ".safetensors"]
    torch.save(load_file(weights), tmp_path / "pytorch_model.bin")
    a, b = load_magvit(src), load_magvit(tmp_path)
    pixels = torch.rand(1, 3, 16, 16) * 2 - 1
    assert torch.equal(a.encode(pixels), b.encode(pixels))


def test_a_magvit_config_without_sizes_takes_the_release_ones():
    """config.json with no encoder z_channels and no quantize codebook_dim: the released sizes
    (the defaults were once read off the slotted class, a descriptor, not 13)."""
    cfg = MagvitConfig.from_dict({})
    assert (cfg.z_channels, cfg.codebook_dim) == (13, 13)
