#!/usr/bin/env python
"""Produce golden fixtures for LaViDa (LLaDA and Dream backbones) with the *official* LaViDa code.

This script contains none of the official code.  It imports it at run time from a checkout of
github.com/jacklishufan/LaViDa that lives outside this repository (``--lavida``, the folder
holding ``llava/``).  It builds two tiny, randomly initialised checkpoints with the official
classes (``LlavaLladaForMaskedDiffusion``, ``LlavaDreamForMaskedDiffusion``), writes them in the
published layout (``config.json`` with every ``mm_*`` field, ``model.safetensors`` with the
official keys, tokenizer files, a SigLIP folder named by ``mm_vision_tower``), reloads them with
the official loader ``llava.model.builder.load_pretrained_model`` and records what the official
pipeline computes for one fixed test image: the prompt, ``tokenizer_image_token`` ids,
``process_images`` pixels, the vision features, the spliced ``inputs_embeds`` from
``prepare_inputs_labels_for_multimodal``, logits, and greedy generations from the official
entry points (``model.generate`` -> ``llada/generate.py`` / ``diffusion_generate``).

Environment: torch 2.13.0 (CPU) and transformers 4.50.3 (LaViDa's pin); see
``tests/fixtures/golden/README.md``.  It never touches the network.

Run-time adaptations (none of them edits an official file):

* ``deepspeed`` is replaced by a stub module whose ``checkpointing.checkpoint(f, *a)`` calls
  ``f(*a)``: LaViDa's LLaDA/Dream files import it for activation checkpointing, which does not
  change forward values.
* ``llava/conversation.py`` loads the hub tokenizers ``GSAI-ML/LLaDA-8B-Instruct`` and
  ``Dream-org/Dream-v0-Instruct-7B`` at import time (for their chat templates).  While it is
  imported, ``AutoTokenizer.from_pretrained`` maps those two names to the fixtures' tiny
  tokenizers, so the official ``llada`` / ``dream`` conversation templates use our templates.
* ``SigLipVisionTower`` hard-codes ``SigLipVisionConfig()`` (384 px, patch 14, width 1152) as its
  ``.config`` and ``SigLipImageProcessor()`` (384 px) as its processor, whatever the folder says.
  After loading, :func:`adapt_vision_geometry` sets ``.config`` to the loaded SigLIP config and
  the processor to the same class with the folder's image size; for a real 384/14 tower both are
  identical to the hard-coded ones (asserted), so only the tiny sizes change.
* ``TORCHDYNAMO_DISABLE=1`` (``DreamDecoderLayer.forward`` is wrapped in ``@torch.compile``).

Typical use (from the repository root, in the LaViDa venv)::

    python tools/goldens/make_mm_goldens.py --lavida /work/official/LaViDa \
        --out tests/fixtures/golden                      # build checkpoints + goldens
    python tools/goldens/make_mm_goldens.py --lavida /work/official/LaViDa \
        --out tests/fixtures/golden --verify             # reload and re-check everything
    python tools/goldens/make_mm_goldens.py ... --verify --verify-dtype float64

``--verify`` also checks that the goldens are sensitive: another image, and
``image_aspect_ratio='pad'``, must change the logits.
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")  # must happen before torch is imported
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import contextlib
import copy
import importlib
import importlib.machinery
import json
import sys
import types
from pathlib import Path

import torch
import transformers
import transformers.generation.utils  # noqa: F401  (imported before the deepspeed stub)
import transformers.modeling_utils  # noqa: F401
from PIL import Image, ImageDraw
from safetensors.torch import load_file, save_file
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parent))  # goldens_common, beside this file
from goldens_common import git_rev  # noqa: E402

# --------------------------------------------------------------------------------------
# Tiny configurations.  Released field values in comments; sources are LaViDa's
# scripts/train/exps/cluster/llada-hd-{llada,dream}-s2.sh and llava/train/train.py.
# --------------------------------------------------------------------------------------

SIGLIP_DIR = "siglip_vision_tower"  # mm_vision_tower; build_vision_tower needs "siglip" in it
IMAGE_SIZE = 54  # 384
PATCH_SIZE = 2  # 14  -> 27 x 27 = 729 patches, as the tower asserts
SIGLIP_VISION = {
    "hidden_size": 16,  # 1152
    "image_size": IMAGE_SIZE,
    "intermediate_size": 32,  # 4304
    "model_type": "siglip_vision_model",
    "num_attention_heads": 2,  # 16
    "num_hidden_layers": 3,  # 27 (the tower deletes the last one)
    "patch_size": PATCH_SIZE,
}
SIGLIP_TEXT = {  # never used; kept so the folder has google/siglip-so400m-patch14-384's shape
    "hidden_size": 16,
    "intermediate_size": 32,
    "model_type": "siglip_text_model",
    "num_attention_heads": 2,
    "num_hidden_layers": 3,
}
PREPROCESSOR = {  # google/siglip-so400m-patch14-384 preprocessor_config.json, size shrunk
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "SiglipImageProcessor",
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "SiglipProcessor",
    "resample": 3,
    "rescale_factor": 1 / 255,
    "size": {"height": IMAGE_SIZE, "width": IMAGE_SIZE},
}


def grid_pinpoints(unit: int) -> list[list[int]]:
    """The released (width, height) pinpoints, in units of the tile size (384 in the release)."""
    grids = [(1, 2), (2, 1), (2, 2), (3, 1), (1, 3)]
    return [[w * unit, h * unit] for w, h in grids]


# mm_* and training fields that train.py writes into config.json (stage-2 script flags).
MM_CONFIG = {
    "mm_vision_tower": SIGLIP_DIR,  # "google/siglip-so400m-patch14-384" (a local path in training)
    "vision_tower_pretrained": None,
    "mm_projector_type": "mlp2x_gelu",
    "mm_hidden_size": SIGLIP_VISION["hidden_size"],  # 1152
    "use_mm_proj": True,
    "mm_vision_select_layer": -2,  # unused by SigLipVisionTower (it drops the last layer)
    "mm_vision_select_feature": "patch",
    "mm_resampler_type": None,
    "mm_patch_merge_type": "spatial_unpad",
    "image_aspect_ratio": "anyres",
    "image_grid_pinpoints": grid_pinpoints(IMAGE_SIZE),  # grid_pinpoints(384)
    "image_crop_resolution": None,
    "image_split_resolution": None,
    "mm_spatial_pool_mode": "bilinear",  # ModelArguments default; lmms-eval forces it too
    "mm_spatial_pool_stride": None,  # get_2dPool's default stride 2 is what runs
    "mm_newline_position": "grid",  # video only
    "mm_pooler_ratio": 2,
    "mm_use_im_start_end": False,
    "mm_use_im_patch_token": False,
    "mm_projector_lr": None,
    "mm_vision_tower_lr": 2e-06,
    "mm_tunable_parts": "mm_vision_tower,mm_mlp_adapter,mm_language_model",
    "tokenizer_padding_side": "right",
    "tokenizer_model_max_length": 4096,
    "add_faster_video": False,
    "faster_token_stride": 10,
    "add_time_instruction": False,
    "force_sample": False,
    "use_pos_skipping": False,
    "pos_skipping_range": 4096,
}

# Field set of GSAI-ML/LLaDA-8B-Instruct config.json (real values in comments).
LLADA_LM = {
    "activation_type": "silu",
    "alibi": False,
    "alibi_bias_max": 8.0,
    "attention_dropout": 0.0,
    "attention_layer_norm": False,
    "attention_layer_norm_with_affine": True,
    "bias_for_layer_norm": False,
    "block_group_size": 1,
    "block_type": "llama",
    "d_model": 64,  # 4096
    "embedding_dropout": 0.0,
    "flash_attention": False,
    "include_bias": False,
    "include_qkv_bias": False,
    "init_cutoff_factor": None,
    "init_device": "meta",
    "init_fn": "mitchell",
    "init_std": 0.02,
    "input_emb_norm": False,
    "layer_norm_type": "rms",
    "layer_norm_with_affine": True,
    "max_sequence_length": 4096,
    "mlp_hidden_size": 176,  # 12288
    "mlp_ratio": 4,
    "multi_query_attention": None,
    "n_heads": 4,  # 32
    "n_kv_heads": 4,  # 32
    "n_layers": 2,  # 32
    "precision": "amp_bf16",
    "residual_dropout": 0.0,
    "rms_norm_eps": 1e-05,
    "rope": True,
    "rope_full_precision": True,
    "rope_theta": 500000.0,
    "scale_logits": False,
    "use_cache": False,
    "weight_tying": False,
}

# Field set of Dream-org/Dream-v0-Instruct-7B config.json (DreamConfig fields).
DREAM_LM = {
    "attention_dropout": 0.0,
    "hidden_act": "silu",
    "hidden_size": 64,  # 3584
    "initializer_range": 0.02,
    "intermediate_size": 176,  # 18944
    "max_position_embeddings": 4096,  # 131072
    "max_window_layers": 28,
    "num_attention_heads": 4,  # 28
    "num_hidden_layers": 2,  # 28
    "num_key_value_heads": 2,  # 4
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "use_cache": False,
    "use_sliding_window": False,
}

WEIGHT_STD = 0.2  # every Linear/Embedding/Conv weight, position embeddings, image_newline
BIAS_STD = 0.1  # every bias (SigLIP, projector, Dream q/k/v)
NORM_STD = 0.1  # norm weights are 1 + NORM_STD * N(0, 1)
SEEDS = {"llada": 0, "dream": 1}
SIGLIP_FOLDER_SEED = 100  # the "pretrained" SigLIP folder; the checkpoint holds other weights

PROMPT_IMAGE = "<image>\nWhat is in the image?"
PROMPT_TEXT = "Name the three colours."
N_MASK = 16  # mask tokens appended for the single-forward logits golden
N_TAIL = 16  # prompt positions kept before the masks in the stored image-prompt logits
N_MERGES = 48  # BPE merges of the tiny tokenizer


# --------------------------------------------------------------------------------------
# Official code: stubs and import
# --------------------------------------------------------------------------------------


def install_stubs() -> None:
    """A ``deepspeed`` module whose activation checkpointing is a plain call."""
    ds = types.ModuleType("deepspeed")
    ds.__spec__ = importlib.machinery.ModuleSpec("deepspeed", None)
    ck = types.ModuleType("deepspeed.checkpointing")
    ck.checkpoint = lambda fn, *args, **kwargs: fn(*args, **kwargs)
    ds.checkpointing = ck
    sys.modules.setdefault("deepspeed", ds)
    sys.modules.setdefault("deepspeed.checkpointing", ck)


@contextlib.contextmanager
def hub_tokenizers_as(mapping: dict[str, Path]):
    """Map hub tokenizer ids to local folders while ``llava/conversation.py`` is imported."""
    auto = transformers.AutoTokenizer
    original = auto.from_pretrained.__func__

    def patched(cls, name, *args, **kwargs):
        if str(name) in mapping:
            name = str(mapping[str(name)])
        return original(cls, name, *args, **kwargs)

    auto.from_pretrained = classmethod(patched)
    try:
        yield
    finally:
        auto.from_pretrained = classmethod(original)


class Official:
    """The official LaViDa modules this script calls."""

    def __init__(self, lavida: Path, tokenizer_dirs: dict[str, Path]):
        install_stubs()
        sys.path.insert(0, str(Path(lavida).resolve()))
        hub = {
            "GSAI-ML/LLaDA-8B-Instruct": tokenizer_dirs["llada"],
            "Dream-org/Dream-v0-Instruct-7B": tokenizer_dirs["dream"],
        }
        with hub_tokenizers_as(hub):
            self.conversation = importlib.import_module("llava.conversation")
        self.constants = importlib.import_module("llava.constants")
        self.mm_utils = importlib.import_module("llava.mm_utils")
        self.builder = importlib.import_module("llava.model.builder")
        self.llava_llada = importlib.import_module("llava.model.language_model.llava_llada")
        self.llava_dream = importlib.import_module("llava.model.language_model.llava_dream")
        self.llada_generate = importlib.import_module("llava.model.language_model.llada.generate")
        self.siglip = importlib.import_module("llava.model.multimodal_encoder.siglip_encoder")
        self.llava_arch = importlib.import_module("llava.model.llava_arch")
        self.rev = git_rev(Path(lavida))


@contextlib.contextmanager
def cwd(path: Path):
    """``mm_vision_tower`` is a relative folder name: the official code runs inside the fixture."""
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


# --------------------------------------------------------------------------------------
# Fixture pieces: tokenizer, SigLIP folder, image
# --------------------------------------------------------------------------------------


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode characters in id order, so that id 0 is ``"!"`` as in LLaDA/Qwen."""
    bs = list(range(ord("!"), ord("~") + 1))
    bs += list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def _learn_merges(corpus: list[str], n_merges: int) -> list[tuple[str, str]]:
    """A deterministic byte-level BPE on ``corpus``: most frequent pair first, ties by string."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    words: dict[tuple[str, ...], int] = {}
    for text in corpus:
        for piece, _ in pre.pre_tokenize_str(text):
            key = tuple(piece)
            words[key] = words.get(key, 0) + 1
    merges = []
    for _ in range(n_merges):
        pairs: dict[tuple[str, str], int] = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:], strict=False):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new_words = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + c
        words = new_words
    return merges


LLADA_SPECIAL = {  # role -> token, in id order after the BPE vocabulary
    "bos": "<|startoftext|>",
    "eos": "<|endoftext|>",
    "mask": "<|mdm_mask|>",
    "start_header": "<|start_header_id|>",
    "end_header": "<|end_header_id|>",
    "eot": "<|eot_id|>",
}
LLADA_TEMPLATE = (  # GSAI-ML/LLaDA-8B-Instruct's chat template
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
DREAM_SPECIAL = {
    "eos": "<|endoftext|>",
    "im_start": "<|im_start|>",
    "im_end": "<|im_end|>",
    "bos": "<|beginoftext|>",
    "mask": "<|mask|>",
}
DREAM_TEMPLATE = (  # Qwen2.5 / Dream-v0-Instruct-7B chat template without the tools branch
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}"
    "{%- else %}{{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first)"
    " or (message.role == 'assistant') %}"
    "{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)
TOKENIZER_CORPUS = [
    PROMPT_IMAGE,
    PROMPT_TEXT,
    "You are a helpful language and vision assistant. You are able to understand the visual "
    "content that the user provides, and assist the user with a variety of tasks using natural "
    "language.",
    "user assistant system The image shows a red, a green and a blue box.",
]


def build_tokenizer(out: Path, kind: str) -> transformers.PreTrainedTokenizerFast:
    """Byte-level BPE (256 bytes + N_MERGES merges) plus the model's special tokens and chat
    template.  No post-processor: like LLaDA's and Qwen's tokenizers it adds no BOS by itself."""
    alphabet = _byte_alphabet()
    merges = _learn_merges(TOKENIZER_CORPUS, N_MERGES)
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    special = LLADA_SPECIAL if kind == "llada" else DREAM_SPECIAL
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in special.values()]
    )
    common = dict(tokenizer_object=tok, model_max_length=4096, padding_side="right")
    if kind == "llada":
        fast = transformers.PreTrainedTokenizerFast(
            bos_token=special["bos"],
            eos_token=special["eos"],
            pad_token=special["eos"],
            mask_token=special["mask"],
            chat_template=LLADA_TEMPLATE,
            **common,
        )
    else:
        fast = transformers.PreTrainedTokenizerFast(
            bos_token=special["bos"],
            eos_token=special["eos"],
            pad_token=special["eos"],
            mask_token=special["mask"],
            additional_special_tokens=[special["im_start"], special["im_end"]],
            chat_template=DREAM_TEMPLATE,
            **common,
        )
    fast.save_pretrained(str(out))
    return fast


def build_siglip_folder(off: Official, out: Path) -> None:
    """The SigLIP folder named by ``mm_vision_tower``: google's layout, tiny sizes, own weights."""
    out.mkdir(parents=True, exist_ok=True)
    cfg = {
        "architectures": ["SiglipModel"],
        "initializer_factor": 1.0,
        "model_type": "siglip",
        "text_config": SIGLIP_TEXT,
        "torch_dtype": "float32",
        "transformers_version": "4.37.0.dev0",
        "vision_config": SIGLIP_VISION,
    }
    _dump_json(out / "config.json", cfg)
    _dump_json(out / "preprocessor_config.json", PREPROCESSOR)
    model = off.siglip.SigLipVisionModel(off.siglip.SigLipVisionConfig(**SIGLIP_VISION))
    init_weights(model, SIGLIP_FOLDER_SEED)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})


