"""Local folder -> model (+ tokenizer). The one place that knows how checkpoints are stored.

- The architecture comes from config.json's `model_type`, else its `architectures`.
- Weights: `model.safetensors` or a sharded `model.safetensors.index.json`. The model is built on
  the meta device, materialised once in the target dtype/device, and filled tensor by tensor from
  memory-mapped shards, so peak memory is about one copy of the model (not two).
- Keys must match exactly (strict); a mismatch lists the first few offenders.
- The tokenizer comes from transformers' `AutoTokenizer` with local files only and no remote code.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import torch
from safetensors import safe_open

from seer.config import TokenIds
from seer.errors import CheckpointError, SeerError
from seer.models.common import BidirectionalLM
from seer.models.defaults import (
    ModelDefaults,
    SeerSettings,
    read_generation_config,
    read_json_object,
)
from seer.models.dream import DreamConfig, DreamModel
from seer.models.lavida import LavidaDream, LavidaLLaDA
from seer.models.llada import LLaDAConfig, LLaDAModelLM
from seer.models.llada_v import LLaDAVConfig, LLaDAVModelLM
from seer.models.mmada import MMaDAConfig, MMaDAModelLM

# model_type / architectures name -> (config class, model class)
REGISTRY = {
    "llada": (LLaDAConfig, LLaDAModelLM),
    "lladamodellm": (LLaDAConfig, LLaDAModelLM),
    "dream": (DreamConfig, DreamModel),
    "dreammodel": (DreamConfig, DreamModel),
    "mmada": (MMaDAConfig, MMaDAModelLM),
    "mmadamodellm": (MMaDAConfig, MMaDAModelLM),
    "llava_llada": (LLaDAConfig, LavidaLLaDA),
    "llavalladaformaskeddiffusion": (LLaDAConfig, LavidaLLaDA),
    "llava_dream": (DreamConfig, LavidaDream),
    "llavadreamformaskeddiffusion": (DreamConfig, LavidaDream),
    # LLaDA-V: model_type is also "llava_llada" (LaViDa's); only `architectures` tells them apart
    "llavalladamodellm": (LLaDAVConfig, LLaDAVModelLM),
}
DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
END_OF_TURN = ("<|eot_id|>", "<|im_end|>")
MASK_NAMES = ("<|mdm_mask|>", "<|mask|>")


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise CheckpointError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[dtype]


def resolve_device(device) -> torch.device:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise CheckpointError(f"unknown device {device!r} ({e}); use cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CheckpointError("device cuda was asked for, but this torch has no CUDA device")
    return dev


BUILTIN = ("builtin", "builtin-vqa")  # the models shipped in the package (seer/assets/<name>)


def builtin_path(name: str = "builtin") -> Path:
    """Folder of a shipped model: "builtin" (text) or "builtin-vqa" (text and images)."""
    if name not in BUILTIN:
        raise CheckpointError(f"unknown built-in model {name!r}; choose {' or '.join(BUILTIN)}")
    return Path(str(resources.files("seer") / "assets" / name))


def model_folder(path: str | Path) -> Path:
    """The folder a model argument names: "builtin" / "builtin-vqa", else a local path."""
    if isinstance(path, str) and path in BUILTIN:
        return builtin_path(path)
    if not isinstance(path, (str, Path)):
        raise CheckpointError(f"a model is a folder path or {' / '.join(BUILTIN)}, not {path!r}")
    return Path(path).expanduser()


def read_config(path: str | Path) -> tuple[Path, dict]:
    folder = model_folder(path)
    if not folder.is_dir():
        raise CheckpointError(
            f"model folder {str(folder)!r} does not exist; pass a local folder or "
            f"{' / '.join(BUILTIN)}"
        )
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise CheckpointError(f"{folder} has no config.json; is this a model folder?")
    raw = read_json_object(cfg_file)
    if "mm_vision_tower" in raw:
        raw = resolve_vision(folder, raw)
    return folder, raw


def resolve_vision(folder: Path, raw: dict) -> dict:
    """Complete a LLaVA-style config with its vision tower's config and image processor.

    `mm_vision_tower` names the SigLIP tower: a folder (relative to the checkpoint, or absolute)
    with its own config.json / preprocessor_config.json, or a hub name. For a hub name of the
    so400m towers the released models use, SigLIP so400m's published shape is taken (the
    weights are in the checkpoint itself); any other hub name is an error (no downloads here).
    """
    from seer.models.vision import SO400M

    raw = dict(raw)
    name = str(raw["mm_vision_tower"])
    tower = Path(name) if Path(name).is_absolute() else folder / name
    processor = {}
    if "vision_config" not in raw:
        if (tower / "config.json").is_file():
            cfg = json.loads((tower / "config.json").read_text())
            raw["vision_config"] = dict(cfg.get("vision_config") or cfg)
        elif "so400m-patch14-384" in name:
            raw["vision_config"] = dict(SO400M)
        else:
            raise CheckpointError(
                f"cannot find the vision tower {name!r}: put its folder (config.json) there "
                "or add its config as vision_config in config.json"
            )
    for place in (tower, folder):
        if (place / "preprocessor_config.json").is_file():
            processor = json.loads((place / "preprocessor_config.json").read_text())
            break
    raw.setdefault("image_processor", processor)
    return raw


def architecture(raw: dict) -> str:
    """The registry key of a config: its architectures name first (LaViDa-LLaDA and LLaDA-V
    share the model_type "llava_llada" but not the class), then its model_type."""
    names = list(raw.get("architectures") or []) + [raw.get("model_type", "")]
    for name in names:
        if str(name).lower() in REGISTRY:
            return str(name).lower()
    known = sorted({k for k in REGISTRY if not k.endswith("lm") and not k.endswith("model")})
    raise CheckpointError(
        f"unknown architecture (model_type={raw.get('model_type')!r}, "
        f"architectures={raw.get('architectures')!r}); Seer supports {', '.join(known)}"
    )


def build_model(raw: dict) -> BidirectionalLM:
    """An un-initialised model (on the meta device) for a config dict."""
    cfg_cls, model_cls = REGISTRY[architecture(raw)]
    try:
        cfg = cfg_cls.from_dict(raw)
    except (ValueError, TypeError, ZeroDivisionError) as e:
        raise CheckpointError(f"config.json: {e}") from None
    with torch.device("meta"):
        return model_cls(cfg)


def weight_files(folder: Path) -> dict[str, Path]:
    """Map each tensor name to the shard that holds it."""
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
            shards = {name: folder / shard for name, shard in weight_map.items()}
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index} is malformed ({e!r}); re-download it") from None
        absent = sorted({str(p.name) for p in shards.values() if not p.is_file()})
        if absent:
            raise CheckpointError(f"{folder}: shard(s) {absent[:3]} named in the index are missing")
        return shards
    if single.is_file():
        with _open(single) as f:
            return {name: single for name in f.keys()}  # noqa: SIM118
    if list(folder.glob("*.bin")):
        raise CheckpointError(
            f"{folder} holds only .bin weights; convert them to safetensors (Seer reads no pickles)"
        )
    raise CheckpointError(f"{folder} has no model.safetensors or model.safetensors.index.json")


@contextlib.contextmanager
def _open(path: Path):
    """safe_open with a clear error for truncated or corrupt files."""
    try:
        f = safe_open(path, framework="pt", device="cpu")
    except Exception as e:  # SafetensorError, OSError: an interrupted download, a wrong file
        raise CheckpointError(f"{path} is not a readable safetensors file ({e})") from None
    with f:
        yield f


def _check_keys(model: torch.nn.Module, shards: dict[str, Path]) -> None:
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(set(expected) - set(shards))
    unexpected = sorted(set(shards) - set(expected))
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing key(s), e.g. {missing[:3]}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected key(s), e.g. {unexpected[:3]}")
    if problems:
        raise CheckpointError(
            "checkpoint keys do not match the architecture: "
            + "; ".join(problems)
            + " (is config.json the one that came with these weights?)"
        )


def init_buffers(model: torch.nn.Module) -> None:
    """Refill non-persistent buffers after `to_empty` (modules that have any say how)."""
    for m in model.modules():
        if hasattr(m, "init_buffers"):
            m.init_buffers()


def load_weights(model: torch.nn.Module, folder: Path, dtype, device) -> torch.nn.Module:
    shards = weight_files(folder)
    _check_keys(model, shards)
    model = model.to(dtype).to_empty(device=device)  # cast on meta: one allocation, in dtype
    init_buffers(model)
    params = dict(model.state_dict(keep_vars=True))
    by_shard: dict[Path, list[str]] = {}
    for name, shard in shards.items():
        by_shard.setdefault(shard, []).append(name)
    bad = []
    for shard, names in by_shard.items():
        with _open(shard) as f:
            for name in names:
                t = f.get_tensor(name)
                target = params[name]
                if tuple(t.shape) != tuple(target.shape):
                    bad.append(f"{name}: {tuple(t.shape)} vs {tuple(target.shape)}")
                    continue
                with torch.no_grad():
                    target.copy_(t)
    if bad:
        raise CheckpointError(f"{len(bad)} tensor(s) have the wrong shape, e.g. {bad[:3]}")
    return model.eval()


def load_model(path, dtype=None, device="cpu") -> BidirectionalLM:
    folder, raw = read_config(path)
    model = build_model(raw)
    return load_weights(model, folder, resolve_dtype(dtype), resolve_device(device))


@contextlib.contextmanager
def _quiet_transformers():
    """AutoTokenizer reads config.json and warns that it does not know `llada`; hide that."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            hf_logging.set_verbosity(level)


