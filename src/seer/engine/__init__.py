"""Step-level serving: resolved requests in (`resolve`, then `Engine.add`; `Engine.submit` does
both), one denoising step per tick (`Engine.step`), results out as soon as each is done.

The names are imported on first use (PEP 562), so `seer.engine.config` (the option specs the
CLI reads) loads without torch."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "BatchPlan": "seer.engine.scheduler",
    "Engine": "seer.engine.engine",
    "EngineConfig": "seer.engine.config",
    "EngineStats": "seer.engine.engine",
    "PartialResult": "seer.engine.request",
    "QueueFull": "seer.engine.engine",
    "Request": "seer.engine.request",
    "RequestResult": "seer.engine.request",
    "Scheduler": "seer.engine.scheduler",
    "StepView": "seer.engine.request",
    "resolve": "seer.engine.request",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seer.engine' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # static checkers and IDEs see the names directly
    # ruff: noqa: F401
    from seer.engine.config import EngineConfig as EngineConfig
    from seer.engine.engine import Engine as Engine
    from seer.engine.engine import EngineStats as EngineStats
    from seer.engine.engine import QueueFull as QueueFull
    from seer.engine.request import PartialResult as PartialResult
    from seer.engine.request import Request as Request
    from seer.engine.request import RequestResult as RequestResult
    from seer.engine.request import StepView as StepView
    from seer.engine.request import resolve as resolve
    from seer.engine.scheduler import BatchPlan as BatchPlan
    from seer.engine.scheduler import Scheduler as Scheduler
