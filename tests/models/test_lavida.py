"""LaViDa (LLaDA and Dream layouts) on tiny random checkpoints: loading, prompts with spliced
image features, the loop fed embeddings, Seer and the KV cache unchanged on top."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

import seer
from seer.boundary.probe import step0
from seer.engine.request import seer_config as resolve
from seer.errors import CheckpointError, SeerError
from seer.models.factory import make_random_checkpoint
from seer.models.vision import IMAGE_TOKEN_INDEX, best_resolution, grid_shape, merge


def _image(w: int = 60, h: int = 40, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((h, w, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module", params=["lavida-llada", "lavida-dream"])
def lavida(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    make_random_checkpoint(request.param, folder, layers=4)
    return seer.load(folder)


def test_prompt_splices_the_image_where_the_placeholder_was(lavida):
    proc = lavida.processor
    text = proc.prompt_text("what colour ?", image=True, chat=True)
    ids = proc.token_ids(text)
    assert ids.count(IMAGE_TOKEN_INDEX) == 1
    at = ids.index(IMAGE_TOKEN_INDEX)
    feats = proc.image_features(_image())
    p = lavida.prompt("what colour ?", _image())
    assert len(p.ids) == len(ids) - 1 + feats.shape[0]
    assert torch.allclose(p.embeds[at : at + feats.shape[0]], feats)
    embed = lavida.model.get_input_embeddings()
    assert torch.equal(p.embeds[:at], embed(torch.tensor(ids[:at])))


def test_generation_depends_on_the_image_and_batches_like_single_runs(lavida):
    kw = dict(gen_length=16, steps=8)
    a = lavida.generate("what colour ?", image=_image(seed=0), **kw)
    b = lavida.generate("what colour ?", image=_image(seed=1), **kw)
    both = lavida.generate(["what colour ?", "what colour ?"], image=[_image(seed=0), None], **kw)
    text_only = lavida.generate("what colour ?", **kw)
    assert both[0].token_ids == a.token_ids
    assert both[1].token_ids == text_only.token_ids
    logits = []
    for img in (_image(seed=0), _image(seed=1)):
        c = lavida.canvas("what colour ?", lavida_params(), img)
        logits.append(lavida.loop.forward(c, lavida_params(), 0, 16))
    assert not torch.allclose(logits[0], logits[1])  # the image reaches the answer logits
    assert a.stats.window == b.stats.window == 16


def lavida_params():
    from seer.sampling import SamplingParams

    return SamplingParams(gen_length=16, steps=8).with_defaults("low_confidence")


def test_seer_and_cache_run_on_spliced_prompts(lavida):
    img = _image()
    base = lavida.generate("describe", image=img, gen_length=16, steps=8)
    cut = lavida.generate("describe", image=img, gen_length=16, steps=8, seer=True)
    assert cut.boundary is not None and cut.stats.gen_length == 16
    full = seer.SeerConfig(signal="eos_prob", eos_run=10_000)  # never fires: same as baseline
    same = lavida.generate("describe", image=img, gen_length=16, steps=8, seer=full)
    assert same.token_ids == base.token_ids
    cached = lavida.generate("describe", image=img, gen_length=16, steps=8, cache="prefix")
    assert len(cached.token_ids) == 16


def test_bad_images_and_misuse_get_clear_errors(lavida, tmp_path):
    with pytest.raises(SeerError, match="does not exist"):
        lavida.generate("hi", image=tmp_path / "nope.png", gen_length=8)
    (tmp_path / "text.png").write_text("not an image")
    with pytest.raises(SeerError, match="not an image"):
        lavida.generate("hi", image=tmp_path / "text.png", gen_length=8)
    with pytest.raises(SeerError, match="images for"):
        lavida.generate(["a", "b"], image=[_image()], gen_length=8)
    with pytest.raises(SeerError, match="token-id prompts"):
        lavida.generate([[5, 6, 7]], image=_image(), gen_length=8)
    with pytest.raises(SeerError, match=r"2 <image> placeholder\(s\) but 1 image"):
        lavida.generate("<image> <image> what", image=_image(), gen_length=8)  # one per image


def test_text_model_refuses_an_image(tmp_path):
    make_random_checkpoint("llada", tmp_path)
    lm = seer.load(tmp_path)
    with pytest.raises(SeerError, match="text model"):
        lm.generate("hi", image=_image(), gen_length=8)


def test_vision_keys_are_the_published_ones_and_strict(tmp_path):
    make_random_checkpoint("lavida-llada", tmp_path)
    from safetensors.torch import load_file, save_file

    state = load_file(tmp_path / "model.safetensors")
    assert "model.vision_tower.vision_tower.vision_model.embeddings.patch_embedding.weight" in state
    assert {"model.mm_projector.0.weight", "model.mm_projector.2.weight"} <= set(state)
    assert "model.image_newline" in state
    n_layers = json.loads((tmp_path / "config.json").read_text())["vision_config"][
        "num_hidden_layers"
    ]
    last = (
        f"model.vision_tower.vision_tower.vision_model.encoder.layers.{n_layers - 1}.mlp.fc1.weight"
    )
    assert last not in state  # select layer -2: the last tower layer is not in the checkpoint
    state["model.mm_projector.9.weight"] = state.pop("model.mm_projector.2.weight")
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match="keys do not match"):
        seer.load(tmp_path)


def test_anyres_grid_and_unpad_layout():
    from seer.models.configs import siglip_config
    from seer.models.vision import VisionConfig

    raw = {
        "vision_config": siglip_config(image_size=56, patch=8),
        "image_aspect_ratio": "anyres_max_4",
        "image_grid_pinpoints": [[56, 56], [112, 56], [56, 112], [112, 112]],
        "mm_patch_merge_type": "spatial_unpad",
        "mm_hidden_size": 32,
    }
    cfg = VisionConfig.from_dict(raw)
    assert best_resolution((60, 40), cfg.grid_pinpoints) == (112, 56)
    assert grid_shape((60, 40), cfg) == (2, 1)
    side, d = 7, 5
    f = torch.randn(3, side * side, d)  # base + 2 tiles
    newline = torch.randn(d)
    out = merge(f, (60, 40), cfg, newline)
    # base tile first, then the 7 x 14 grid unpadded to the image's 3:2 aspect (7 x 10: 60/40
    # of 7 rows is 10 columns, the 4 padded ones cut), each row ending with the newline
    assert torch.equal(out[: side * side], f[0])
    rows = out[side * side :].view(side, 10 + 1, d)
    assert torch.equal(rows[:, -1], newline.expand(side, d))
    grid = f[1:].view(1, 2, side, side, d).permute(0, 2, 1, 3, 4).reshape(side, 2 * side, d)
    assert torch.equal(rows[:, :-1], grid[:, 2:12])
    with pytest.raises(CheckpointError):
        VisionConfig.from_dict({**raw, "mm_projector_type": "linear"})


def test_builtin_layout_features_equal_an_independent_reference():
    """The built-in multimodal model's layout ("pad", "flat", one 96 px tile, 2x2 average pool):
    features equal SigLIP's hidden state before the last layer, projected, average-pooled 2x2,
    computed here from transformers' full tower and plain tensor ops (pins this path)."""
    from transformers import SiglipVisionConfig, SiglipVisionModel

    from seer.models.configs import lavida_config, llada_config, siglip_config
    from seer.models.factory import random_model
    from seer.models.image_processor import ImageProcessor

    tower_raw = siglip_config(hidden_size=32, layers=4, heads=4, image_size=96, patch=8)
    raw = lavida_config(
        llada_config(64, d_model=32, n_layers=1, n_heads=2, mask_token_id=63, eos_token_id=62),
        "llada",
        tower_raw,
        image_aspect_ratio="pad",
        mm_patch_merge_type="flat",
    )
    model = random_model(raw, seed=3, std=0.2)
    vision = model.vision
    image = _image(60, 40, seed=2)
    tiles, size = ImageProcessor(vision.cfg)(image)
    assert tiles.shape == (1, 3, 96, 96) and size == (60, 40)
    # pixels: pad to a square in SigLIP's mean colour (127), resize to 96 (bicubic), to [-1, 1]
    square = Image.new("RGB", (60, 60), (127, 127, 127))
    square.paste(image, (0, 10))
    arr = np.asarray(square.resize((96, 96), Image.Resampling.BICUBIC), dtype=np.float32)
    ref_pixels = torch.from_numpy((arr / 255 - 0.5) / 0.5).permute(2, 0, 1)[None]
    torch.testing.assert_close(tiles, ref_pixels, atol=1e-6, rtol=0)
    # features: the full 4-layer tower's hidden_states[-2], projector, 2x2 average pool
    fields = {k: v for k, v in tower_raw.items() if k != "model_type"}
    full = SiglipVisionModel(SiglipVisionConfig(**fields, vision_use_head=False)).eval()
    ours = model.model.vision_tower.vision_tower.vision_model.state_dict()
    inner = getattr(full, "vision_model", full)  # transformers 5 has no `vision_model` level
    missing = inner.load_state_dict(ours, strict=False).missing_keys
    assert all(".layers.3." in k for k in missing)  # only the dropped last layer
    with torch.no_grad():
        h = full(ref_pixels, output_hidden_states=True).hidden_states[-2]  # (1, 144, 32)
        f = model.model.mm_projector(h).view(1, 12, 12, -1).permute(0, 3, 1, 2)
        ref = torch.nn.functional.avg_pool2d(f, 2).flatten(2).transpose(1, 2)[0]  # (36, 32)
        got = vision.features(tiles, size)
    assert got.shape == (36, 32)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_prefix_lm_batches_like_single_runs_and_runs_under_seer(lavida):
    """LaViDa's prefix_lm cache (the prompt encoded once, alone) on left-padded batches: each
    row equals its run alone; Seer's cut and the guard work on top of it."""
    kw = dict(gen_length=16, steps=8, cache="prefix_lm", schedule="shift")
    prompts = ["what colour ?", "what is the colour of the box on the left ?"]
    images = [_image(seed=0), _image(seed=1)]
    both = lavida.generate(prompts, image=images, **kw)
    for q, img, got in zip(prompts, images, both, strict=True):
        assert lavida.generate(q, image=img, **kw).token_ids == got.token_ids
    plain = lavida.generate(prompts[0], image=images[0], gen_length=16, steps=8, schedule="shift")
    assert plain.token_ids != both[0].token_ids  # a different model of the sequence
    cut = lavida.generate(prompts[0], image=images[0], seer=True, **kw)
    assert cut.boundary is not None and len(cut.token_ids) == 16
    assert len(cut.boundary.profile) == 16  # step 0 probed the whole window
    # the probe reads step 0 as it runs: under prefix_lm the prompt prefill, then the answer
    # forward; under cache="none" one full forward. Each equals what calibration measures.
    plain_cut = lavida.generate(prompts[0], image=images[0], seer=True, **{**kw, "cache": "none"})
    cfg = resolve(lavida, True)
    for run, cache in ((cut, "prefix_lm"), (plain_cut, "none")):
        p = lavida.sampling(**{**kw, "cache": cache})
        prof = step0(
            lavida,
            lavida.prompt(prompts[0], images[0]),
            params=p,
            layers=(cfg.layer,),
            thetas=(cfg.theta,),
            tensors=(cfg.tensor,),
        )
        assert run.boundary.profile == prof.at(cfg.layer, cfg.theta, cfg.tensor)[0].tolist()
    assert cut.boundary.profile != plain_cut.boundary.profile  # the prompt never sees the answer