def load_tokenizer(folder: Path):
    from transformers import AutoTokenizer

    files = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
    if not any((folder / f).is_file() for f in files):
        raise CheckpointError(f"{folder} has no tokenizer files (tokenizer.json, ...)")
    try:
        with _quiet_transformers():
            return AutoTokenizer.from_pretrained(
                folder, local_files_only=True, trust_remote_code=False
            )
    except Exception as first:  # e.g. Dream's tokenizer_class names its remote-code class
        if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
            from transformers import Qwen2TokenizerFast

            return Qwen2TokenizerFast.from_pretrained(folder, local_files_only=True)
        raise CheckpointError(f"cannot load the tokenizer in {folder}: {first}") from None


def load_defaults(folder: Path, raw: dict, model, tokenizer, seer: SeerSettings) -> ModelDefaults:
    """The model's defaults: its family's official call, then generation_config.json."""
    official = type(model).sampling_defaults(raw, tokenizer)
    try:
        return ModelDefaults.build(official, read_generation_config(folder), seer)
    except CheckpointError:
        raise
    except SeerError as e:  # the file's values do not make valid SamplingParams together
        raise CheckpointError(f"{folder / 'generation_config.json'}: {e}") from None


def load_processor(folder: Path, raw: dict, model, tokenizer, seer: SeerSettings | None = None):
    """The prompt processor of a multimodal model (None for text models). `seer.json` may set
    "system_prompt" (a string, or null for none) for models trained without the official one."""
    if getattr(model, "vision", None) is not None:
        from seer.models.lavida import LlavaProcessor

        kw = {}
        if isinstance(model, LLaDAVModelLM):  # the llava_llada template's system prompt
            from seer.models.llada_v import LLADA_V_SYSTEM

            kw["system"] = LLADA_V_SYSTEM
        if seer is not None and seer.has_system_prompt:
            kw["system"] = seer.system_prompt
        return LlavaProcessor(model, tokenizer, **kw)
    if isinstance(model, MMaDAModelLM):
        from seer.models.mmada import MMaDAProcessor

        return MMaDAProcessor.from_folder(folder, tokenizer, model.config)
    return None


