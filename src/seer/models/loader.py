"""Local folder -> model (+ tokenizer). The one place that knows how checkpoints are stored.

- The architecture comes from config.json's `model_type`, else its `architectures`.
- Weights: `model.safetensors` or a sharded `model.safetensors.index.json`. The model is built on
  the meta device, materialised once in the target dtype/device, and filled tensor by tensor from
  memory-mapped shards, so peak memory is about one copy of the model (not two).
- The folder is checked before the model is built: its weights files' headers (names and shapes
  only, a bounded read) against config.json's layer count (`_check_layers`), and the build stops
  as soon as the model would hold more tensors than the files (`_tensor_budget`), so a config.json
  claiming 10^9 layers beside 2-layer weights is one error at once, not an endless build.
- Keys must match exactly (strict); a mismatch lists the first few offenders.
- The tokenizer comes from transformers' `AutoTokenizer` with local files only and no remote code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import torch
from safetensors import safe_open

from seer.errors import CheckpointError, SeerError
from seer.models.base import DiffusionModel
from seer.models.defaults import (
    ModelDefaults,
    SeerSettings,
    read_generation_config,
    read_json_object,
)
from seer.sampling import BUILTIN_MODELS, builtin_folder

if TYPE_CHECKING:
    from seer.models.common import BidirectionalLM

M = TypeVar("M", bound=torch.nn.Module)


class ArchitectureConfig(Protocol):
    """An architecture's config class (`ARCHITECTURES`): built from a config.json dict."""

    @classmethod
    def from_dict(cls, raw: dict) -> Any: ...


@runtime_checkable
class _HasBuffers(Protocol):
    """A module that refills its own non-persistent buffers (`init_buffers`)."""

    def init_buffers(self) -> None: ...


# model_type / architectures name (lower case) -> (module under seer.models, config class,
# model class); a module is imported only when a checkpoint of its architecture is loaded
ARCHITECTURES = {
    "llada": ("llada", "LLaDAConfig", "LLaDAModelLM"),
    "lladamodellm": ("llada", "LLaDAConfig", "LLaDAModelLM"),
    "dream": ("dream", "DreamConfig", "DreamModel"),
    "dreammodel": ("dream", "DreamConfig", "DreamModel"),
    "mmada": ("mmada", "MMaDAConfig", "MMaDAModelLM"),
    "mmadamodellm": ("mmada", "MMaDAConfig", "MMaDAModelLM"),
    "llava_llada": ("lavida", "LLaDAConfig", "LavidaLLaDA"),
    "llavalladaformaskeddiffusion": ("lavida", "LLaDAConfig", "LavidaLLaDA"),
    "llava_dream": ("lavida", "DreamConfig", "LavidaDream"),
    "llavadreamformaskeddiffusion": ("lavida", "DreamConfig", "LavidaDream"),
    # LLaDA-V: model_type is also "llava_llada" (LaViDa's); only `architectures` tells them apart
    "llavalladamodellm": ("llada_v", "LLaDAVConfig", "LLaDAVModelLM"),
}
DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise CheckpointError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[dtype]


def available_devices() -> list[str]:
    """The devices a model can run on here: cpu, each CUDA device, mps when present."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def resolve_device(device) -> torch.device:
    """`device` as a torch device a model can run on here, or one line saying which can."""
    here = available_devices()
    use = f"use one of: {', '.join(here)}"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise CheckpointError(f"unknown device {device!r}; {use}") from None
    if dev.type == "meta":
        raise CheckpointError(f"device 'meta' holds no weights and cannot run a model; {use}")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if (
        dev.type == "cpu"
        or (dev.type == "mps" and "mps" in here)
        or (dev.type == "cuda" and n and (dev.index is None or dev.index < n))
    ):
        return dev
    why = "this torch has no CUDA device" if dev.type == "cuda" and not n else "not available here"
    raise CheckpointError(f"device {str(device)!r} cannot be used ({why}); {use}")


BUILTIN = BUILTIN_MODELS


def builtin_path(name: str = "builtin") -> Path:
    """Folder of a built-in model: "builtin" (text), "builtin-vqa" (questions about pictures),
    shipped in the package, or the first models "builtin-v1" (text) and "builtin-vqa-v1"
    (pictures and text), in the repository (`seer.sampling.builtin_folder`)."""
    try:
        return builtin_folder(name)
    except SeerError as e:
        raise CheckpointError(str(e)) from None


def model_folder(path: str | Path) -> Path:
    """The folder a model argument names: a built-in model's name, else a local path."""
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
            cfg = read_json_object(tower / "config.json")
            cfg = cfg.get("vision_config") or cfg
            if not isinstance(cfg, dict):
                raise CheckpointError(f"{tower / 'config.json'}: vision_config must be an object")
            raw["vision_config"] = dict(cfg)
        elif "so400m-patch14-384" in name:
            raw["vision_config"] = dict(SO400M)
        else:
            raise CheckpointError(
                f"cannot find the vision tower {name!r}: put its folder (config.json) there "
                "or add its config as vision_config in config.json"
            )
    for place in (tower, folder):
        if (place / "preprocessor_config.json").is_file():
            processor = read_json_object(place / "preprocessor_config.json")
            break
    raw.setdefault("image_processor", processor)
    if not isinstance(raw["vision_config"], dict):
        raise CheckpointError("config.json: vision_config must be a JSON object")
    check_pinpoints(raw)
    return raw