def test_shift_schedule_reveals_every_mask_few_first():
    from seer.diffusion.schedule import shift_counts

    for size in (1, 7, 16, 23, 64):
        for steps in (1, 4, 12, 32, 80):
            counts = shift_counts(size, steps)
            assert len(counts) == min(size, steps) and sum(counts) == size
            assert min(counts) >= 1
    assert shift_counts(23, 12) == (1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4, 4)  # LaViDa's get_num_..._sch


def test_seer_that_never_cuts_leaves_prefix_lm_answers_unchanged(lavida):
    kw = dict(gen_length=16, steps=8, cache="prefix_lm")
    base = lavida.generate("describe", image=_image(), **kw)
    never = seer.SeerConfig(signal="eos_prob", eos_run=10_000)
    assert lavida.generate("describe", image=_image(), seer=never, **kw).token_ids == base.token_ids
    # the sparsity probe's hooks on both step-0 forwards change nothing either, and a sampled
    # run draws the same numbers (step 0 reveals from its own positions' logits only)
    flat = seer.SeerConfig(signal="sparsity", tau_jump=2.0)  # no step of 2 in a fraction
    for extra in ({}, {"temperature": 0.7, "seed": 3, "block_length": 8}):
        base = lavida.generate("describe", image=_image(), **kw, **extra)
        got = lavida.generate("describe", image=_image(), seer=flat, **kw, **extra)
        assert got.boundary.length is None and got.token_ids == base.token_ids


def test_cut_inside_step0_under_prefix_lm_is_a_clear_error(lavida):
    cfg = seer.SeerConfig(cut_in_step0=True)
    with pytest.raises(SeerError, match="cut_in_step0 cannot run under cache='prefix_lm'"):
        lavida.generate("describe", image=_image(), gen_length=16, cache="prefix_lm", seer=cfg)
