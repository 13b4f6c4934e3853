"""Model configs in the official layouts: config.json dicts with every field of the released
checkpoints (LLaDA-8B, Dream-7B, MMaDA-8B, LaViDa, LLaDA-V) and the real values, sizes set by the
caller; plus the small SigLIP and MAGVIT-v2 configs of the multimodal test models.

Only data and dict builders (no weights, no torch): `seer.models.factory` makes checkpoints from
them, the golden scripts and the tests build their tiny models from them.
"""

from __future__ import annotations

# The fields of GSAI-ML/LLaDA-8B-Instruct's config.json with the real values; sizes are overridden.
LLADA_8B = {
    "activation_type": "silu",
    "alibi": False,
    "alibi_bias_max": 8.0,
    "architectures": ["LLaDAModelLM"],
    "attention_dropout": 0.0,
    "attention_layer_norm": False,
    "attention_layer_norm_with_affine": True,
    "auto_map": {
        "AutoConfig": "configuration_llada.LLaDAConfig",
        "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM",
        "AutoModel": "modeling_llada.LLaDAModelLM",
    },
    "bias_for_layer_norm": False,
    "block_group_size": 1,
    "block_type": "llama",
    "d_model": 4096,
    "embedding_dropout": 0.0,
    "embedding_size": 126464,
    "eos_token_id": 126081,
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
    "mask_token_id": 126336,
    "max_sequence_length": 4096,
    "mlp_hidden_size": 12288,
    "mlp_ratio": 4,
    "model_type": "llada",
    "multi_query_attention": None,
    "n_heads": 32,
    "n_kv_heads": 32,
    "n_layers": 32,
    "pad_token_id": 126081,
    "precision": "amp_bf16",
    "residual_dropout": 0.0,
    "rms_norm_eps": 1e-05,
    "rope": True,
    "rope_full_precision": True,
    "rope_theta": 500000.0,
    "scale_logits": False,
    "transformers_version": "4.46.3",
    "use_cache": False,
    "vocab_size": 126464,
    "weight_tying": False,
}

# The fields of Dream-org/Dream-v0-Instruct-7B's config.json with the real values.
DREAM_7B = {
    "architectures": ["DreamModel"],
    "attention_dropout": 0.0,
    "auto_map": {
        "AutoConfig": "configuration_dream.DreamConfig",
        "AutoModel": "modeling_dream.DreamModel",
    },
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 18944,
    "mask_token_id": 151666,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "Dream",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "pad_token_id": 151643,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.46.2",
    "use_cache": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}


def llada_config(
    vocab_size: int,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    mlp_hidden_size: int | None = None,
    max_sequence_length: int = 512,
    **tokens: int,
) -> dict:
    """A LLaDA config.json dict with every official field; tokens: mask/eos/pad_token_id."""
    cfg = dict(LLADA_8B)
    cfg.update(
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=n_heads,
        mlp_hidden_size=mlp_hidden_size or 3 * d_model,
        vocab_size=vocab_size,
        embedding_size=vocab_size,
        max_sequence_length=max_sequence_length,
    )
    cfg.update(tokens)
    return cfg


def dream_config(
    vocab_size: int,
    hidden_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    num_key_value_heads: int = 2,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 512,
    **tokens: int,
) -> dict:
    """A Dream config.json dict with every official field; tokens: mask/eos/pad/bos_token_id."""
    cfg = dict(DREAM_7B)
    cfg.update(
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        max_window_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        intermediate_size=intermediate_size or 3 * hidden_size,
        vocab_size=vocab_size,
        max_position_embeddings=max_position_embeddings,
        sliding_window=max_position_embeddings,
        torch_dtype="float32",
    )
    cfg.update(tokens)
    return cfg


# MMaDA's additions to LLaDA-8B's config.json (configs/mmada_demo.yaml `model.mmada`, merged in by
# train_mmada.py): vocab_size = embedding_size = new_vocab_size = llm_vocab_size + codebook_size.
MMADA_8B = {
    "architectures": ["MMadaModelLM"],
    "model_type": "mmada",
    "w_clip_vit": False,
    "new_vocab_size": 134656,
    "llm_vocab_size": 126464,
    "codebook_size": 8192,
    "num_vq_tokens": 1024,
    "num_new_special_tokens": 0,
    "tie_word_embeddings": False,
}


def mmada_config(
    text_vocab: int,
    codebook_size: int = 64,
    num_vq_tokens: int = 64,
    d_model: int = 64,
    n_layers: int = 2,
    n_heads: int = 4,
    **tokens: int,
) -> dict:
    """An MMaDA config.json dict: LLaDA's fields + MMaDA's, text rows then image codes."""
    new = text_vocab + codebook_size
    cfg = llada_config(new, d_model=d_model, n_layers=n_layers, n_heads=n_heads)
    cfg.update(MMADA_8B)
    cfg.update(
        new_vocab_size=new,
        llm_vocab_size=text_vocab,
        codebook_size=codebook_size,
        num_vq_tokens=num_vq_tokens,
    )
    cfg.update(tokens)
    return cfg


