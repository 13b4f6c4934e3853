"""LaViDa (LLaDA and Dream backbones) against goldens recorded with the official LaViDa code
(tests/fixtures/golden/lavida_{llada,dream}, tools/goldens/make_mm_goldens.py): loading,
preprocessing, prompt ids, vision features, spliced embeddings, logits (full and prefix-LM
cached) and every recorded generation, token for token, through `DiffusionLM.generate`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

import seer
from seer.diffusion.cache import PrefixLMCache
from seer.errors import CheckpointError
from seer.models.lavida import official_sampling
from seer.models.vision import IMAGE_TOKEN_INDEX

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"
KINDS = ("llada", "dream")
QUESTION = {"image": "What is in the image?", "text": "Name the three colours."}


class Fixture:
    """One golden folder: the model loaded by Seer, the golden tensors and records."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.folder = GOLDEN / f"lavida_{kind}"
        self.lm = seer.load(self.folder)
        self.t = load_file(self.folder / "golden.safetensors")
        self.g = json.loads((self.folder / "golden.json").read_text())
        self.image = Image.open(self.folder / self.g["prompt_image"]["image_file"]).convert("RGB")


@pytest.fixture(scope="module", params=KINDS)
def fx(request) -> Fixture:
    return Fixture(request.param)


def test_loads_strictly_with_sizes_from_the_tower_folder(fx):
    vision = fx.lm.model.vision.cfg
    tower = json.loads((fx.folder / "siglip_vision_tower" / "config.json").read_text())
    assert vision.image_size == tower["vision_config"]["image_size"] == 54  # not SigLIP's 384
    assert vision.patch_size == tower["vision_config"]["patch_size"]
    assert vision.kept_layers == tower["vision_config"]["num_hidden_layers"] - 1
    assert fx.lm.processor.images.hf.size == {"height": 54, "width": 54}
    assert fx.lm.tokens.mask == fx.g["meta"]["mask_token_id"]


def test_a_renamed_key_fails_loading(tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(GOLDEN / "lavida_llada", folder)
    state = load_file(folder / "model.safetensors")
    state["model.mm_projector.1.weight"] = state.pop("model.mm_projector.2.weight")
    save_file(state, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match="keys do not match"):
        seer.load(folder)


def test_pixels_match(fx):
    tiles, size = fx.lm.processor.images(fx.image)
    assert list(size) == fx.g["prompt_image"]["image_sizes"][0]
    torch.testing.assert_close(tiles, fx.t["pixel_values"][0], atol=1e-6, rtol=0)


def test_prompt_ids_match(fx):
    proc = fx.lm.processor
    for key, image in (("prompt_image", True), ("prompt_text", False)):
        rec = fx.g[key]
        text = proc.prompt_text(QUESTION["image" if image else "text"], image=image, chat=True)
        assert text == rec["prompt"]
        assert proc.token_ids(text) == rec["input_ids"]
        golden_ids = fx.t["image_input_ids" if image else "text_input_ids"][0].tolist()
        assert rec["input_ids"] == golden_ids


def test_vision_features_and_spliced_embeds_match(fx):
    with torch.no_grad():
        feats = fx.lm.model.model.vision_tower(fx.t["pixel_values"][0])
    torch.testing.assert_close(feats, fx.t["vision_tower_features"], atol=1e-5, rtol=1e-5)
    prompt = fx.lm.prompt(QUESTION["image"], fx.image)
    torch.testing.assert_close(prompt.embeds, fx.t["inputs_embeds"][0], atol=1e-5, rtol=1e-5)
    expanded = fx.t["expanded_input_ids"][0]
    text_rows = expanded != IMAGE_TOKEN_INDEX
    assert len(prompt.ids) == expanded.shape[0]
    assert torch.tensor(prompt.ids)[text_rows].tolist() == expanded[text_rows].tolist()
    text = fx.lm.prompt(QUESTION["text"])
    assert text.embeds is None and text.ids == fx.g["prompt_text"]["input_ids"]


def _answer_embeds(fx, n: int, first: int | None = None) -> torch.Tensor:
    ids = torch.full((1, n), fx.lm.tokens.mask)
    if first is not None:
        ids[0, 0] = first
    return fx.lm.model.get_input_embeddings()(ids)


def test_logits_match(fx):
    model = fx.lm.model
    with torch.no_grad():
        for name, prompt in (("logits", "inputs_embeds"), ("text_logits", "text_inputs_embeds")):
            e = torch.cat([fx.t[prompt], _answer_embeds(fx, 16)], dim=1)
            want = fx.t[name]
            got = model(inputs_embeds=e).logits[:, -want.shape[1] :]
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_prefix_lm_cache_logits_match(fx):
    """The prefix_lm policy's two forwards (prompt alone, then the answer against its K/V)
    through the loop; Dream's are shifted, so the prefill yields answer position 0."""
    lm, shift = fx.lm, fx.lm.loop.shift
    p = official_sampling(
        fx.kind, max_new_tokens=16, block_length=16, temperature=0, prefix_lm=True
    )
    p = p.with_defaults(lm.default_rule)
    for tag, image in (("", fx.image), ("text_", None)):
        canvas = lm.canvas(QUESTION["image" if image else "text"], p, image)
        if shift:  # the golden answer: [argmax of the prefill's last logits, 15 masks]
            canvas.x[:, canvas.prompt_len :] = fx.t[f"{tag}prefix_cached_answer_ids"]
        cache, now = PrefixLMCache(), None
        span = cache.span(canvas, now, 0, shift, shift)
        first, kv = lm.loop.forward_cached(canvas, p, 0, shift, span, None)
        cache.store(kv)
        span = cache.span(canvas, now, shift, 16, shift)
        logits, _ = lm.loop.forward_cached(canvas, p, shift, 16, span, cache.kv)
        want = fx.t[f"{tag}logits_prefix_cached"]
        torch.testing.assert_close(logits, want[:, : 16 - shift], atol=1e-4, rtol=1e-4)
        if shift:
            torch.testing.assert_close(
                first[:, 0], fx.t[f"{tag}prefill_last_logits"], atol=1e-4, rtol=1e-4
            )


def test_generations_match_token_for_token(fx):
    for case in fx.g["generations"]:
        p = official_sampling(fx.kind, **case["kwargs"])
        image = fx.image if case["input"] == "image" else None
        out = fx.lm.generate(QUESTION[case["input"]], p, image=image)
        want = case["output_ids"][0]
        if p.cache != "prefix_lm":  # the official no-prefix samplers return [P zeros | answer]
            assert set(want[: -p.gen_length]) == {0}
        assert out.token_ids == want[-p.gen_length :], case["name"]
