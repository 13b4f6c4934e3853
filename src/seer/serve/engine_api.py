"""The engine the server drives, and how it builds a request's sampling parameters.

The server is written against the step-level engine's interface only (`add` -> id, `step` ->
finished results, `abort`, `has_unfinished`, `QueueFull`, a request's `on_block`), so any engine
with that interface can sit behind it. Streamed text is cut into deltas by `Deltas`, the class
`DiffusionLM.stream` uses, so a streamed answer splits the same way in both. Sampling goes
through `lm.sampling(**options)`, so the server's defaults are `seer generate`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seer.config import SamplingParams
from seer.engine import Engine, EngineConfig, QueueFull, Request
from seer.engine.request import Deltas

if TYPE_CHECKING:
    from seer.pipeline import DiffusionLM


def make_engine(
    lm: DiffusionLM, max_batch: int, max_queue: int | None, max_tokens_per_step: int | None
):
    cfg = EngineConfig(
        max_batch=max_batch, max_queue=max_queue, max_tokens_per_step=max_tokens_per_step
    )
    return Engine(lm, cfg)


def sampling(lm: DiffusionLM, **options) -> SamplingParams:
    """The model's defaults with `options` over them (None: the default), as `seer generate`."""
    return lm.sampling(**options)


__all__ = ["Deltas", "QueueFull", "Request", "make_engine", "sampling"]
