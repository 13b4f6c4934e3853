"""A model's defaults, read once by the loader: `ModelDefaults` (sampling) and `SeerSettings`
(the typed `seer.json`).

Sampling defaults come, lowest first, from

1. the model family's official call (`official_defaults` of the model class, see
   `seer.models.protocol`): the values the official sampler runs with when it is called as the
   official README (or the script it points to) shows, inherited values included (Dream's
   `top_k=50` from transformers 4.x's legacy `PretrainedConfig` attributes);
2. `generation_config.json` in the model folder: the keys in `GENERATION_KEYS` (Hugging Face's
   `max_new_tokens`, `temperature`, `top_p`, `top_k` and the diffusion samplers' `steps`,
   `block_length`, `alg`, `alg_temp`, `eps`, ...); other keys (token ids, `use_cache`, ...) are
   not sampling options and are ignored;
3. the caller's options, where None means "use the default", laid over them by the input
   processor (`seer.engine.request.defaults`, what `lm.sampling(**options)` calls).

`steps` and `block_length` belong to the default window: when a file or a caller sets another
`gen_length` without them, they default to that window (one block, one token per step), so a
new window never inherits a step count or block that does not divide it.

`seer.json` holds Seer's own per-model settings; every key is typed and checked here, and a bad
value is one `CheckpointError` line naming the file and the field. Paths in it (`vq_model`) must
stay inside the model folder.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType

from seer.errors import CheckpointError
from seer.sampling import SamplingOptions, SamplingParams
from seer.spec import kind, type_ok

# what the caller's options may name (`seer.engine.request.defaults`, `lm.sampling()`): every
# option under its flat name, and `policies`
OPTIONS = (*(f.name for f in fields(SamplingOptions)), "policies")
WINDOW_BOUND = ("steps", "block_length")  # defaults that belong to the default window
# generation_config.json key -> SamplingParams field (HF names and the official samplers' names)
GENERATION_KEYS = {
    "max_new_tokens": "gen_length",
    "gen_length": "gen_length",
    "steps": "steps",
    "block_length": "block_length",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "alg": "remasking",
    "remasking": "remasking",
    "alg_temp": "alg_temp",
    "eps": "eps",
    "cfg_scale": "cfg_scale",
    "schedule": "schedule",
    "cache": "cache",
    "logits_eos_inf": "logits_eos_inf",
    "confidence_eos_eot_inf": "confidence_eos_eot_inf",
    "threshold": "threshold",
    "factor": "factor",
}
_KINDS = {f.name: kind(f) for f in fields(SamplingOptions)}  # option -> int | float | bool | str


def read_json_object(path: Path) -> dict:
    """A JSON file that must hold an object; any problem is one `CheckpointError` line."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON ({e}); fix or delete it") from None
    except OSError as e:
        raise CheckpointError(f"cannot read {path} ({e.strerror or e})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path} must hold a JSON object, not {type(raw).__name__}")
    return raw


def _typed(where: str, name: str, value):
    """`value` of generation_config.json's key `name` checked against the SamplingParams field
    it sets (None passes)."""
    if value is None:
        return None
    k = _KINDS[GENERATION_KEYS[name]]
    bad = k is not None and not type_ok(k, value)
    if k is float and not bad:
        bad = not math.isfinite(value)
        value = float(value)
    if bad:
        raise CheckpointError(f"{where}: {name} has the wrong type ({value!r})")
    return value


def read_generation_config(folder: Path) -> dict:
    """The sampling options of `folder/generation_config.json` (empty when there is none)."""
    path = folder / "generation_config.json"
    if not path.is_file():
        return {}
    raw = read_json_object(path)
    out = {}
    for key, name in GENERATION_KEYS.items():
        if key in raw:
            out[name] = _typed(f"{path}", key, raw[key])
    return out


