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
    "DiffusionLM": "seer.lm",
    "Engine": "seer.engine",
    "EngineConfig": "seer.engine",
    "Generation": "seer.lm",
    "GenerationStats": "seer.lm",
    "Request": "seer.engine",
    "SamplingParams": "seer.sampling",
    "SeerConfig": "seer.boundary.config",
    "SeerError": "seer.errors",
    "StreamChunk": "seer.lm",
    "TokenIds": "seer.sampling",
    "load": "seer.lm",
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


if TYPE_CHECKING:  # static checkers and IDEs see the names directly (`as`: re-exported)
    from seer.boundary.config import SeerConfig as SeerConfig
    from seer.engine import Engine as Engine
    from seer.engine import EngineConfig as EngineConfig
    from seer.engine import Request as Request
    from seer.errors import CheckpointError as CheckpointError
    from seer.errors import SeerError as SeerError
    from seer.lm import DiffusionLM as DiffusionLM
    from seer.lm import Generation as Generation
    from seer.lm import GenerationStats as GenerationStats
    from seer.lm import StreamChunk as StreamChunk
    from seer.lm import load as load
    from seer.sampling import SamplingParams as SamplingParams
    from seer.sampling import TokenIds as TokenIds
