#!/usr/bin/env python
"""Golden fixtures for LLaDA-V, produced by running the *official* ML-GSAI/LLaDA-V code.

None of the official code is in this repository: ``--llada-v`` points at a checkout of
github.com/ML-GSAI/LLaDA-V and its ``train/`` folder is put on ``sys.path`` at run time
(``llava.model.language_model.llava_llada.LlavaLLaDAModelLM``, ``llava.mm_utils``,
``llava.conversation``, ``llava.constants``). No official file is modified.

What it builds in ``--out`` (run with the fixture folder as the working directory, because the
checkpoint names its vision tower by the *relative* folder name ``siglip2-tiny``, exactly as the
released checkpoint names ``model/siglip2-so400m-patch14-384``):

* ``siglip2-tiny/``  a tiny SigLIP vision tower written by LLaVA's own ``SigLipVisionModel``
  (``config.json`` in the Hugging Face ``siglip`` layout with a ``vision_config``, as the real
  ``siglip2-so400m-patch14-384`` folder has; weights ``vision_model.*``). Image size 384 and
  patch 14 are kept: the official tower asserts 729 patch tokens per crop.
* ``config.json`` + ``model.safetensors``: a ``LlavaLLaDAModelLM`` (LM 2 layers, hidden 64)
  saved by the official ``save_pretrained``; tokenizer files with LLaDA's special tokens and chat
  template; ``test.png``, a deterministic non-square image.
* ``golden.json`` / ``golden.safetensors``: the prompt, ids, pixels, spliced embeddings, logits
  and greedy generations (see tests/fixtures/golden/README.md, section LLaDA-V).

The official ``generate_with_embeds`` indexes four *literal* ids (126081, 126080, 126346, 126347)
in the logits, so it cannot run on a 320-token vocabulary. The script therefore runs generation
in the real LLaDA id space through a relabelling shim (``RealIdSpace``): the embedding and the LM
head are wrapped so that tiny id t is real id ``REAL_ID[t]`` (identity for ordinary tokens, the
real ids for the special tokens) and every real id with no tiny counterpart has logit -inf. The
model computation is untouched; ids are mapped back to the tiny vocabulary afterwards.

Environment: torch 2.13.0 (CPU), transformers 4.40.2 (the repo pins 4.40.0.dev0), tokenizers
0.19, accelerate 0.29.3, einops 0.6.1, pillow, numpy<2. ``TORCHDYNAMO_DISABLE=1`` and
``HF_HUB_OFFLINE=1`` are set before importing torch/transformers (``llava.conversation`` tries to
download a Llama-3 tokenizer at import time; offline it fails fast and is not used).

Usage::

    python tools/goldens/make_llada_v_goldens.py --llada-v /src/LLaDA-V \
        --out tests/fixtures/golden/llada_v            # build (about 7 minutes on 1 CPU thread)
    python tools/goldens/make_llada_v_goldens.py --llada-v /src/LLaDA-V \
        --out tests/fixtures/golden/llada_v --verify   # re-run the official code, compare
    python tools/goldens/make_llada_v_goldens.py --llada-v /src/LLaDA-V \
        --out tests/fixtures/golden/llada_v \
        --resize-out tests/fixtures/golden/llada_v_resize   # the loader's resize (3 minutes)

``--resize-out`` builds a checkpoint shaped like the release (config vocab_size =
len(tokenizer) + 16; the release has 126464 and 126349): the fixture's weights with 16 extra
embedding and head rows (large head rows: kept, their ids would win), saved by the official
class, then loaded with the official ``load_pretrained_model``, which resizes the embeddings and
the head to len(tokenizer). It records that model's logits on a text prompt + 16 masks and two
greedy generations (official ``generate``, real id space): tests/models/test_llada_v_resize.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import contextlib
import copy
import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))  # goldens_common, beside this file
from goldens_common import git_rev  # noqa: E402

VOCAB = 320
WEIGHT_STD = 0.4  # 0.2 makes every answer position predict the same token
NORM_STD = 0.1
SEED = 0
# Tiny special tokens (ids 300..319) with the names of LLaDA's tokenizer.
SPECIALS = {
    300: "<|endoftext|>",
    301: "<|startoftext|>",
    302: "<|start_header_id|>",
    303: "<|end_header_id|>",
    304: "<|eot_id|>",
    305: "<role>",
    306: "</role>",
    307: "[CLS]",
    308: "[gMASK]",
    309: "<|reserved_token_0|>",
    310: "<|mdm_mask|>",
    **{300 + i: f"<|reserved_token_{i - 9}|>" for i in range(11, 20)},
}
MASK_ID, EOS_ID, BOS_ID, EOT_ID = 310, 300, 301, 304
# Real LLaDA ids of the tokens above (tokenizer_config.json of LLaDA-8B-Instruct / LLaDA-V).
REAL_SPECIAL = {
    300: 126081,
    301: 126080,
    302: 126346,
    303: 126347,
    304: 126348,
    307: 126082,
    308: 126083,
    310: 126336,
    305: 126349,  # <role>/</role> and reserved tokens: any free real ids (never generated here)
    306: 126350,
    **{t: 126084 + i for i, t in enumerate([309, *range(311, 320)])},
}
REAL_VOCAB = 126464
# LLaDA's chat template (tokenizer_config.json of LLaDA-8B-Instruct, as in LLaDA-V's files/).
CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
)
QUESTION = "Please describe the image in detail."
IMAGE_SIZE = (700, 250)  # (W, H): anyres picks the 768x384 grid (2x1 crops), unpad trims rows
TOWER_DIR = "siglip2-tiny"
TOWER = dict(  # tiny SigLIP; image_size/patch_size as in so400m-patch14-384 (729 tokens/crop)
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=3,
    num_attention_heads=2,
    num_channels=3,
    image_size=384,
    patch_size=14,
    hidden_act="gelu_pytorch_tanh",
    layer_norm_eps=1e-6,
    attention_dropout=0.0,
)
# LM fields of train/llada_v_prepare/files/config.json (LLaDA in Llama layout) with tiny sizes.
LM = dict(
    architectures=["LlavaLLaDAModelLM"],
    attention_bias=False,
    attention_dropout=0.0,
    bos_token_id=BOS_ID,  # the released files/config.json says 128000 (a Llama-3 leftover)
    eos_token_id=EOS_ID,
    hidden_act="silu",
    hidden_size=64,
    initializer_range=0.02,
    intermediate_size=128,
    max_position_embeddings=16384,
    num_attention_heads=4,
    num_hidden_layers=2,
    num_key_value_heads=4,
    pretraining_tp=1,
    rms_norm_eps=1e-05,
    rope_scaling=None,
    rope_theta=500000.0,
    tie_word_embeddings=False,
    use_cache=False,
    vocab_size=VOCAB,
)
# The multimodal fields LLaVA's train.py writes, with the values of scripts/llada_v_finetune.sh
# (the released config.json is not available offline; see the README for what is reconstructed).
MM = dict(
    mm_vision_tower=TOWER_DIR,
    vision_tower_pretrained=None,
    mm_projector_type="mlp2x_gelu",
    mm_hidden_size=TOWER["hidden_size"],
    mm_vision_select_layer=-2,
    mm_vision_select_feature="patch",
    mm_patch_merge_type="spatial_unpad",
    mm_use_im_start_end=False,
    mm_use_im_patch_token=False,
    mm_newline_position="grid",
    mm_spatial_pool_mode="bilinear",
    mm_spatial_pool_stride=None,
    mm_resampler_type=None,
    mm_tunable_parts="mm_vision_tower,mm_mlp_adapter,mm_language_model",
    mm_vision_tower_lr=2e-06,
    use_mm_proj=True,
    image_aspect_ratio="anyres_max_4",
    # "(1x1),...,(6x6)" expanded by train.py with patch size 384
    image_grid_pinpoints=[[i * 384, j * 384] for i in range(1, 7) for j in range(1, 7)],
    image_crop_resolution=None,
    image_split_resolution=None,
    tokenizer_padding_side="right",
    tokenizer_model_max_length=8192,
    add_faster_video=False,
    faster_token_stride=10,
    add_time_instruction=False,
    force_sample=False,
    use_pos_skipping=False,
    pos_skipping_range=4096,
    tune_mm_mlp_adapter=False,
    tune_mm_vision_resampler=False,
    freeze_mm_mlp_adapter=False,
    freeze_mm_vision_resampler=False,
    unfreeze_mm_vision_tower=True,
)
# Generation cases: the demo uses steps = gen_length = block_length = 128 with the stop word
# '<|eot_id|>'; scaled down.
CASES = [
    dict(
        name="a_demo_steps16_gen16_block16_stop",
        steps=16,
        gen_length=16,
        block_length=16,
        stopping_criteria=["<|eot_id|>"],
    ),
    dict(
        name="b_steps8_gen16_block4_stop",
        steps=8,
        gen_length=16,
        block_length=4,
        stopping_criteria=["<|eot_id|>"],
    ),
    dict(
        name="c_steps8_gen16_block8_nostop_suffix",
        steps=8,
        gen_length=16,
        block_length=8,
        stopping_criteria=None,
        generation_suffix=" done",
    ),
]
N_LOGIT_MASKS = 16


# --------------------------------------------------------------------------------------
# Official code import
# --------------------------------------------------------------------------------------


def import_official(root: Path):
    train = root / "train"
    if not (train / "llava" / "model" / "language_model" / "llava_llada.py").is_file():
        raise SystemExit(f"{root} is not a LLaDA-V checkout (no train/llava/...)")
    sys.path.insert(0, str(train))
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        from llava import constants, conversation, mm_utils
        from llava.model.language_model import llava_llada
        from llava.model.multimodal_encoder import siglip_encoder
    return dict(
        constants=constants,
        conversation=conversation,
        mm_utils=mm_utils,
        llava_llada=llava_llada,
        siglip=siglip_encoder,
    )


# --------------------------------------------------------------------------------------
# Tiny tokenizer, image and checkpoint
# --------------------------------------------------------------------------------------

CORPUS = [
    "You are a helpful language and vision assistant. You are able to understand the visual "
    "content that the user provides, and assist the user with a variety of tasks using natural "
    "language.",
    "system user assistant",
    QUESTION,
    "What is in the picture? Describe the colors, the shapes and the objects. The answer is done.",
]


def build_tokenizer(folder: Path):
    """Byte-level BPE (300 tokens) + 20 special tokens at 300..319, LLaDA's template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        min_frequency=1,
    )
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    assert tok.get_vocab_size() == 300, tok.get_vocab_size()
    from tokenizers import AddedToken

    tok.add_special_tokens(
        [AddedToken(SPECIALS[i], special=True, normalized=False) for i in range(300, 320)]
    )
    for i, name in SPECIALS.items():
        assert tok.token_to_id(name) == i, (name, tok.token_to_id(name), i)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|startoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        cls_token="[CLS]",
        additional_special_tokens=["<|mdm_mask|>", "<role>", "</role>"],
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.add_bos_token = False
    fast.save_pretrained(folder)
    return fast


