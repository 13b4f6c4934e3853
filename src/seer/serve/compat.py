"""A stop-gap step-level interface over `Engine.generate`, for engines without add/step/abort.

It exposes the step-level engine's contract (`add(Request) -> id`, `step() -> finished results`,
`abort(id)`, `has_unfinished()`, `QueueFull`) so the server is written once, against that
contract. Each `step()` answers up to `max_batch` waiting requests with one `Engine.generate`
call (requests are not admitted mid-generation, and each request's one block partial is sent when
it finishes). `seer.serve.engine_api` picks the real engine when it has `step`.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from seer.config import SamplingParams
from seer.engine import Engine, EngineConfig
from seer.engine import Request as _EngineRequest
from seer.errors import SeerError


class QueueFull(SeerError):
    """`max_queue` requests are already waiting."""


@dataclass(slots=True)
class Request:
    """The step-level engine's request (see TEAM contract)."""

    prompt: str | list[int]
    params: SamplingParams | None = None
    seer: object = None
    image: object = None
    chat: bool = True
    on_block: object = None  # callable(PartialResult), called in the engine's thread


@dataclass(slots=True)
class PartialResult:
    request_id: int
    text: str  # answer text so far
    token_ids: list[int]  # answer ids so far
    block: int  # index of the block that became final
    final: bool  # the last block


@dataclass(slots=True)
class RequestResult:
    request_id: int
    text: str
    token_ids: list[int]
    tokens: int
    prompt_tokens: int
    window: int
    detected: int | None
    nfe: int
    latency: float
    first_block_latency: float
    finish_reason: str
    path: str = "eager"
    grown: int = 0
    boundary: object = None
    gen_length: int = 0


@dataclass(slots=True)
class _Waiting:
    rid: int
    req: Request
    inner: _EngineRequest
    prompt_tokens: int
    t0: float = field(default_factory=time.perf_counter)


class GenerateAdapter:
    """See the module docstring."""

    def __init__(self, lm, config: EngineConfig | None = None, max_queue: int | None = None):
        self.lm = lm
        self.engine = Engine(lm, config)
        self.max_batch = self.engine.config.max_batch
        self.max_queue = max_queue
        self._ids = itertools.count()
        self._waiting: list[_Waiting] = []
        self.running = 0

    def add(self, req: Request) -> int:
        if self.max_queue is not None and len(self._waiting) >= self.max_queue:
            raise QueueFull(f"{self.max_queue} requests are waiting; retry later")
        params = req.params if req.params is not None else SamplingParams()
        inner = _EngineRequest(req.prompt, params, req.seer, None, req.chat, req.image)
        row = self.engine._admit(0, inner)  # validates (prompt, image, context) now
        rid = next(self._ids)
        self._waiting.append(_Waiting(rid, req, inner, len(row.ids)))
        return rid

    def abort(self, rid: int) -> bool:
        n = len(self._waiting)
        self._waiting = [w for w in self._waiting if w.rid != rid]
        return len(self._waiting) < n

    def has_unfinished(self) -> bool:
        return bool(self._waiting)

    def waiting(self) -> int:
        return len(self._waiting)

    def step(self) -> list[RequestResult]:
        batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch :]
        self.running = len(batch)
        try:
            results = self.engine.generate([w.inner for w in batch])
        finally:
            self.running = 0
        out = []
        for w, r in zip(batch, results, strict=True):
            latency = time.perf_counter() - w.t0
            b = r.boundary
            gen_length = w.inner.params.gen_length
            res = RequestResult(
                request_id=w.rid,
                text=r.text,
                token_ids=r.token_ids,
                tokens=r.tokens,
                prompt_tokens=w.prompt_tokens,
                window=r.window,
                detected=None if b is None else b.length,
                nfe=r.nfe,
                latency=latency,
                first_block_latency=latency,
                finish_reason="stop" if r.tokens < gen_length else "length",
                path=r.path,
                grown=r.grown,
                boundary=b,
                gen_length=gen_length,
            )
            if w.req.on_block is not None:
                n = r.tokens
                w.req.on_block(PartialResult(w.rid, r.text, r.token_ids[:n], 0, True))
            out.append(res)
        return out