def plain_ids(tokenizer, text: str) -> list[int]:
    """Ids of `text` without special tokens (prompts without a chat template, stop words)."""
    return [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]


def chat_ids(tokenizer, prompt: str) -> list[int]:
    """Ids of a one-turn user chat plus the assistant header, as a flat list of ints.

    `apply_chat_template(..., tokenize=True)` returns a list in transformers 4.x and a
    `BatchEncoding` in 5.x (sometimes batched, [1, n]); this always returns `list[int]`.
    """
    messages = [{"role": "user", "content": prompt}]
    out = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(out, Mapping) or hasattr(out, "input_ids"):
        out = out["input_ids"]
    if hasattr(out, "tolist"):
        out = out.tolist()
    ids = list(out)
    if ids and isinstance(ids[0], Sequence):  # batched shape [1, n]
        (ids,) = ids
    return [int(i) for i in ids]


def token_ids(raw: dict, tokenizer) -> TokenIds:
    """Special ids from config.json, completed by the tokenizer's own special tokens."""
    vocab = tokenizer.get_vocab() if tokenizer is not None else {}
    mask = raw.get("mask_token_id")
    if mask is None:
        mask = next((vocab[n] for n in MASK_NAMES if n in vocab), None)
    eos = raw.get("eos_token_id")
    if eos is None and tokenizer is not None:
        eos = tokenizer.eos_token_id
    if isinstance(eos, list):
        eos = eos[0]
    if mask is None or eos is None:
        raise CheckpointError("config.json/tokenizer define no mask_token_id or eos_token_id")
    pad = raw.get("pad_token_id")
    if pad is None or pad == mask:
        pad = eos
    eot = next((vocab[n] for n in END_OF_TURN if n in vocab), None)
    bos = raw.get("bos_token_id", getattr(tokenizer, "bos_token_id", None))
    return TokenIds(mask=mask, eos=eos, pad=pad, eot=eot, bos=bos, banned=_banned(raw, vocab))


def _banned(raw: dict, vocab: dict) -> tuple[int, ...]:
    """Ids the model's official sampler never proposes, from the names its class declares."""
    try:
        names = getattr(REGISTRY[architecture(raw)][1], "banned_token_names", ())
    except CheckpointError:
        return ()
    missing = [n for n in names if n not in vocab]
    if missing:
        raise CheckpointError(f"the tokenizer lacks the special token(s) {missing}")
    return tuple(vocab[n] for n in names)
