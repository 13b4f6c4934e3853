#!/usr/bin/env python
"""Produce the MMaDA golden fixtures (tests/fixtures/golden/mmada) with the *official* MMaDA code.

No official code is in this repository: the script imports it at run time from a checkout of
github.com/Gen-Verse/MMaDA (``--mmada``): ``models/`` (``MMadaModelLM``, ``MMadaConfig``,
``MAGVITv2``, ``VQGANEncoder``, ``VQGANDecoder``, ``LFQuantizer``), ``training/utils.py``
(``image_transform``) and ``training/prompting_utils.py`` (``UniversalPrompting``).

What it writes (see tests/fixtures/golden/README.md, section MMaDA):

* a tiny random MMaDA LM saved by the official ``save_pretrained`` (config.json with every field
  of LLaDA-8B's config plus MMaDA's, model.safetensors), a tiny word-level tokenizer with
  LLaDA's special tokens and reserved-token slots, ``vq_model/`` (a tiny random MAGVIT-v2 built
  from the official encoder / decoder / quantizer classes, official key names), ``image.png``;
* ``golden.safetensors`` / ``golden.json``: preprocessed pixels, VQ code ids, the framed prompt
  (as ``inference_mmu.py`` builds it), the logits of one forward over ``[prompt | 16 masks]``,
  and ``mmu_generate`` outputs for two scaled-down settings.

Environment: torch 2.13.0 (CPU), transformers 4.46.0 (MMaDA's pin), diffusers 0.32.2 (pinned),
torchvision 0.28.0, omegaconf, jaxtyping, typeguard, einops. Run-time shims (no file edited):

* ``TORCHDYNAMO_DISABLE=1`` before torch is imported;
* torchvision's detection ops (``torchvision::nms`` ...) are not needed; its PyPI wheel is a CUDA
  build whose C extension does not load next to CPU torch, so ``torch.library.register_fake`` is
  a no-op while ``import torchvision`` runs (the transforms are pure Python / PIL);
* ``training.prompting_utils.reserved_token_mapping`` holds LLaDA-8B's literal ids of the
  reserved-token slots (``<|soi|>`` = 126084 = ``<|reserved_token_0|>``, ...); for the tiny
  tokenizer it is replaced, in memory, by the tiny tokenizer's ids of the same slot names.

Usage (from the repository root, in that environment)::

    python tools/goldens/make_mmada_goldens.py --mmada /src/MMaDA   # -> tests/fixtures/golden/mmada
    python tools/goldens/make_mmada_goldens.py --mmada /src/MMaDA --verify   # re-check, no writes
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")  # must happen before torch is imported

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

SEED_LM, SEED_VQ = 0, 1
WEIGHT_STD, NORM_STD = 0.2, 0.1
RESOLUTION = 16  # image side after preprocessing (MMaDA: 512)
# VQGANEncoder / VQGANDecoder / LFQuantizer keyword arguments of the tiny VQ (official: defaults)
VQ_ENCODER = {
    "ch": 32,
    "ch_mult": [1, 1],
    "num_res_blocks": [1, 1],
    "attn_resolutions": [8],
    "dropout": 0.0,
    "in_ch": 3,
    "out_ch": 3,
    "resolution": RESOLUTION,
    "z_channels": 6,
    "double_z": False,
}
VQ_DECODER = {**VQ_ENCODER, "ch_mult": [1], "num_res_blocks": [1], "attn_resolutions": []}
VQ_QUANTIZE = {"codebook_dim": 6}  # 2**6 = 64 codes (official: 13 -> 8192)
TEXT_ROWS = 256  # llm_vocab_size: text embedding rows, padded past len(tokenizer) (8B: 126464)

# LLaDA-8B-Instruct's config.json fields (see src/seer/models/factory.py LLADA_8B), tiny sizes.
LLADA_FIELDS = {
    "activation_type": "silu",
    "alibi": False,
    "alibi_bias_max": 8.0,
    "attention_dropout": 0.0,
    "attention_layer_norm": False,
    "attention_layer_norm_with_affine": True,
    "bias_for_layer_norm": False,
    "block_group_size": 1,
    "block_type": "llama",
    "d_model": 64,
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
    "max_sequence_length": 512,
    "mlp_hidden_size": 176,
    "mlp_ratio": 4,
    "multi_query_attention": None,
    "n_heads": 4,
    "n_kv_heads": 4,
    "n_layers": 2,
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

# Tokenizer: LLaDA's special tokens, the reserved slots MMaDA uses, then plain words.
SPECIALS = [
    "<|startoftext|>",
    "<|endoftext|>",
    "<|mdm_mask|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|unk|>",
] + [f"<|reserved_token_{i}|>" for i in range(11)]
WORDS_TEXT = (
    "user assistant system a an the is are was be of in on at to and or not it this that what "
    "which who where how many much color colour shape size big small left right top bottom "
    "red green blue yellow black white orange purple pink brown gray grey dark light bright "
    "image picture photo scene object objects square circle triangle line lines stripe stripes "
    "pattern background foreground there here one two three four five six seven eight nine ten "
    "zero describe tell me please answer question yes no maybe can you see do does show shows "
    "with without near far above below between inside outside corner center middle edge "
    "gradient smooth rough sky sea tree house car dog cat ball box cup table chair man woman "
    "child bird fish flower grass road wall window door book pen phone screen light shadow "
    "sun moon star cloud rain snow water fire stone wood metal glass paper cloth hot cold warm "
    "cool new old good bad happy sad fast slow high low long short wide narrow full empty open "
    "closed first last next other same different more less most least very quite about think "
    "reason step because so then : , . ? ! 0 1 2 3 4 5 6 7 8 9"
)
WORDS = WORDS_TEXT.split()
CHAT_TEMPLATE = (  # LLaDA-8B-Instruct's template, verbatim
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
)
QUESTION = "what color is the square in the picture ?"
CASES = [  # scaled-down inference_mmu.py (max_new_tokens 512, steps 256, block 128) and a 2nd one
    {"name": "a_gen32_steps16_block8", "max_new_tokens": 32, "steps": 16, "block_length": 8},
    {"name": "b_gen16_steps16_block16", "max_new_tokens": 16, "steps": 16, "block_length": 16},
]
LOGITS_MASKS = 16


def import_official(root: Path):
    """Import the official modules (read-only checkout) with the run-time shims above."""
    real = torch.library.register_fake
    torch.library.register_fake = lambda *a, **k: lambda f: f
    try:
        import torchvision  # noqa: F401
    finally:
        torch.library.register_fake = real
    sys.path.insert(0, str(root))
    import models
    import training.prompting_utils as prompting
    import training.utils as tutils

    return models, prompting, tutils


def build_tokenizer(out: Path):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import AutoTokenizer

    vocab = {t: i for i, t in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|unk|>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    cfg = {
        "add_bos_token": False,
        "add_eos_token": False,
        "bos_token": "<|startoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "unk_token": "<|unk|>",
        "additional_special_tokens": ["<|mdm_mask|>"],
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 512,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    smap = {k: cfg[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token")}
    smap["additional_special_tokens"] = ["<|mdm_mask|>"]
    (out / "special_tokens_map.json").write_text(json.dumps(smap, indent=2) + "\n")
    return AutoTokenizer.from_pretrained(out, padding_side="left")  # as inference_mmu.py


def make_image(path: Path) -> None:
    """A fixed 24x20 RGB pattern: gradients, a square and a stripe (non-square, so crop matters)."""
    from PIL import Image

    h, w = 20, 24
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.stack([xx * 10 + 5, yy * 12 + 3, (xx * 7 + yy * 5) % 256], -1).astype(np.uint8)
    img[5:13, 8:16] = (250, 30, 40)
    img[:, 19:21] = (20, 20, 220)
    Image.fromarray(img, "RGB").save(path, optimize=False)


def init_params(module: torch.nn.Module, seed: int, conv_default: bool = False) -> None:
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + NORM_STD * torch.randn_like(p))
            elif "norm" in name and name.endswith("bias"):
                p.copy_(NORM_STD * torch.randn_like(p))
            elif conv_default:  # convs: keep PyTorch's default (fan-in scaled) init, new draw
                if p.dim() > 1:
                    torch.nn.init.kaiming_uniform_(p, a=5**0.5)
                else:
                    p.uniform_(-0.1, 0.1)
            else:
                p.copy_(WEIGHT_STD * torch.randn_like(p))


def build_vq(models, out: Path):
    """A tiny MAGVITv2: the official class with official sub-modules of smaller sizes.

    ``MAGVITv2.__init__`` takes no arguments (sizes are fixed there), so the tiny one is
    assembled from the official ``VQGANEncoder`` / ``VQGANDecoder`` / ``LFQuantizer`` with
    keyword arguments; the attribute names (and so the checkpoint keys) are MAGVITv2's.
    """
    from safetensors.torch import save_file

    vq = models.MAGVITv2.__new__(models.MAGVITv2)
    torch.nn.Module.__init__(vq)
    vq.encoder = models.VQGANEncoder(**VQ_ENCODER)
    vq.decoder = models.VQGANDecoder(**VQ_DECODER)
    vq.quantize = models.LFQuantizer(**VQ_QUANTIZE)
    init_params(vq, SEED_VQ, conv_default=True)
    vq.eval()
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.contiguous() for k, v in vq.state_dict().items()}
    # the official save_pretrained(safe_serialization=True) file name (models/modeling_utils.py)
    save_file(state, out / "pytorch_model.safetensors", metadata={"format": "pt"})
    cfg = {
        "_class_name": "MAGVITv2",
        "_diffusers_version": "0.32.2",
        # Seer's extension: the sub-module sizes (the released config.json has none: defaults)
        "encoder": VQ_ENCODER,
        "decoder": VQ_DECODER,
        "quantize": VQ_QUANTIZE,
    }
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return vq


def load_vq(models, folder: Path):
    from safetensors.torch import load_file

    cfg = json.loads((folder / "config.json").read_text())
    vq = models.MAGVITv2.__new__(models.MAGVITv2)
    torch.nn.Module.__init__(vq)
    vq.encoder = models.VQGANEncoder(**cfg["encoder"])
    vq.decoder = models.VQGANDecoder(**cfg["decoder"])
    vq.quantize = models.LFQuantizer(**cfg["quantize"])
    vq.load_state_dict(load_file(folder / "pytorch_model.safetensors"), strict=True)
    return vq.eval()


def lm_config(tokenizer) -> dict:
    vocab = tokenizer.get_vocab()
    codebook = 2 ** VQ_QUANTIZE["codebook_dim"]
    assert len(tokenizer) <= TEXT_ROWS
    new_vocab = TEXT_ROWS + codebook
    cfg = dict(LLADA_FIELDS)
    cfg.update(
        architectures=["MMadaModelLM"],
        model_type="mmada",
        vocab_size=new_vocab,
        embedding_size=new_vocab,
        mask_token_id=vocab["<|mdm_mask|>"],
        eos_token_id=vocab["<|endoftext|>"],
        pad_token_id=vocab["<|endoftext|>"],
        # model.mmada fields of configs/mmada_demo.yaml, merged in as train_mmada.py does
        w_clip_vit=False,
        new_vocab_size=new_vocab,
        llm_vocab_size=TEXT_ROWS,
        codebook_size=codebook,
        num_vq_tokens=(RESOLUTION // 2 ** (len(VQ_ENCODER["ch_mult"]) - 1)) ** 2,
        num_new_special_tokens=0,
        tie_word_embeddings=False,
    )
    return cfg


def build_lm(models, tokenizer, out: Path):
    cfg = lm_config(tokenizer)
    model = models.MMadaModelLM(models.MMadaConfig(**cfg))
    init_params(model, SEED_LM)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    written = json.loads((out / "config.json").read_text())
    wrong = sorted(k for k in cfg if written.get(k) != cfg[k])
    if wrong:
        raise RuntimeError(f"config.json differs from the config given in {wrong}")
    return models.MMadaModelLM.from_pretrained(out, torch_dtype=torch.float32).eval()


def framed_prompt(prompting, tokenizer, vq, pixels: torch.Tensor) -> torch.Tensor:
    """The input ids exactly as inference_mmu.py's main loop builds them (batch 1, CPU)."""
    uni = prompting.UniversalPrompting(
        tokenizer,
        max_text_len=512,
        special_tokens=(
            "<|soi|>",
            "<|eoi|>",
            "<|sov|>",
            "<|eov|>",
            "<|t2i|>",
            "<|mmu|>",
            "<|t2v|>",
            "<|v2v|>",
            "<|lvg|>",
        ),
        ignore_id=-100,
        cond_dropout_prob=0.1,
        use_reserved_token=True,
    )
    messages = [{"role": "user", "content": QUESTION}]
    image = pixels.unsqueeze(0)
    image_tokens = vq.get_code(image) + len(uni.text_tokenizer)
    text_token_ids = uni.text_tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=True, return_tensors="pt"
    )
    b = image_tokens.shape[0]
    return torch.cat(
        [
            torch.ones(b, 1) * uni.sptids_dict["<|mmu|>"],
            torch.ones(b, 1) * uni.sptids_dict["<|soi|>"],
            image_tokens,
            torch.ones(b, 1) * uni.sptids_dict["<|eoi|>"],
            text_token_ids,
        ],
        dim=1,
    ).long()