def magvit_config(
    ch: int = 32,
    ch_mult: tuple[int, ...] = (1, 1),
    num_res_blocks: tuple[int, ...] = (1, 1),
    attn_resolutions: tuple[int, ...] = (8,),
    resolution: int = 16,
    codebook_dim: int = 6,
) -> dict:
    """A small MAGVIT-v2 config.json (Seer's `encoder` / `quantize` sections, see magvit.py)."""
    encoder = {
        "ch": ch,
        "ch_mult": list(ch_mult),
        "num_res_blocks": list(num_res_blocks),
        "attn_resolutions": list(attn_resolutions),
        "dropout": 0.0,
        "in_ch": 3,
        "out_ch": 3,
        "resolution": resolution,
        "z_channels": codebook_dim,
        "double_z": False,
    }
    quantize = {"codebook_dim": codebook_dim}
    return {"_class_name": "MAGVITv2", "encoder": encoder, "quantize": quantize}


# LaViDa's released mm fields (predict.py's vision_kwargs and the LLaVA-OneVision recipe); the
# tower is shrunk by `lavida_config` and named by a local folder or given inline.
LAVIDA_MM = {
    "mm_vision_tower": "google/siglip-so400m-patch14-384",
    "mm_projector_type": "mlp2x_gelu",
    "mm_hidden_size": 1152,
    "mm_vision_select_layer": -2,
    "mm_vision_select_feature": "patch",
    "mm_patch_merge_type": "spatial_unpad",
    "mm_spatial_pool_mode": "average",
    "image_aspect_ratio": "anyres_max_4",
    "image_grid_pinpoints": "(1x1),...,(6x6)",
    "use_mm_proj": True,
}


def siglip_config(
    hidden_size: int = 32, layers: int = 3, heads: int = 2, image_size: int = 56, patch: int = 8
) -> dict:
    """A small SigLIP vision config (the full tower: LLaVA drops the layers after the select)."""
    return {
        "model_type": "siglip_vision_model",
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "image_size": image_size,
        "patch_size": patch,
        "layer_norm_eps": 1e-6,
        "hidden_act": "gelu_pytorch_tanh",
    }


def lavida_config(lm_raw: dict, arch: str, vision: dict | None = None, **mm) -> dict:
    """A LaViDa config.json: the LM's config (LLaDA or Dream) + the released mm fields, with a
    small SigLIP tower inline (`vision_config`); `mm` overrides fields (e.g. image_aspect_ratio)."""
    vision = vision or siglip_config()
    raw = dict(lm_raw)
    raw.pop("auto_map", None)  # LaViDa loads through its own builder, not remote-code classes
    raw.update(LAVIDA_MM, mm_hidden_size=vision["hidden_size"], vision_config=vision)
    side = vision["image_size"]
    if side != 384:  # the "(1x1),...,(6x6)" form is only defined for the released tower sizes
        raw["image_grid_pinpoints"] = [[side * i, side * j] for i in (1, 2) for j in (1, 2)]
    raw.update(mm)
    if arch == "llada":
        raw.update(model_type="llava_llada", architectures=["LlavaLladaForMaskedDiffusion"])
    else:
        raw.update(model_type="llava_dream", architectures=["LlavaDreamForMaskedDiffusion"])
    return raw


# LLaDA-V's config.json: the LM fields of ML-GSAI/LLaDA-V `train/llada_v_prepare/files/config.json`
# (LLaDA-8B in Llama layout) and the vision fields that LLaVA's train.py writes with the values of
# `train/scripts/llada_v_finetune.sh` (the released config.json itself was not available).
LLADA_V_8B = {
    "architectures": ["LlavaLLaDAModelLM"],
    "model_type": "llava_llada",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 126081,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 12288,
    "max_position_embeddings": 16384,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": False,
    "vocab_size": 126464,
    "mm_vision_tower": "model/siglip2-so400m-patch14-384",
    "mm_projector_type": "mlp2x_gelu",
    "mm_hidden_size": 1152,
    "mm_vision_select_layer": -2,
    "mm_vision_select_feature": "patch",
    "mm_patch_merge_type": "spatial_unpad",
    "mm_use_im_start_end": False,
    "mm_use_im_patch_token": False,
    "mm_newline_position": "grid",
    "mm_spatial_pool_mode": "bilinear",
    "mm_spatial_pool_stride": None,
    "use_mm_proj": True,
    "image_aspect_ratio": "anyres_max_4",
    "image_grid_pinpoints": [[384 * i, 384 * j] for i in range(1, 7) for j in range(1, 7)],
    "tokenizer_model_max_length": 8192,
    "tokenizer_padding_side": "right",
}


def llada_v_config(
    vocab_size: int,
    hidden_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    num_key_value_heads: int | None = None,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 512,
    vision: bool = True,
    **tokens: int,
) -> dict:
    """A LLaDA-V config.json dict with every released field and tiny LM sizes.

    `vision=False` drops the mm_* / image fields (a text-only, Llama-layout LLaDA); otherwise
    they keep the released values (tower name, mm_hidden_size 1152, pinpoints): override them
    with `raw.update(...)` for a tiny tower. tokens: mask/eos/pad/bos_token_id.
    """
    cfg = dict(LLADA_V_8B)
    if not vision:
        cfg = {k: v for k, v in cfg.items() if not k.startswith(("mm_", "image_", "use_mm"))}
    cfg.update(
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads or num_attention_heads,
        intermediate_size=intermediate_size or 3 * hidden_size,
        vocab_size=vocab_size,
        max_position_embeddings=max_position_embeddings,
        torch_dtype="float32",
    )
    cfg.update(tokens)
    return cfg
