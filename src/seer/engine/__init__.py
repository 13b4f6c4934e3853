"""Step-level serving: requests in (`Engine.add`), one denoising step per tick (`Engine.step`),
results out as soon as each request is done."""

from seer.engine.config import EngineConfig
from seer.engine.engine import Engine, EngineStats, QueueFull
from seer.engine.request import PartialResult, Request, RequestResult, StepView
from seer.engine.scheduler import BatchPlan, Scheduler

__all__ = [
    "BatchPlan",
    "Engine",
    "EngineConfig",
    "EngineStats",
    "PartialResult",
    "QueueFull",
    "Request",
    "RequestResult",
    "Scheduler",
    "StepView",
]