@dataclass(frozen=True, slots=True)
class SeerSettings:
    """`seer.json`: Seer's settings for one model (all optional)."""

    gen_length: int | None = None  # the window the Seer settings were calibrated on
    config: Mapping = field(default_factory=dict)  # SeerConfig fields (`seer=True` uses them)
    sparsity_config: Mapping = field(default_factory=dict)  # the sparsity detector's fields
    calibration: Mapping = field(default_factory=dict)  # how `seer calibrate` chose them
    system_prompt: str | None = None  # multimodal prompt's system prompt (see has_system_prompt)
    has_system_prompt: bool = False  # True when seer.json sets system_prompt (null = none)
    vq_model: Path | None = None  # MMaDA's image tokenizer folder, inside the model folder
    image_resolution: int | None = None  # MMaDA's preprocessing size
    chat_only: bool = False  # the model learned to answer inside its chat template only: a
    # prompt without it (chat=False, /v1/completions) comes back empty or wrong
    raw: Mapping = field(default_factory=dict)  # the file as read (for tools that rewrite it)

    @classmethod
    def read(cls, folder: Path) -> SeerSettings:
        path = folder / "seer.json"
        if not path.is_file():
            return cls()
        return cls.from_dict(read_json_object(path), folder, str(path))

    @classmethod
    def from_dict(cls, raw: dict, folder: Path, where: str = "seer.json") -> SeerSettings:
        known = {f.name for f in fields(cls)} - {"has_system_prompt", "raw"}
        unknown = sorted(k for k in raw if k not in known and not k.startswith("_"))
        if unknown:
            raise CheckpointError(
                f"{where}: unknown field {unknown[0]!r}; seer.json takes {', '.join(sorted(known))}"
                " (prefix a key with _ to keep a note)"
            )
        kw: dict = {"raw": MappingProxyType(dict(raw))}
        for name in ("gen_length", "image_resolution"):
            value = raw.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise CheckpointError(f"{where}: {name} must be an integer, got {value!r}")
            if value is not None and value < 1:
                raise CheckpointError(f"{where}: {name} must be >= 1, got {value}")
            kw[name] = value
        for name in ("config", "sparsity_config", "calibration"):
            value = raw.get(name, {})
            if not isinstance(value, dict):
                raise CheckpointError(f"{where}: {name} must be a JSON object, got {value!r}")
            kw[name] = MappingProxyType(dict(value))
        if "system_prompt" in raw:
            value = raw["system_prompt"]
            if value is not None and not isinstance(value, str):
                raise CheckpointError(f"{where}: system_prompt must be a string or null")
            kw.update(system_prompt=value, has_system_prompt=True)
        if "chat_only" in raw:
            if not isinstance(raw["chat_only"], bool):
                raise CheckpointError(f"{where}: chat_only must be true or false")
            kw["chat_only"] = raw["chat_only"]
        if raw.get("vq_model") is not None:
            kw["vq_model"] = confined(folder, raw["vq_model"], f"{where}: vq_model")
        return cls(**kw)


def confined(folder: Path, rel, what: str) -> Path:
    """`folder / rel`, refused unless it is a relative path that stays inside `folder`."""
    if not isinstance(rel, str) or not rel:
        raise CheckpointError(f"{what} must be a relative path (a string), got {rel!r}")
    if Path(rel).is_absolute():
        raise CheckpointError(f"{what} {rel!r} must be relative to the model folder")
    base = folder.resolve()
    path = (base / rel).resolve()
    if path != base and base not in path.parents:
        raise CheckpointError(f"{what} {rel!r} leaves the model folder; keep it inside {folder}")
    return path


@dataclass(frozen=True, slots=True)
class ModelDefaults:
    """What a model runs with when the caller gives no option: `values` are SamplingParams
    fields, `sources` says where each came from (for `seer` to show and tests to check)."""

    values: Mapping
    sources: Mapping
    seer: SeerSettings = field(default_factory=SeerSettings)

    @classmethod
    def build(cls, official: dict, generation: dict | None = None, seer=None) -> ModelDefaults:
        values, sources = layer({}, {}, official, "official")
        values, sources = layer(values, sources, generation or {}, "generation_config.json")
        params = SamplingParams(**values)  # validated once, here
        del params
        return cls(MappingProxyType(values), MappingProxyType(sources), seer or SeerSettings())

    @property
    def gen_length(self) -> int:
        return SamplingParams(**self.values).gen_length


def layer(values: dict, sources: dict, over: Mapping, source: str) -> tuple[dict, dict]:
    """`over` on top of `values`; a new window drops the window-bound defaults below it."""
    values, sources = dict(values), dict(sources)
    if "gen_length" in over and over["gen_length"] != values.get("gen_length"):
        for name in WINDOW_BOUND:
            if name not in over:
                values.pop(name, None)
                sources.pop(name, None)
    for name, value in over.items():
        values[name] = value
        sources[name] = source
    return values, sources


def as_options(p: SamplingParams) -> dict:
    """The fields of `p` that differ from SamplingParams' own defaults, and its window."""
    base = SamplingParams().flat()
    return {k: v for k, v in p.flat().items() if k == "gen_length" or v != base[k]}