def make_image(path: Path) -> Image.Image:
    """A smooth deterministic RGB image (gradients + a disc), non-square, PNG."""
    w, h = IMAGE_SIZE
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 255 * x / (w - 1)
    g = 255 * y / (h - 1)
    b = 128 + 100 * np.sin(x / 37.0) * np.cos(y / 23.0)
    disc = (x - 0.3 * w) ** 2 + (y - 0.55 * h) ** 2 < (0.25 * h) ** 2
    r[disc], g[disc], b[disc] = 250, 240, 20
    arr = np.clip(np.stack([r, g, b], -1).round(), 0, 255).astype(np.uint8)
    Image.fromarray(arr, "RGB").save(path, optimize=True)
    return Image.open(path).convert("RGB")


def init_large(model: torch.nn.Module, seed: int) -> None:
    """Deterministic init with a large std so that logits are well spread."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + NORM_STD * torch.randn_like(p))
            elif "norm" in name or name.endswith("bias"):
                p.copy_(NORM_STD * torch.randn_like(p))
            else:
                p.copy_(WEIGHT_STD * torch.randn_like(p))


def build_tower(off, out: Path) -> None:
    sig = off["siglip"]
    cfg = sig.SigLipVisionConfig(**TOWER)
    tower = sig.SigLipVisionModel(cfg)
    init_large(tower, SEED + 1)
    tower.save_pretrained(out / TOWER_DIR, safe_serialization=True)
    # The real siglip2-so400m-patch14-384 folder holds a "siglip" config with a vision_config;
    # LLaVA's SigLipVisionConfig.from_pretrained reads vision_config from it.
    vision = {k: v for k, v in TOWER.items()}
    vision["model_type"] = "siglip_vision_model"
    (out / TOWER_DIR / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["SiglipModel"],
                "model_type": "siglip",
                "vision_config": vision,
                "torch_dtype": "float32",
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )


def build_model(off, out: Path):
    ll = off["llava_llada"]
    cfg = ll.LlavaLLaDAConfig(**LM, **MM)
    cfg._attn_implementation = "sdpa"  # the demo loads with attn_implementation="sdpa"
    model = ll.LlavaLLaDAModelLM(cfg)
    init_large(model, SEED)
    model.eval()
    return model


# --------------------------------------------------------------------------------------
# Relabelling shim: run the official generate in LLaDA's real id space
# --------------------------------------------------------------------------------------


def real_ids(n: int = VOCAB) -> torch.Tensor:
    m = torch.arange(n)
    for t, r in REAL_SPECIAL.items():
        m[t] = r
    assert len(set(m.tolist())) == n
    return m


class RealEmbed(torch.nn.Module):
    """Embedding over real ids: row r is the tiny row of the tiny id that maps to r."""

    def __init__(self, tiny: torch.nn.Embedding, to_real: torch.Tensor) -> None:
        super().__init__()
        self.tiny = tiny
        back = torch.full((REAL_VOCAB,), -1, dtype=torch.long)
        back[to_real] = torch.arange(len(to_real))
        self.register_buffer("back", back, persistent=False)

    @property
    def weight(self):
        return self.tiny.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = self.back[ids]
        if bool((t < 0).any()):
            raise RuntimeError("a real id without a tiny counterpart reached the embedding")
        return self.tiny(t)


class RealHead(torch.nn.Module):
    """LM head over real ids: tiny logits scattered to their real columns, -inf elsewhere."""

    def __init__(self, tiny: torch.nn.Linear, to_real: torch.Tensor) -> None:
        super().__init__()
        self.tiny = tiny
        self.register_buffer("to_real", to_real, persistent=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        small = self.tiny(h)
        big = small.new_full((*small.shape[:-1], REAL_VOCAB), float("-inf"))
        big[..., self.to_real] = small
        return big


class RealTokenizer:
    """The tiny tokenizer seen through real ids (for stop words and the generation suffix)."""

    def __init__(self, tok, to_real: torch.Tensor) -> None:
        self.tok, self.to_real = tok, to_real

    def encode(self, text, add_special_tokens=True):
        return [
            int(self.to_real[i])
            for i in self.tok.encode(text, add_special_tokens=add_special_tokens)
        ]


@contextlib.contextmanager
def real_id_space(model, to_real):
    embed, head = model.model.embed_tokens, model.lm_head
    model.model.embed_tokens, model.lm_head = RealEmbed(embed, to_real), RealHead(head, to_real)
    try:
        yield
    finally:
        model.model.embed_tokens, model.lm_head = embed, head


class ForwardRecorder:
    """Counts the official LM forwards and records decision margins of each one."""

    def __init__(self, model, start: int):
        self.model, self.n, self.start = model, 0, start
        self.handle = model.lm_head.register_forward_hook(self._hook)
        self.top2_gaps: list[float] = []

    def _hook(self, module, args, output):
        self.n += 1
        top = output[:, self.start :].detach().double().softmax(-1).topk(2, dim=-1).values
        self.top2_gaps.append(float((top[..., 0] - top[..., 1]).min()))

    def close(self):
        self.handle.remove()


# --------------------------------------------------------------------------------------
# Goldens
# --------------------------------------------------------------------------------------


def prompt_and_ids(off, tok):
    conv = copy.deepcopy(off["conversation"].conv_templates["llava_llada"])
    conv.tokenizer = tok  # get_prompt would otherwise download GSAI-ML/LLaDA-V's tokenizer
    question = off["constants"].DEFAULT_IMAGE_TOKEN + "\n" + QUESTION
    conv.append_message(conv.roles[0], question)
    conv.append_message(conv.roles[1], None)
    prompt = conv.get_prompt()
    ids = (
        off["mm_utils"]
        .tokenizer_image_token(prompt, tok, off["constants"].IMAGE_TOKEN_INDEX, return_tensors="pt")
        .unsqueeze(0)
    )
    return prompt, ids


def pixels_to_u8(px: torch.Tensor) -> tuple[np.ndarray, bool]:
    """Recover the uint8 codes behind normalised pixels and check the round trip bit for bit."""
    u8 = np.clip(np.round((px.numpy() * 0.5 + 0.5) * 255.0), 0, 255).astype(np.uint8)
    back = torch.from_numpy(u8_to_pixels(u8))
    return u8, bool(torch.equal(back, px))


def u8_to_pixels(u8: np.ndarray) -> np.ndarray:
    """The processor's arithmetic: rescale in float64 (u8 * (1/255)) cast to float32, then
    normalise in float32: (x - 0.5) / 0.5."""
    x = (u8.astype(np.float64) * (1 / 255)).astype(np.float32)
    return ((x - np.float32(0.5)) / np.float32(0.5)).astype(np.float32)


def run_official(off, model, tok, image):
    prompt, ids = prompt_and_ids(off, tok)
    mm = off["mm_utils"]
    image_tensor = mm.process_images(
        [image], model.get_vision_tower().image_processor, model.config
    )
    images = [t.to(dtype=torch.float32) for t in image_tensor]  # as the demo (float16 there)
    image_sizes = [image.size]
    with torch.no_grad():
        vis = model.get_vision_tower()(images[0][:1])  # (1, 729, C_v) tower output, base crop
        out = model.prepare_inputs_labels_for_multimodal(
            ids, None, None, None, None, images, ["image"], image_sizes=image_sizes
        )
        embeds = out[4]  # (1, L, D)
        mask_embed = model.model.embed_tokens(torch.tensor([MASK_ID]))  # (1, D)
        x = torch.cat([embeds, mask_embed[None].expand(1, N_LOGIT_MASKS, -1)], dim=1)
        logits = model.lm_head(model.model(inputs_embeds=x)[0]).float()  # as generate_with_embeds
    grid = mm.get_anyres_image_grid_shape(image.size, model.config.image_grid_pinpoints, 384)
    tensors = {
        "input_ids": ids,
        "pixel_values": images[0],
        "vision_tower_out_base": vis,
        "inputs_embeds": embeds,
        "logits_answer": logits[:, embeds.shape[1] :],
        "logits_prompt_head": logits[:, :8],
    }
    conv = off["conversation"].conv_templates["llava_llada"]
    info = dict(
        system=conv.system,
        question=off["constants"].DEFAULT_IMAGE_TOKEN + "\n" + QUESTION,
        prompt=prompt,
        image_size_wh=list(image.size),
        image_sizes=[list(s) for s in image_sizes],
        anyres_grid_wh=list(grid),
        num_image_tokens=int(embeds.shape[1] - (ids.shape[1] - 1)),
        prompt_embed_len=int(embeds.shape[1]),
        image_token_position=int((ids[0] == off["constants"].IMAGE_TOKEN_INDEX).nonzero()[0, 0]),
    )
    return info, tensors, images, image_sizes, ids


def run_generations(off, model, tok, ids, images, image_sizes, prompt_len):
    to_real = real_ids()
    rtok = RealTokenizer(tok, to_real)
    back = {int(r): t for t, r in enumerate(to_real.tolist())}
    real_input = ids.clone()
    keep = real_input >= 0
    real_input[keep] = to_real[real_input[keep]]
    results = []
    for case in CASES:
        kw = {k: v for k, v in case.items() if k != "name"}
        kw = dict(temperature=0.0, cfg_scale=0.0, remasking="low_confidence", **kw)
        with real_id_space(model, to_real), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec = ForwardRecorder(model, prompt_len)
            try:
                out = model.generate(
                    real_input,
                    images=images,
                    image_sizes=image_sizes,
                    mask_id=int(to_real[MASK_ID]),
                    tokenizer=rtok,
                    **kw,
                )
            finally:
                rec.close()
        tiny = [back[int(i)] for i in out[0]]
        results.append(
            dict(
                name=case["name"],
                kwargs=kw,  # to generate(...) with inputs/images/image_sizes/mask_id/tokenizer
                output_ids=tiny,
                output_text=tok.decode(tiny, skip_special_tokens=False),
                forwards=rec.n,
                min_top2_prob_gap=min(rec.top2_gaps),
                contains_mask=MASK_ID in tiny,
            )
        )
    return results


def save_png_stack(u8: np.ndarray, path: Path) -> None:
    # (N, 3, 384, 384) -> one RGB image of N crops stacked vertically: (N*384, 384, 3)
    n, c, h, w = u8.shape
    Image.fromarray(u8.transpose(0, 2, 3, 1).reshape(n * h, w, c), "RGB").save(path, optimize=True)


def build(args, off) -> None:
    from safetensors.torch import save_file

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)  # the checkpoint names its tower by a relative folder
    tok = build_tokenizer(out)
    image = make_image(out / "test.png")
    build_tower(off, out)
    model = build_model(off, out)
    model.save_pretrained(out, safe_serialization=True)
    # Reload with the official loader path to make sure the saved folder is what we test.
    model = (
        off["llava_llada"].LlavaLLaDAModelLM.from_pretrained(out, attn_implementation="sdpa").eval()
    )
    info, tensors, images, image_sizes, ids = run_official(off, model, tok, image)
    u8, exact = pixels_to_u8(tensors.pop("pixel_values"))
    if not exact:
        raise RuntimeError("pixel values are not an exact function of uint8 codes")
    save_png_stack(u8, out / "pixel_values.png")
    gens = run_generations(off, model, tok, ids, images, image_sizes, info["prompt_embed_len"])
    save_file(
        {k: v.contiguous() for k, v in tensors.items()},
        out / "golden.safetensors",
        metadata={"format": "pt"},
    )
    meta = dict(
        source=dict(repo="github.com/ML-GSAI/LLaDA-V", commit=git_rev(Path(args.llada_v))),
        versions=dict(
            torch=torch.__version__,
            transformers=__import__("transformers").__version__,
            numpy=np.__version__,
            pillow=Image.__version__,
        ),
        seeds=dict(lm_and_projector=SEED, tower=SEED + 1),
        init=f"weights ~ N(0, {WEIGHT_STD}^2); norm weights 1 + {NORM_STD}N(0,1); "
        f"biases {NORM_STD}N(0,1)",
        tokens=dict(mask=MASK_ID, eos=EOS_ID, pad=EOS_ID, bos=BOS_ID, eot=EOT_ID),
        real_ids={SPECIALS[t]: REAL_SPECIAL[t] for t in (300, 301, 302, 303, 304, 310)},
        pixel_values=dict(
            file="pixel_values.png",
            shape=list(u8.shape),
            formula="float32: (u8 * float32(1/255) - 0.5) / 0.5, crops stacked vertically",
            sha256_float32=hashlib.sha256(
                torch.from_numpy(u8_to_pixels(u8)).numpy().tobytes()
            ).hexdigest(),
        ),
        n_logit_masks=N_LOGIT_MASKS,
    )
    golden = dict(meta=meta, **info, generations=gens)
    (out / "golden.json").write_text(json.dumps(golden, indent=1) + "\n")
    print(json.dumps({k: v for k, v in golden.items() if k != "meta"}, indent=1)[:3000])


def verify(args, off) -> int:
    from safetensors.torch import load_file

    out = Path(args.out).resolve()
    os.chdir(out)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    golden = json.loads((out / "golden.json").read_text())
    g = load_file(out / "golden.safetensors")
    dtype = torch.float64 if args.verify_dtype == "float64" else torch.float32
    model = (
        off["llava_llada"].LlavaLLaDAModelLM.from_pretrained(out, attn_implementation="sdpa").eval()
    )
    model = model.to(dtype)
    image = Image.open(out / "test.png").convert("RGB")
    info, tensors, images, image_sizes, ids = run_official(off, model, tok, image)
    images = [im.to(dtype) for im in images]
    bad = []
    if info["prompt"] != golden["prompt"]:
        bad.append("prompt")
    if not torch.equal(tensors["input_ids"], g["input_ids"]):
        bad.append("input_ids")
    u8 = np.asarray(Image.open(out / "pixel_values.png").convert("RGB"))
    n = u8.shape[0] // 384
    px = torch.from_numpy(u8_to_pixels(u8.reshape(n, 384, 384, 3).transpose(0, 3, 1, 2).copy()))
    if not torch.equal(px, tensors["pixel_values"].float()):
        bad.append("pixel_values")
    for k in ("vision_tower_out_base", "inputs_embeds", "logits_answer", "logits_prompt_head"):
        diff = float((tensors[k].double() - g[k].double()).abs().max())
        print(f"{k}: max |diff| {diff:.2e}")
        if diff > (1e-4 if dtype == torch.float64 else 1e-6):
            bad.append(k)
    gens = run_generations(off, model, tok, ids, images, image_sizes, info["prompt_embed_len"])
    for new, old in zip(gens, golden["generations"], strict=True):
        same = new["output_ids"] == old["output_ids"]
        print(f"{old['name']}: {'same' if same else 'DIFFERENT'} ids")
        if not same:
            bad.append(old["name"])
    print("OK" if not bad else f"FAILED: {bad}")
    return 1 if bad else 0


# --------------------------------------------------------------------------------------
# The loader's embedding resize (`--resize-out`)
# --------------------------------------------------------------------------------------

PAD_ROWS = 16  # the release: vocab_size 126464, len(tokenizer) 126349 (115 rows no token names)
RESIZE_QUESTION = "What is in the picture? Describe the colors."
RESIZE_CASES = [
    dict(
        name="steps8_gen16_block16_stop",
        steps=8,
        gen_length=16,
        block_length=16,
        stopping_criteria=["<|eot_id|>"],
    ),
    dict(
        name="steps8_gen16_block8_nostop",
        steps=8,
        gen_length=16,
        block_length=8,
        stopping_criteria=None,
    ),
]


def official_loader(off, folder: Path, dtype: str = "float32"):
    """`load_pretrained_model` as generate_demo.py calls it (attn_implementation="sdpa"); its
    torch_dtype only knows "float16"/"bfloat16", else it stops in `pdb.set_trace()` and then
    passes none (float32): the breakpoint is skipped."""
    import importlib
    import pdb

    builder = importlib.import_module("llava.model.builder")
    stop, pdb.set_trace = pdb.set_trace, lambda *a, **k: None
    try:
        tok, model, processor, _ = builder.load_pretrained_model(
            str(folder),
            None,
            "llava_llada",
            attn_implementation="sdpa",
            device_map="auto",
            torch_dtype=dtype,
        )
    finally:
        pdb.set_trace = stop
    return tok, model.eval(), processor


def text_ids(off, tok, question: str) -> torch.Tensor:
    conv = copy.deepcopy(off["conversation"].conv_templates["llava_llada"])
    conv.tokenizer = tok
    conv.append_message(conv.roles[0], question)
    conv.append_message(conv.roles[1], None)
    tii = off["mm_utils"].tokenizer_image_token  # as the demo tokenizes (no <image> here)
    image_index = off["constants"].IMAGE_TOKEN_INDEX
    return tii(conv.get_prompt(), tok, image_index, return_tensors="pt")[None]


def build_resize(args, off) -> None:
    """A checkpoint shaped like the release: config vocab_size = len(tokenizer) + PAD_ROWS, the
    LLaDA-V fixture's weights with PAD_ROWS extra embedding and head rows whose logits would win
    everywhere if they were kept. Loaded with the official `load_pretrained_model`, which resizes
    the embeddings and the head to len(tokenizer) (`model.resize_token_embeddings`); the logits of
    a text prompt (+ masks) and generations are recorded from that model."""
    import shutil

    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    src, out = Path(args.llada_v_fixture).resolve(), Path(args.resize_out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "generation_config.json",
    ):
        shutil.copy(src / name, out / name)
    shutil.copytree(src / TOWER_DIR, out / TOWER_DIR, dirs_exist_ok=True)
    os.chdir(src)
    model = off["llava_llada"].LlavaLLaDAModelLM.from_pretrained(src, attn_implementation="sdpa")
    tok = AutoTokenizer.from_pretrained(src)
    n = len(tok)
    assert model.get_input_embeddings().num_embeddings == n == VOCAB
    model.resize_token_embeddings(n + PAD_ROWS)
    torch.manual_seed(SEED + 2)
    with torch.no_grad():  # rows no token names; their head rows large: they would be argmax
        d = LM["hidden_size"]
        model.get_input_embeddings().weight[n:] = WEIGHT_STD * torch.randn(PAD_ROWS, d)
        model.lm_head.weight[n:] = 4 * WEIGHT_STD * torch.randn(PAD_ROWS, d)
    assert model.config.vocab_size == n + PAD_ROWS
    os.chdir(out)
    model.save_pretrained(out, safe_serialization=True)
    del model

    tok, model, _ = official_loader(off, out)  # the loader under test
    rows = model.get_input_embeddings().num_embeddings
    assert rows == model.lm_head.weight.shape[0] == len(tok) == n, rows
    ids = text_ids(off, tok, RESIZE_QUESTION)
    with torch.no_grad():
        masks = torch.full((1, N_LOGIT_MASKS), MASK_ID)
        x = model.model.embed_tokens(torch.cat([ids, masks], dim=1))
        logits = model.lm_head(model.model(inputs_embeds=x)[0]).float()
    global CASES
    CASES = RESIZE_CASES
    gens = run_generations(off, model, tok, ids, None, None, ids.shape[1])
    save_file(
        {"input_ids": ids.contiguous(), "logits": logits.contiguous()},
        out / "golden.safetensors",
        metadata={"format": "pt"},
    )
    meta = dict(
        source=dict(repo="github.com/ML-GSAI/LLaDA-V", commit=git_rev(Path(args.llada_v))),
        versions=dict(torch=torch.__version__, transformers=__import__("transformers").__version__),
        loader="llava.model.builder.load_pretrained_model(folder, None, 'llava_llada', "
        "attn_implementation='sdpa', device_map='auto') (float32)",
        config_vocab_size=n + PAD_ROWS,
        tokenizer_len=n,
        rows_after_load=rows,
        weights=f"tests/fixtures/golden/llada_v + {PAD_ROWS} rows (seed {SEED + 2})",
        n_logit_masks=N_LOGIT_MASKS,
    )
    golden = dict(meta=meta, question=RESIZE_QUESTION, generations=gens)
    (out / "golden.json").write_text(json.dumps(golden, indent=1) + "\n")
    print(json.dumps(golden, indent=1)[:2000])


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--llada-v", required=True, help="checkout of github.com/ML-GSAI/LLaDA-V")
    ap.add_argument("--out", required=True, help="fixture folder (tests/fixtures/golden/llada_v)")
    ap.add_argument(
        "--verify", action="store_true", help="re-run the official code on the saved fixture"
    )
    ap.add_argument("--verify-dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--resize-out", help="build the resize golden here (from --out's fixture)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    off = import_official(Path(args.llada_v).resolve())
    if args.resize_out:
        args.llada_v_fixture = args.out
        build_resize(args, off)
        return 0
    if args.verify:
        return verify(args, off)
    build(args, off)
    return 0


if __name__ == "__main__":
    sys.exit(main())
