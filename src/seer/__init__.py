"""Seer: fast inference for masked-diffusion language models (LLaDA, Dream).

Public API:
    seer.load(path, dtype=..., device=...) -> DiffusionLM with .model, .tokenizer, .generate(),
                                           .stream() (StreamChunks as blocks become final)
    seer.SamplingParams                    per-request sampling options
    seer.SeerConfig                        boundary detection / truncation options
    seer.Engine, EngineConfig, Request     batched serving with padding-waste routing

The names are imported on first use (PEP 562), so `import seer.cli` and `seer --help` do not
pay for torch and transformers; `from seer import load` works as before.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS = {
    "CheckpointError": "seer.errors",
    "DiffusionLM": "seer.pipeline",
    "Engine": "seer.engine",
    "EngineConfig": "seer.engine",
    "Generation": "seer.pipeline",
    "GenerationStats": "seer.pipeline",
    "Request": "seer.engine",
    "SamplingParams": "seer.config",
    "SeerConfig": "seer.boundary.config",
    "SeerError": "seer.errors",
    "StreamChunk": "seer.pipeline",
    "TokenIds": "seer.config",
    "load": "seer.pipeline",
}
__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seer' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # static checkers and IDEs see the names directly
    # ruff: noqa: F401
    from seer.boundary.config import SeerConfig
    from seer.config import SamplingParams, TokenIds
    from seer.engine import Engine, EngineConfig, Request
    from seer.errors import CheckpointError, SeerError
    from seer.pipeline import DiffusionLM, Generation, GenerationStats, StreamChunk, load