def make_image(variant: int = 0) -> Image.Image:
    """The 60x40 test image: grey background, three coloured rectangles (variant 1 moves them)."""
    img = Image.new("RGB", (60, 40), (128, 128, 128))
    d = ImageDraw.Draw(img)
    shift = 0 if variant == 0 else 17
    d.rectangle([2 + shift, 3, 20 + shift, 30], fill=(220, 30, 30))
    d.rectangle([25, 8 + shift // 2, 44, 22 + shift // 2], fill=(30, 200, 60))
    d.rectangle([40 - shift, 25, 57 - shift, 37], fill=(40, 60, 230))
    d.line([0, 0, 59, 39], fill=(250, 250, 0), width=1)
    return img


# --------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------


def _is_norm(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.nn.LayerNorm) or "Norm" in type(module).__name__


def init_weights(model: torch.nn.Module, seed: int) -> None:
    """Large random init so logits are not flat: weights N(0, 0.2^2), biases N(0, 0.1^2),
    norm weights 1 + 0.1 N(0, 1); in ``named_modules`` order, each module's own parameters."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, module in model.named_modules():
            for pname, p in module.named_parameters(recurse=False):
                noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
                if _is_norm(module) and pname == "weight":
                    value = 1.0 + NORM_STD * noise
                elif pname.endswith("bias"):
                    value = BIAS_STD * noise
                else:
                    value = WEIGHT_STD * noise
                p.copy_(value.to(p.dtype))


def lm_config(kind: str, tok) -> dict:
    vocab = len(tok)
    ids = tok.convert_tokens_to_ids
    if kind == "llada":
        cfg = dict(LLADA_LM)
        cfg.update(
            architectures=["LlavaLladaForMaskedDiffusion"],
            model_type="llava_llada",
            vocab_size=vocab,  # 126464
            embedding_size=vocab,  # 126464
            mask_token_id=ids(LLADA_SPECIAL["mask"]),  # 126336
            eos_token_id=ids(LLADA_SPECIAL["eos"]),  # 126081
            pad_token_id=ids(LLADA_SPECIAL["eos"]),  # 126081
            bos_token_id=ids(LLADA_SPECIAL["bos"]),  # 126080
        )
    else:
        cfg = dict(DREAM_LM)
        cfg.update(
            architectures=["LlavaDreamForMaskedDiffusion"],
            model_type="llava_dream",
            vocab_size=vocab,  # 152064
            mask_token_id=ids(DREAM_SPECIAL["mask"]),  # 151666
            pad_token_id=ids(DREAM_SPECIAL["eos"]),  # 151643
            eos_token_id=ids(DREAM_SPECIAL["eos"]),  # 151643
            bos_token_id=ids(DREAM_SPECIAL["bos"]),
        )
    cfg.update(copy.deepcopy(MM_CONFIG))
    return cfg


def build_checkpoint(off: Official, kind: str, out: Path) -> None:
    """Tokenizer + SigLIP folder + official model (random init) saved by ``save_pretrained``."""
    tok = transformers.AutoTokenizer.from_pretrained(str(out))
    cfg = lm_config(kind, tok)
    with cwd(out):
        if kind == "llada":
            config = off.llava_llada.LlavaLladaConfig(**cfg)
            model = off.llava_llada.LlavaLladaForMaskedDiffusion(config)
        else:
            config = off.llava_dream.LlavaDreamConfig(**cfg)
            model = off.llava_dream.LlavaDreamForMaskedDiffusion(config)
        model.float()
        init_weights(model, SEEDS[kind])
        model.to(torch.bfloat16)  # the release is bf16 (torch_dtype in config.json)
        model.save_pretrained(".", safe_serialization=True)
    make_image().save(out / "image.png")


def load_official(off: Official, kind: str, out: Path, dtype: torch.dtype):
    """``load_pretrained_model`` exactly as predict.py / lmms-eval call it (bf16), then ``dtype``.

    Returns (tokenizer, model, image_processor)."""
    vision_kwargs = dict(  # predict.py's vision_kwargs with the tiny tower
        mm_vision_tower=SIGLIP_DIR,
        mm_resampler_type=None,
        mm_projector_type="mlp2x_gelu",
        mm_hidden_size=SIGLIP_VISION["hidden_size"],
        use_mm_proj=True,
    )
    name = "llava_llada" if kind == "llada" else "llava_dream"
    with cwd(out):
        tok, model, _, _ = off.builder.load_pretrained_model(
            ".", None, name, device_map="auto", vision_kwargs=vision_kwargs, torch_dtype="bfloat16"
        )
        model.eval()
        model.tie_weights()
        model.to(dtype)
    processor = adapt_vision_geometry(off, model)
    _check_weights(model, out)
    return tok, model, processor


def adapt_vision_geometry(off: Official, model):
    """Give the tower its loaded config and a processor of its image size (see module doc)."""
    tower = model.get_vision_tower()
    default_cfg, default_proc = off.siglip.SigLipVisionConfig(), off.siglip.SigLipImageProcessor()
    real = off.siglip.SigLipImageProcessor(size=(384, 384), crop_size={"height": 384, "width": 384})
    assert vars(real) == vars(default_proc), "the adaptation must be the identity at 384 px"
    assert (default_cfg.image_size, default_cfg.patch_size) == (384, 14)
    loaded = tower.vision_tower.config
    size = loaded.image_size
    tower.config = loaded
    tower.image_processor = off.siglip.SigLipImageProcessor(
        size=(size, size), crop_size={"height": size, "width": size}
    )
    return tower.image_processor


def _check_weights(model, out: Path) -> None:
    """The loaded model holds exactly the saved tensors (no key renamed, dropped or resized)."""
    saved = load_file(str(out / "model.safetensors"))
    state = model.state_dict()
    missing = sorted(set(saved) - set(state))
    assert not missing, f"saved keys not in the model: {missing[:5]}"
    for k, v in saved.items():
        assert state[k].shape == v.shape, k
        assert torch.equal(state[k].to(v.dtype).cpu(), v), f"weight differs after load: {k}"


# --------------------------------------------------------------------------------------
# Goldens
# --------------------------------------------------------------------------------------


def _prompt(off: Official, kind: str, tok, question: str) -> str:
    conv = copy.deepcopy(off.conversation.conv_templates[kind])
    assert conv.tokenizer is not None and conv.tokenizer.chat_template == tok.chat_template
    conv.append_message(conv.roles[0], question)
    conv.append_message(conv.roles[1], None)
    return conv.get_prompt()


def llada_cases(tok) -> list[dict]:
    """Official ``LlavaLladaForMaskedDiffusion.generate`` calls (-> llada/generate.py).

    ``mask_id`` is passed because ``generate`` defaults to the literal 126336 (the released
    config's ``mask_token_id``); everything else is as predict.py / lmms-eval pass it."""
    mask_id = tok.convert_tokens_to_ids(LLADA_SPECIAL["mask"])
    base = dict(temperature=0, do_sample=False, mask_id=mask_id)
    return [
        {  # predict.py's timed call at temperature 0 (its warm-up uses step_ratio=1.0)
            "name": "image_predict_shift_prefix",
            "input": "image",
            "kwargs": dict(
                base,
                max_new_tokens=64,
                block_length=64,
                step_ratio=0.5,
                prefix_lm=True,
                schedule="shift",
                tokenizer="<tokenizer>",
            ),
        },
        {  # lmms-eval style: step_per_block = block_length, no prefix cache
            "name": "image_eval_blocks2_noprefix",
            "input": "image",
            "kwargs": dict(
                base,
                max_new_tokens=32,
                block_length=16,
                step_per_block=16,
                prefix_lm=False,
                top_p=None,
                num_beams=1,
                use_cache=True,
            ),
        },
        {
            "name": "image_blocks4_ratio_prefix",
            "input": "image",
            "kwargs": dict(base, max_new_tokens=32, block_length=8, step_ratio=0.5, prefix_lm=True),
        },
        {
            "name": "image_shift_noprefix",
            "input": "image",
            "kwargs": dict(
                base,
                max_new_tokens=16,
                block_length=16,
                step_ratio=0.5,
                prefix_lm=False,
                schedule="shift",
            ),
        },
        {
            "name": "text_prefix",
            "input": "text",
            "kwargs": dict(base, max_new_tokens=16, block_length=8, step_ratio=0.5, prefix_lm=True),
        },
        {
            "name": "text_noprefix",
            "input": "text",
            "kwargs": dict(base, max_new_tokens=16, block_length=16, prefix_lm=False),
        },
    ]


def dream_cases(tok) -> list[dict]:
    """Official ``LlavaDreamForMaskedDiffusion.generate`` calls (-> ``diffusion_generate``)."""
    return [
        {  # lmms-eval run_dream.sh: alg=topk_margin, prefix_lm=True, temperature 0
            "name": "image_eval_topk_margin_prefix",
            "input": "image",
            "kwargs": dict(
                max_new_tokens=32,
                temperature=0,
                do_sample=False,
                top_p=None,
                num_beams=1,
                block_length=32,
                step_per_block=32,
                alg="topk_margin",
                prefix_lm=True,
                use_cache=True,
            ),
        },
        {  # generate's own defaults (alg entropy, top_p 0.95) at temperature 0, no cache
            "name": "image_entropy_topp_noprefix",
            "input": "image",
            "kwargs": dict(max_new_tokens=16, steps=8, temperature=0.0),
        },
        {
            "name": "image_maskgit_shift_prefix",
            "input": "image",
            "kwargs": dict(
                max_new_tokens=24,
                temperature=0.0,
                top_p=None,
                alg="maskgit_plus",
                step_ratio=0.5,
                schedule="shift",
                prefix_lm=True,
            ),
        },
        {
            "name": "text_topk_margin_prefix",
            "input": "text",
            "kwargs": dict(
                max_new_tokens=16,
                steps=16,
                temperature=0.0,
                top_p=None,
                alg="topk_margin",
                prefix_lm=True,
            ),
        },
        {
            "name": "text_entropy_noprefix",
            "input": "text",
            "kwargs": dict(max_new_tokens=16, steps=16, temperature=0.0, top_p=None, alg="entropy"),
        },
    ]


class Inputs:
    """The official preprocessing of the image prompt and the text prompt."""

    def __init__(self, off: Official, kind: str, tok, model, processor, image: Image.Image):
        c = off.constants
        self.image = image
        self.image_prompt = _prompt(off, kind, tok, PROMPT_IMAGE)
        self.text_prompt = _prompt(off, kind, tok, PROMPT_TEXT)
        tii = off.mm_utils.tokenizer_image_token
        self.image_ids = tii(self.image_prompt, tok, c.IMAGE_TOKEN_INDEX, return_tensors="pt")[None]
        self.text_ids = tii(self.text_prompt, tok, c.IMAGE_TOKEN_INDEX, return_tensors="pt")[None]
        self.image_sizes = [image.size]
        dtype = next(model.parameters()).dtype
        pixels = off.mm_utils.process_images([image], processor, model.config)
        self.pixel_values = pixels  # [n_images, tiles, 3, H, W] (stacked: one image)
        self.images = [p.to(dtype=dtype) for p in pixels]  # as predict.py passes them


def _embed(model, ids):
    return model.get_model().embed_tokens(ids)


def record_tensors(off: Official, kind: str, model, inp: Inputs) -> tuple[dict, dict]:
    """Vision features, spliced embeds, logits (full forward and prefix-cached)."""
    t, info = {}, {}
    with torch.no_grad():
        concat = torch.cat([x if x.ndim == 4 else x[None] for x in inp.images])
        t["vision_tower_features"] = model.get_model().get_vision_tower()(concat)
        _, pos, am, _, embeds, _, new_ids = model.prepare_inputs_labels_for_multimodal(
            inp.image_ids,
            None,
            None,
            None,
            None,
            inp.images,
            ["image"],
            image_sizes=inp.image_sizes,
            return_inputs=True,
        )
        _, _, _, _, embeds_gen, _ = model.prepare_inputs_labels_for_multimodal(
            inp.image_ids,
            None,
            None,
            None,
            None,
            inp.images,
            ["image"],
            image_sizes=inp.image_sizes,
        )
        assert torch.equal(embeds, embeds_gen)
        assert pos is None and am is None
        t["inputs_embeds"] = embeds
        t["expanded_input_ids"] = new_ids  # -200 where image features sit
        info["n_image_tokens"] = int((new_ids == off.constants.IMAGE_TOKEN_INDEX).sum())
        for name, prompt_embeds, ids in (
            ("", embeds, None),
            ("text_", _embed(model, inp.text_ids), inp.text_ids),
        ):
            full, cached, extra = _logits(kind, model, prompt_embeds)
            # the image prompt is long: keep its last N_TAIL positions and the masks (size)
            t[f"{name}logits"] = full if ids is not None else full[:, -(N_TAIL + N_MASK) :]
            t[f"{name}logits_prefix_cached"] = cached
            for k, v in extra.items():
                t[f"{name}{k}"] = v
            if ids is not None:
                t["text_inputs_embeds"] = prompt_embeds
    return t, info


def _mask_id(kind: str, model) -> int:
    return int(model.config.mask_token_id)


def _logits(kind: str, model, prompt_embeds):
    """One forward of ``[prompt embeds | N_MASK masks]`` the way the samplers build it, and the
    prefix-cache forward over the N_MASK answer positions only."""
    mask_id = _mask_id(kind, model)
    bsz, plen = prompt_embeds.shape[:2]
    answer = torch.full((bsz, N_MASK), mask_id, dtype=torch.long)
    extra = {}
    if kind == "llada":
        lm = model.get_model()
        x = torch.cat([torch.zeros((bsz, plen), dtype=torch.long), answer], dim=1)
        emb = lm.transformer.wte(x)
        emb[:, :plen] = prompt_embeds
        full = lm(None, input_embeddings=emb).logits
        kv = lm(None, input_embeddings=prompt_embeds, use_cache=True).attn_key_values
        cached = lm(None, input_embeddings=lm.transformer.wte(answer), past_key_values=kv).logits
    else:
        x = torch.cat([torch.zeros((bsz, plen), dtype=torch.long), answer], dim=1)
        emb = model.model.embed_tokens(x)
        emb[:, :plen] = prompt_embeds
        full = model.forward_dream(None, None, None, inputs_embeds=emb).logits
        prefill = model.forward_dream(None, None, None, inputs_embeds=prompt_embeds, use_cache=True)
        first = prefill.logits[:, -1:].argmax(dim=-1)
        answer[:, :1] = first
        cached = model.forward_dream(
            None,
            None,
            None,
            inputs_embeds=model.model.embed_tokens(answer),
            past_key_values=prefill.past_key_values,
        ).logits
        extra["prefill_last_logits"] = prefill.logits[:, -1]
        extra["prefix_cached_answer_ids"] = answer
    return full, cached, extra


def run_generation(kind: str, model, tok, inp: Inputs, case: dict) -> dict:
    kwargs = dict(case["kwargs"])
    if kwargs.get("tokenizer") == "<tokenizer>":
        kwargs["tokenizer"] = tok
    with torch.no_grad():
        if case["input"] == "image":
            out = model.generate(
                inp.image_ids, images=inp.images, image_sizes=inp.image_sizes, **kwargs
            )
        else:
            out = model.generate(inp.text_ids, **kwargs)
    ids = out if kind == "llada" else out.sequences
    ids = ids.tolist()
    texts = tok.batch_decode(ids, skip_special_tokens=True)
    return {
        "name": case["name"],
        "input": case["input"],
        "call": "model.generate(input_ids, images=..., image_sizes=..., **kwargs)"
        if case["input"] == "image"
        else "model.generate(input_ids, **kwargs)",
        "kwargs": case["kwargs"],
        "output_ids": ids,
        "output_text": [s.lstrip("!") for s in texts],
        "contains_mask_id": any(_mask_id(kind, model) in row for row in ids),
    }


def compute(off: Official, kind: str, out: Path, dtype: torch.dtype, image=None, mutate=None):
    tok, model, processor = load_official(off, kind, out, dtype)
    if mutate:
        mutate(model)
    image = image if image is not None else Image.open(out / "image.png").convert("RGB")
    inp = Inputs(off, kind, tok, model, processor, image)
    tensors, info = record_tensors(off, kind, model, inp)
    tensors.update(
        image_input_ids=inp.image_ids,
        text_input_ids=inp.text_ids,
        pixel_values=inp.pixel_values,
    )
    return tok, model, inp, tensors, info


def make_goldens(off: Official, kind: str, out: Path, dtype: torch.dtype):
    tok, model, inp, tensors, info = compute(off, kind, out, dtype)
    cases = llada_cases(tok) if kind == "llada" else dream_cases(tok)
    gens = [run_generation(kind, model, tok, inp, c) for c in cases]
    meta = {
        "model": "LaViDa-LLaDA" if kind == "llada" else "LaViDa-Dream",
        "official": {"repo": "jacklishufan/LaViDa", "commit": off.rev},
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "pillow": Image.__version__,
            "python": sys.version.split()[0],
        },
        "compute_dtype": str(dtype).replace("torch.", ""),
        "checkpoint_dtype": "bfloat16",
        "seed": SEEDS[kind],
        "siglip_folder_seed": SIGLIP_FOLDER_SEED,
        "n_mask_logits": N_MASK,
        "mask_token_id": _mask_id(kind, model),
        **info,
    }
    golden = {
        "meta": meta,
        "prompt_image": {
            "question": PROMPT_IMAGE,
            "prompt": inp.image_prompt,
            "input_ids": inp.image_ids[0].tolist(),
            "image_sizes": [list(s) for s in inp.image_sizes],
            "image_file": "image.png",
        },
        "prompt_text": {
            "question": PROMPT_TEXT,
            "prompt": inp.text_prompt,
            "input_ids": inp.text_ids[0].tolist(),
        },
        "generations": gens,
    }
    return golden, tensors


# --------------------------------------------------------------------------------------
# IO, verify, main
# --------------------------------------------------------------------------------------


def _dump_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def _save_tensors(path: Path, tensors: dict) -> None:
    out = {}
    for k, v in tensors.items():
        v = v.detach().cpu().contiguous()
        out[k] = v.float() if v.is_floating_point() else v
    save_file(out, str(path), metadata={"format": "pt"})


def build(off: Official, kind: str, out: Path) -> None:
    golden, tensors = make_goldens(off, kind, out, torch.float32)
    _save_tensors(out / "golden.safetensors", tensors)
    _dump_json(out / "golden.json", golden)
    n_img, plen = golden["meta"]["n_image_tokens"], tensors["inputs_embeds"].shape[1]
    print(f"[{kind}] image tokens {n_img}, prompt length {plen}")
    for gen in golden["generations"]:
        print(f"  {gen['name']}: {gen['output_ids'][0][-16:]} mask={gen['contains_mask_id']}")


def verify(off: Official, kind: str, out: Path, dtype: torch.dtype) -> bool:
    golden = json.loads((out / "golden.json").read_text())
    saved = load_file(str(out / "golden.safetensors"))
    new, tensors = make_goldens(off, kind, out, dtype)
    ok = True
    for key in ("prompt_image", "prompt_text"):
        if new[key] != golden[key]:
            print(f"[{kind}] {key} differs")
            ok = False
    atol = 1e-5 if dtype == torch.float32 else 2e-4
    for k, v in saved.items():
        w = tensors[k].detach().cpu()
        if v.is_floating_point():
            err = (w.double() - v.double()).abs().max().item()
            good = w.shape == v.shape and err <= atol
            print(f"[{kind}] {k} {tuple(v.shape)} max|diff| {err:.2e}")
        else:
            good = torch.equal(w, v)
        if not good:
            print(f"[{kind}] {k} MISMATCH")
            ok = False
    for g_old, g_new in zip(golden["generations"], new["generations"], strict=True):
        same = g_old["output_ids"] == g_new["output_ids"]
        print(f"[{kind}] generation {g_old['name']}: {'ok' if same else 'MISMATCH'}")
        ok &= same
    ok &= sensitivity(off, kind, out, saved)
    return ok


def sensitivity(off: Official, kind: str, out: Path, saved: dict) -> bool:
    """The goldens must notice another image and another ``image_aspect_ratio``."""
    ok = True
    ref = saved["logits"]
    _, _, _, t, _ = compute(off, kind, out, torch.float32, image=make_image(1))
    d_img = (t["logits"][..., -N_MASK:, :] - ref[..., -N_MASK:, :]).abs().max().item()

    def pad(model):
        model.config.image_aspect_ratio = "pad"

    _, _, _, t, _ = compute(off, kind, out, torch.float32, mutate=pad)
    d_ar = (
        float("inf") if t["logits"].shape != ref.shape else (t["logits"] - ref).abs().max().item()
    )
    for what, d in (("other image", d_img), ("image_aspect_ratio=pad", d_ar)):
        print(f"[{kind}] sensitivity {what}: max|dlogits| {d:.3g}")
        ok &= d > 1e-3
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lavida", type=Path, required=True, help="LaViDa checkout (holds llava/)")
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/golden"))
    ap.add_argument("--only", choices=["llada", "dream"], action="append")
    ap.add_argument("--verify", action="store_true", help="reload and re-check the fixtures")
    ap.add_argument("--verify-dtype", choices=["float32", "float64"], default="float32")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    kinds = args.only or ["llada", "dream"]
    dirs = {k: (args.out / f"lavida_{k}").resolve() for k in ("llada", "dream")}
    if not args.verify:
        for k in ("llada", "dream"):  # both tokenizers are needed to import conversation.py
            dirs[k].mkdir(parents=True, exist_ok=True)
            if k in kinds or not (dirs[k] / "tokenizer.json").exists():
                build_tokenizer(dirs[k], k)
    off = Official(args.lavida, dirs)
    if args.verify:
        dtype = getattr(torch, args.verify_dtype)
        ok = all([verify(off, k, dirs[k], dtype) for k in kinds])
        print("VERIFY", "OK" if ok else "FAILED")
        return 0 if ok else 1
    for k in kinds:
        build_siglip_folder(off, dirs[k] / SIGLIP_DIR)
        build_checkpoint(off, k, dirs[k])
        build(off, k, dirs[k])
    return 0


if __name__ == "__main__":
    sys.exit(main())
