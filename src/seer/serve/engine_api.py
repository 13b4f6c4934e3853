"""The engine the server drives, and how it builds a request's sampling parameters.

The step-level engine (`seer.engine.Engine` with add / step / abort) is used when present; an
engine that only has `generate` is wrapped by `seer.serve.compat.GenerateAdapter`, which has the
same interface. Sampling goes through `lm.sampling(**options)`, so the server's defaults are
`seer generate`'s.
"""

from __future__ import annotations

from seer.config import SamplingParams
from seer.engine import Engine, EngineConfig

STEP_LEVEL = hasattr(Engine, "step") and hasattr(Engine, "add")

if STEP_LEVEL:
    from seer.engine import QueueFull, Request
else:
    from seer.serve.compat import QueueFull, Request


def make_engine(lm, max_batch: int, max_queue: int | None, max_tokens_per_step: int | None):
    if STEP_LEVEL:
        cfg = EngineConfig(
            max_batch=max_batch, max_queue=max_queue, max_tokens_per_step=max_tokens_per_step
        )
        return Engine(lm, cfg)
    from seer.serve.compat import GenerateAdapter

    return GenerateAdapter(lm, EngineConfig(max_batch=max_batch), max_queue)


def sampling(lm, **options) -> SamplingParams:
    """The model's defaults with `options` over them (None: the default), as `seer generate`."""
    return lm.sampling(**options)


__all__ = ["STEP_LEVEL", "QueueFull", "Request", "make_engine", "sampling"]
