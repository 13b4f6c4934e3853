"""Batched serving: requests in, step 0 batched, rows routed by padding waste, results out."""

from seer.engine.config import EngineConfig
from seer.engine.engine import Engine
from seer.engine.request import Request, RequestResult
from seer.engine.scheduler import BatchPlan, Scheduler

__all__ = ["BatchPlan", "Engine", "EngineConfig", "Request", "RequestResult", "Scheduler"]
