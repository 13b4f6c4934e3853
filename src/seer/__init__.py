"""Seer: fast inference for masked-diffusion language models (LLaDA, Dream).

Public API:
    seer.load(path, dtype=..., device=...) -> DiffusionLM with .model, .tokenizer, .generate()
    seer.SamplingParams                    per-request sampling options
    seer.SeerConfig                        boundary detection / truncation options
    seer.Engine, EngineConfig, Request     batched serving with padding-waste routing
"""

from seer.boundary.truncation import SeerConfig
from seer.config import SamplingParams, TokenIds
from seer.engine import Engine, EngineConfig, Request
from seer.errors import CheckpointError, SeerError
from seer.pipeline import DiffusionLM, Generation, GenerationStats, load

__all__ = [
    "CheckpointError",
    "DiffusionLM",
    "Engine",
    "EngineConfig",
    "Generation",
    "GenerationStats",
    "Request",
    "SamplingParams",
    "SeerConfig",
    "SeerError",
    "TokenIds",
    "load",
]
__version__ = "0.1.0"
