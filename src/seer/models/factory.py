"""Make checkpoints in the official layouts: configs with every official field, random or trained
weights, saved as config.json + model.safetensors (+ tokenizer files) that `seer.load` reads.

Used by `seer make-checkpoint`, by the tests (tiny models) and by the training recipe of the
built-in model, so every model we produce goes through the same loader as a downloaded one.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from seer.errors import CheckpointError
from seer.models.loader import build_model

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


def random_model(raw: dict, seed: int = 0, std: float = 0.02):
    """A model for `raw` with N(0, std) weights and unit norms (std ~0.2 spreads the logits)."""
    model = build_model(raw).to_empty(device="cpu")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.state_dict(keep_vars=True).items():
            if name.endswith("norm.weight") or name.endswith("ln_f.weight"):
                t.fill_(1.0)
            elif name.endswith("bias"):
                t.zero_()
            else:
                t.copy_(torch.randn(t.shape, generator=g) * std)
    return model.eval()


def save_checkpoint(model, raw: dict, folder: str | Path, dtype=torch.float32) -> Path:
    """Write config.json + model.safetensors in the official layout."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    state = {k: v.detach().to(dtype).contiguous() for k, v in model.state_dict().items()}
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def make_random_checkpoint(
    arch: str, folder: str | Path, layers: int = 2, width: int = 64, seed: int = 0
) -> Path:
    """A random model of `arch` with the built-in word-level tokenizer, ready for `seer.load`.

    The config is validated before anything is written, so a bad size leaves no folder behind.
    """
    from seer.demo import tokenizer as wordtok

    vocab = wordtok.vocabulary()
    eos = vocab[wordtok.EOS_TOKEN]
    ids = {"mask_token_id": vocab[wordtok.MASK_TOKEN], "eos_token_id": eos, "pad_token_id": eos}
    if arch == "llada":
        raw = llada_config(len(vocab), d_model=width, n_layers=layers, **ids)
    elif arch == "dream":
        raw = dream_config(len(vocab), hidden_size=width, num_hidden_layers=layers, **ids)
        raw["bos_token_id"] = vocab[wordtok.BOS_TOKEN]
    else:
        raise CheckpointError(f"unknown architecture {arch!r}; choose llada or dream")
    model = random_model(raw, seed=seed, std=0.2)  # raises CheckpointError on a bad size
    folder = Path(folder)
    wordtok.build_tokenizer(folder)
    return save_checkpoint(model, raw, folder)