def record(args) -> dict:
    from PIL import Image
    from safetensors.torch import load_file, save_file

    models, prompting, tutils = import_official(args.mmada)
    out = args.out
    if args.verify:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(out, padding_side="left")
        vq = load_vq(models, out / "vq_model")
        model = models.MMadaModelLM.from_pretrained(out, torch_dtype=torch.float32).eval()
    else:
        out.mkdir(parents=True, exist_ok=True)
        tokenizer = build_tokenizer(out)
        make_image(out / "image.png")
        vq = build_vq(models, out / "vq_model")
        model = build_lm(models, tokenizer, out)
    vocab = tokenizer.get_vocab()
    # prompting_utils.reserved_token_mapping: LLaDA-8B's ids of <|reserved_token_0..10|>
    mapping = prompting.reserved_token_mapping
    for k, name in enumerate(list(mapping)):
        mapping[name] = vocab[f"<|reserved_token_{k}|>"]

    image = Image.open(out / "image.png").convert("RGB")
    pixels = tutils.image_transform(image, resolution=RESOLUTION)  # (3, R, R) in [-1, 1]
    with torch.no_grad():
        codes = vq.get_code(pixels.unsqueeze(0))  # (1, N)
        prompt = framed_prompt(prompting, tokenizer, vq, pixels)  # (1, P)
        mask_id = model.config.mask_token_id
        masks = torch.full((1, LOGITS_MASKS), mask_id, dtype=torch.long)
        logits_ids = torch.cat([prompt, masks], dim=1)
        logits = model(logits_ids).logits.float()
        gens = []
        for case in CASES:
            kw = {k: v for k, v in case.items() if k != "name"}
            kw.update(temperature=0.0, remasking="low_confidence", mask_id=mask_id, cfg_scale=0.0)
            x = model.mmu_generate(prompt, **kw)
            gens.append({"name": case["name"], "kwargs": kw, "output_ids": x.tolist()})
    tensors = {
        "pixels": pixels.contiguous(),
        "codes": codes.contiguous(),
        "prompt_ids": prompt.contiguous(),
        "logits_input_ids": logits_ids.contiguous(),
        "logits": logits.contiguous(),
    }
    meta = {
        "question": QUESTION,
        "resolution": RESOLUTION,
        "len_tokenizer": len(tokenizer),
        "reserved_token_mapping": dict(mapping),
        "num_vq_tokens": int(codes.shape[1]),
        "prompt_len": int(prompt.shape[1]),
        "versions": {
            "torch": torch.__version__,
            "transformers": __import__("transformers").__version__,
            "diffusers": __import__("diffusers").__version__,
            "torchvision": __import__("torchvision").__version__,
        },
        "seeds": {"lm": SEED_LM, "vq": SEED_VQ},
    }
    result = {"meta": meta, "generations": gens, "prompt_ids": prompt[0].tolist()}
    if args.verify:
        want = load_file(out / "golden.safetensors")
        old = json.loads((out / "golden.json").read_text())
        for k, v in tensors.items():
            same = (
                torch.equal(v, want[k]) if k != "logits" else torch.allclose(v, want[k], atol=1e-5)
            )
            print(f"{k}: {'same' if same else 'DIFFERENT'}")
        for g, h in zip(gens, old["generations"], strict=True):
            print(f"{g['name']}: {'same' if g['output_ids'] == h['output_ids'] else 'DIFFERENT'}")
        return result
    save_file(tensors, out / "golden.safetensors", metadata={"format": "pt"})
    (out / "golden.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mmada", type=Path, required=True, help="checkout of Gen-Verse/MMaDA")
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/golden/mmada"))
    ap.add_argument("--verify", action="store_true", help="reload the fixtures and re-check")
    args = ap.parse_args()
    torch.set_num_threads(1)
    res = record(args)
    print(json.dumps(res["meta"], indent=1))
    for g in res["generations"]:
        print(g["name"], g["output_ids"][0][res["meta"]["prompt_len"] :])


if __name__ == "__main__":
    main()
