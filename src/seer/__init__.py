"""Seer: fast inference for masked-diffusion language models (LLaDA, Dream).

Public API:
    seer.load(path, dtype=..., device=...) -> DiffusionLM with .model, .tokenizer, .generate()
    seer.SamplingParams                    per-request sampling options
"""

from seer.config import SamplingParams, TokenIds
from seer.errors import CheckpointError, SeerError
from seer.pipeline import DiffusionLM, Generation, GenerationStats, load

__all__ = [
    "CheckpointError",
    "DiffusionLM",
    "Generation",
    "GenerationStats",
    "SamplingParams",
    "SeerError",
    "TokenIds",
    "load",
]
__version__ = "0.1.0"