def check_pinpoints(raw: dict) -> None:
    """config.json's `image_grid_pinpoints`, when given, reads as anyres candidates: a list of
    [width, height] pairs, each side at least one tile of the tower, or the "(1x1),...,(NxN)"
    form (as published), else one line naming the field."""
    from seer.models.vision import pinpoints

    value = raw.get("image_grid_pinpoints")
    if value is None:
        return
    side = raw["vision_config"].get("image_size", 1)
    side = side if isinstance(side, int) and side > 0 else 1
    grids = re.findall(r"\d+", value) if isinstance(value, str) and "x" in value else []
    try:
        if any(int(n) > 64 for n in grids):  # "(1x1),...,(NxN)" is N * N candidates
            raise ValueError("too many grids")
        sizes = pinpoints(value, side)
        ok = bool(sizes) and all(min(w, h) >= side for w, h in sizes)
    except (ValueError, TypeError, IndexError, SyntaxError, MemoryError, RecursionError):
        ok = False
    if not ok:
        shown = json.dumps(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise CheckpointError(
            f"config.json: image_grid_pinpoints must be a list of [width, height] pairs of at "
            f'least {side} pixels each, or "(1x1),...,(NxN)"; got {shown}'
        )


def architecture(raw: dict) -> str:
    """The table key of a config: its architectures name first (LaViDa-LLaDA and LLaDA-V
    share the model_type "llava_llada" but not the class), then its model_type."""
    archs = raw.get("architectures") or []
    names = [*(archs if isinstance(archs, list) else [archs]), raw.get("model_type", "")]
    for name in names:
        if str(name).lower() in ARCHITECTURES:
            return str(name).lower()
    known = sorted({k for k in ARCHITECTURES if not k.endswith(("lm", "model", "diffusion"))})
    raise CheckpointError(
        f"unknown architecture (model_type={raw.get('model_type')!r}, "
        f"architectures={raw.get('architectures')!r}); Seer supports {', '.join(known)}"
    )


def get_classes(raw: dict) -> tuple[type[ArchitectureConfig], type[BidirectionalLM]]:
    """(config class, model class) of a config dict, found by its architecture name."""
    module, cfg_name, model_name = ARCHITECTURES[architecture(raw)]
    mod = importlib.import_module(f"seer.models.{module}")
    return getattr(mod, cfg_name), getattr(mod, model_name)


def _check_types(cfg, raw: dict | None = None) -> None:
    """The config's int / float / bool fields hold values of their type (a JSON 4.0, "64" or
    true where a size belongs is one error naming the field, not a crash while building the
    model). `cfg`: a config dataclass instance, or its class with `raw` (config.json's values,
    checked before the class's own validation compares them)."""
    if not dataclasses.is_dataclass(cfg):
        return
    for f in dataclasses.fields(cfg):
        if raw is not None and f.name not in raw:
            continue
        value = raw[f.name] if raw is not None else getattr(cfg, f.name)
        kind = str(f.type).replace(" ", "")
        if value is None and kind.endswith("|None"):
            continue
        kind = kind.removesuffix("|None")
        if kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind == "bool":
            ok = isinstance(value, bool)
        else:
            continue
        if not ok:
            raise CheckpointError(f"config.json: {f.name} must be {kind}, got {value!r}")


def build_model(raw: dict, folder: Path | None = None) -> BidirectionalLM:
    """An un-initialised model (on the meta device) for a config dict; `folder`: the model
    folder whose weights' headers bound it (module docstring), if it has weights."""
    cfg_cls, model_cls = get_classes(raw)
    _check_types(cfg_cls, raw)
    names = None
    if folder is not None and _has_weights(folder):
        names = list(weight_files(folder))
        _check_layers(raw, names)
    try:
        cfg = cfg_cls.from_dict(raw)
    except (ValueError, TypeError, ZeroDivisionError) as e:
        raise CheckpointError(f"config.json: {e}") from None
    _check_types(cfg)
    try:
        with torch.device("meta"), _tensor_budget(names):
            return model_cls(cfg)
    except _OverBudget as e:
        raise CheckpointError(
            f"config.json describes a model of more than {e.args[0]:,} tensors; the weights "
            f"hold {len(names or ()):,} (is config.json the one that came with these weights?)"
        ) from None
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:  # e.g. a size of 4.0
        why = (str(e).splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"config.json describes no model Seer can build ({why})") from None


LAYER_FIELDS = ("n_layers", "num_hidden_layers", "num_layers")  # config.json's layer counts
_LAYER = re.compile(r"\.(?:blocks|layers|h)\.(\d+)\.")  # a layer's index in a tensor's name


def _has_weights(folder: Path) -> bool:
    return (folder / "model.safetensors").is_file() or (
        folder / "model.safetensors.index.json"
    ).is_file()


def _check_layers(raw: dict, names: list[str]) -> None:
    """config.json's layer count (the language model's, at its top level) equals the layers
    the weights hold (the vision tower's apart), or one error naming the field."""
    found = {int(m.group(1)) for n in names if "vision" not in n and (m := _LAYER.search(n))}
    if not found:
        return
    held = max(found) + 1
    for field in LAYER_FIELDS:
        value = raw.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value != held:
            raise CheckpointError(
                f"config.json: {field} = {value:,}, but the weights hold {held} layer(s) (is "
                "config.json the one that came with these weights?)"
            )


class _OverBudget(Exception):
    """The model being built registers more tensors than its weights hold."""


@contextlib.contextmanager
def _tensor_budget(names: list[str] | None):
    """While building: stop (`_OverBudget`) once the model has registered far more parameters
    than the weights' `names` (None: no bound). A register hook, so any config field that
    multiplies modules is caught after a few, not after the whole build."""
    if names is None:
        yield
        return
    limit, count = 2 * len(names) + 64, 0  # tied weights register twice; a little slack

    def hook(module, name, param):
        nonlocal count
        count += 1
        if count > limit:
            raise _OverBudget(limit)

    handle = torch.nn.modules.module.register_module_parameter_registration_hook(hook)
    try:
        yield
    finally:
        handle.remove()


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


def _is_float(stored: str) -> bool:
    """A safetensors dtype name of floats: F64, F32, F16, BF16, F8_E4M3, ... (ints are I*/U*)."""
    return stored.startswith("F") or stored == "BF16"


def _check_shapes(model: torch.nn.Module, shards: dict[str, Path]) -> None:
    """Every tensor's shape in the files' headers equals the (meta) model's, and a tensor the
    model holds in floating point is stored as floats (an int32 copy of a weight would load as
    its integer values, and answer garbage), or one error."""
    state = model.state_dict()
    expected = {k: tuple(v.shape) for k, v in state.items()}
    bad, kinds = [], []
    for shard in sorted(set(shards.values())):
        with _open(shard) as f:
            for name in (n for n, s in shards.items() if s == shard):
                sl = f.get_slice(name)
                shape = tuple(sl.get_shape())
                if shape != expected[name]:
                    bad.append(f"{name}: {shape} vs {expected[name]}")
                if state[name].is_floating_point() and not _is_float(sl.get_dtype()):
                    kinds.append(f"{name} is stored as {sl.get_dtype()}")
    if bad:
        raise CheckpointError(
            f"{len(bad)} tensor(s) have the wrong shape, e.g. {bad[:3]} (is config.json the one "
            "that came with these weights?)"
        )
    if kinds:
        raise CheckpointError(
            f"{len(kinds)} tensor(s) that hold floating-point weights are not stored as floats "
            f"({'; '.join(kinds[:3])}); the file is damaged or was converted wrongly"
        )


def init_buffers(model: torch.nn.Module) -> None:
    """Refill non-persistent buffers after `to_empty` (modules that have any say how)."""
    for m in model.modules():
        if isinstance(m, _HasBuffers):
            m.init_buffers()


def load_weights(model: M, folder: Path, dtype, device) -> M:
    shards = weight_files(folder)
    _check_keys(model, shards)
    _check_shapes(model, shards)  # before allocating: config.json may claim any size
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


def load_model(path, dtype=None, device="cpu") -> DiffusionModel:
    folder, raw = read_config(path)
    model = build_model(raw, folder)
    return load_weights(model, folder, resolve_dtype(dtype), resolve_device(device))


def fit_to_tokenizer(model: DiffusionModel, tokenizer) -> None:
    """Loader steps of the official code that depend on the tokenizer: the LLaVA builders
    (LLaDA-V, LaViDa) call `model.resize_token_embeddings(len(tokenizer))`. A smaller tokenizer
    cuts the embedding and the LM head to its rows (the softmax then runs over those only); a
    larger one would get new rows of random values there, which Seer cannot reproduce."""
    if tokenizer is None or not model.resize_to_tokenizer:
        return
    n, rows = len(tokenizer), model.get_input_embeddings().num_embeddings
    if n < rows:
        model.keep_token_rows(n)
    elif n > rows:
        raise CheckpointError(
            f"the tokenizer has {n} tokens but the model {rows} embeddings; the official loader "
            "would add randomly initialised rows: use the checkpoint's own tokenizer"
        )


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
    if model.vision is not None:
        from seer.models.lavida import LlavaProcessor

        kw = {} if model.system_prompt is None else {"system": model.system_prompt}
        if seer is not None and seer.has_system_prompt:
            kw["system"] = seer.system_prompt
        return LlavaProcessor(model, tokenizer, **kw)
    if model.image_codes:
        from seer.models.mmada import MMaDAProcessor

        return MMaDAProcessor.from_folder(folder, tokenizer, model.config)
    return None
