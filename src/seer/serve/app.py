"""The FastAPI application: OpenAI-compatible endpoints over one engine thread.

    GET  /health               200 {"status": "ok"} (503 while draining); never needs the key
    GET  /v1/models            the served model
    POST /v1/chat/completions  messages (text, one image as a data: URI), stream or not
    POST /v1/completions       a text or token-id prompt, stream or not
    GET  /metrics              Prometheus text format (`seer_*`); needs the key unless public

The key is checked first, before the body is read (`security.APIKey`). A request is then checked
(model, body, sampling, Seer options) on the event loop, prepared (image decoded, prompt
tokenized, within limits) in the preparer's threads (`prepare`), and added to the engine through
the worker thread; `engine.add` checks the prepared prompt against the model (context length),
so every user mistake is a 4xx before anything runs.
Non-streamed requests wait for their result while watching for the client leaving; streamed ones
send each semi-autoregressive block when it is final. A client that leaves aborts its request.
While draining (SIGTERM) new requests get 503 and running ones finish; those still running
when the server stops (`seer.serve.server`) get 503 ``shutting_down``, a stream as a last chunk
carrying the error, then ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException as StarletteHTTPException

from seer.engine import QueueFull
from seer.engine.request import Deltas
from seer.errors import SeerError
from seer.serve import convert
from seer.serve.config import DEFAULTS
from seer.serve.errors import APIError, body, validation_message
from seer.serve.metrics import Metrics
from seer.serve.prepare import Limits, Preparer
from seer.serve.protocol import ChatRequest, CompletionRequest, SamplingFields
from seer.serve.responses import Envelope, sse
from seer.serve.security import APIKey
from seer.serve.worker import Added, Block, Done, EngineWorker, Failed, ShuttingDown, Ticket

if TYPE_CHECKING:
    from seer.lm import DiffusionLM

API_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/models")
RETRY_AFTER = 1  # seconds a 429 (queue full) asks the client to wait before retrying


@dataclass(slots=True)
class ServeOptions:
    """How the server behaves (from `seer serve`'s flags)."""

    model_names: tuple[str, ...]  # names a request's `model` may use; the first is listed
    api_key: str | None = None  # require "Authorization: Bearer <key>" on /v1/* and /metrics
    public_metrics: bool = False  # /metrics without the key
    seer: bool = True  # Seer on unless a request says "seer": false
    limits: Limits = field(default_factory=Limits)
    max_body_bytes: int = DEFAULTS["max_body_bytes"]  # a request body over this gets 413


class Service:
    """What the endpoints share: the model, the engine thread, metrics and the drain state."""

    def __init__(self, lm: DiffusionLM, engine, options: ServeOptions) -> None:
        self.lm = lm
        self.options = options
        self.metrics = Metrics()
        self.worker = EngineWorker(engine)
        self.preparer = Preparer(lm, options.limits)  # tokenizing, image decoding: off the engine
        self.live: set[Ticket] = set()  # requests in the engine, not yet answered
        self.draining = False
        # async bytes -> bytes over this server's /metrics text: None, or (Ray Serve replicas,
        # seer.distributed.ray_serve) the sum over every replica
        self.gather = None
        # read from the engine's thread's objects at scrape time: plain ints, a stale value at worst
        self.metrics.watch(lambda: engine_counts(engine)[0] + self.worker.pending,
                           lambda: engine_counts(engine)[1])  # fmt: skip

    def count(self, endpoint: str, status: int | str) -> None:
        self.metrics.requests.labels(endpoint, str(status)).inc()


def engine_counts(engine) -> tuple[int, int]:
    """(waiting, running) requests of the engine: its `waiting` / `running` pools (lists, or
    callables giving counts)."""

    def count(name: str) -> int:
        value = getattr(engine, name, 0)
        value = value() if callable(value) else value
        return len(value) if hasattr(value, "__len__") else int(value or 0)

    return count("waiting"), count("running")


def create_app(lm: DiffusionLM, engine, options: ServeOptions) -> FastAPI:
    service = Service(lm, engine, options)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        service.worker.start()
        try:
            yield
        finally:
            service.worker.stop()
            service.preparer.close()

    app = FastAPI(title="Seer", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = service
    _install_errors(app, service)
    app.add_middleware(_BodyLimit, limit=options.max_body_bytes, service=service)
    if options.api_key is not None:  # outermost: the key before the body is read

        def refused(path: str) -> None:
            if path in API_PATHS:
                service.count(path, 401)

        app.add_middleware(APIKey, key=options.api_key, public_metrics=options.public_metrics,
                           refused=refused)  # fmt: skip

    @app.get("/health")
    async def health():
        if service.draining:
            raise APIError(503, "the server is shutting down", "shutting_down")
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics():
        data = service.metrics.exposition()
        if service.gather is not None:
            data = await service.gather(data)
        return Response(data, media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/v1/models")
    async def models(request: Request):
        service.count("/v1/models", 200)
        name = options.model_names[0]
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0,
                                            "owned_by": "seer"}]}  # fmt: skip

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest, request: Request):
        _check(request, service, body)
        prompt = convert.chat_prompt(lm, body, options.limits)
        return await _answer(service, request, body, prompt, Envelope("chat", body.model))

    @app.post("/v1/completions")
    async def completions(body: CompletionRequest, request: Request):
        _check(request, service, body)
        prompt = convert.completion_prompt(lm, body)
        return await _answer(service, request, body, prompt, Envelope("text", body.model))

    return app


# -- checks -------------------------------------------------------------------------------------
def _check(request: Request, service: Service, body: SamplingFields) -> None:
    if service.draining:
        raise APIError(503, "the server is shutting down; retry on another replica",
                       "shutting_down")  # fmt: skip
    if body.model not in service.options.model_names:
        raise APIError(
            404,
            f"model {body.model!r} is not served here; this server serves "
            f"{service.options.model_names[0]!r}",
            "model_not_found",
            "model",
        )


# -- answering ----------------------------------------------------------------------------------
async def _answer(service: Service, request: Request, body, prompt, envelope: Envelope):
    lm, options = service.lm, service.options
    req = convert.request_for(lm, body, options.seer)  # resolved once: defaults, rules, Seer
    params = req.params
    ready = await service.preparer.prepare(prompt, params)  # a PromptInput, image included
    ticket = Ticket(asyncio.get_running_loop())
    req = replace(req, prompt=ready, chat=prompt.chat, on_block=ticket.on_block)
    service.worker.submit(req, ticket)
    service.live.add(ticket)
    try:
        first = await ticket.events.get()
    except asyncio.CancelledError:
        service.worker.abort(ticket)
        service.live.discard(ticket)
        raise
    if isinstance(first, Failed):
        service.live.discard(ticket)
        raise _engine_error(first.error)
    assert isinstance(first, Added)
    endpoint = request.url.path
    if body.stream:
        usage = bool((body.stream_options or {}).get("include_usage"))
        state = _StreamState()
        gen = _stream(service, ticket, envelope, params.gen_length, usage, endpoint, state)
        # the cleanup also runs when the client left before the stream's first chunk
        cleanup = BackgroundTask(_stream_cleanup, service, ticket, endpoint, state)
        return StreamingResponse(gen, media_type="text/event-stream", background=cleanup,
                                 headers={"Cache-Control": "no-cache"})  # fmt: skip
    try:
        result = await _result(service, request, ticket)
    finally:
        service.live.discard(ticket)
    if result is None:  # the client left; nobody reads this
        service.count(endpoint, "disconnected")
        return Response(status_code=499)
    service.metrics.answered(result, params.gen_length)
    service.count(endpoint, 200)
    return envelope.response(_final_text(lm, result), result, params.gen_length)


async def _result(service: Service, request: Request, ticket: Ticket):
    """The request's result, or None when the client disconnected first (then it is aborted)."""
    leave = asyncio.ensure_future(_disconnected(request))
    try:
        while True:
            get = asyncio.ensure_future(ticket.events.get())
            done, _ = await asyncio.wait({get, leave}, return_when=asyncio.FIRST_COMPLETED)
            if get not in done:
                get.cancel()
                service.worker.abort(ticket)
                return None
            event = get.result()
            if isinstance(event, Done):
                return event.result
            if isinstance(event, Failed):
                raise _engine_error(event.error)
    except asyncio.CancelledError:
        service.worker.abort(ticket)
        raise
    finally:
        leave.cancel()


async def _disconnected(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


class _StreamState:
    """Whether a streamed request has been counted in the metrics (exactly once)."""

    __slots__ = ("counted",)

    def __init__(self) -> None:
        self.counted = False


async def _stream(service, ticket, envelope, gen_length, include_usage, endpoint, state):
    lm, deltas = service.lm, Deltas()
    try:
        yield envelope.chunk("" if envelope.kind == "chat" else None, first=True)
        while True:
            event = await ticket.events.get()
            if isinstance(event, Block):
                delta = deltas.push(_partial_text(lm, event.partial))
                if delta:
                    yield envelope.chunk(delta)
            elif isinstance(event, Done):
                result = event.result
                rest = deltas.finish(_final_text(lm, result))
                if rest:
                    yield envelope.chunk(rest)
                yield envelope.chunk(None, result, gen_length)
                if include_usage:
                    yield envelope.usage_chunk(result)
                yield sse("[DONE]")
                service.metrics.answered(result, gen_length)
                state.counted = True
                service.count(endpoint, 200)
                return
            elif isinstance(event, Failed):
                err = _engine_error(event.error)
                state.counted = True
                service.count(endpoint, err.status)
                yield sse(body(err.status, err.message, err.code))
                yield sse("[DONE]")
                return
    finally:
        _stream_cleanup(service, ticket, endpoint, state)


def _stream_cleanup(service, ticket, endpoint, state) -> None:
    """Once the stream ended, was cancelled, or never started: abort if the client left."""
    service.live.discard(ticket)
    if not state.counted:
        state.counted = True
        service.worker.abort(ticket)
        service.count(endpoint, "disconnected")


def _final_text(lm: DiffusionLM, result) -> str:
    return result.text


def _partial_text(lm: DiffusionLM, partial) -> str:
    ids = list(partial.token_ids)
    return lm.decode(ids[: lm.tokens.answer_length(ids)])


def _engine_error(error: Exception) -> APIError:
    if isinstance(error, ShuttingDown):
        return APIError(503, f"{error}; retry on another replica", "shutting_down")
    if isinstance(error, QueueFull):  # Retry-After: the openai client waits that long, then retries
        return APIError(429, f"{error}", "queue_full", headers={"Retry-After": str(RETRY_AFTER)})
    if isinstance(error, SeerError):
        msg = str(error)
        return APIError(413 if "too large" in msg else 400, msg, "invalid_request")
    return APIError(500, f"internal error: {type(error).__name__}", "internal_error")


# -- errors and limits --------------------------------------------------------------------------
def _install_errors(app: FastAPI, service: Service) -> None:
    def counted(request: Request, status: int) -> None:
        if request.url.path in API_PATHS:
            service.count(request.url.path, status)

    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError):
        counted(request, exc.status)
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        counted(request, 400)
        text, loc = validation_message(exc.errors())
        return JSONResponse(body(400, text, "invalid_request", loc), 400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        counted(request, exc.status_code)
        code = "too_large" if exc.status_code == 413 else None
        return JSONResponse(body(exc.status_code, str(exc.detail), code), exc.status_code)


class _BodyLimit:
    """413 for bodies over the limit: by Content-Length up front, else while reading."""

    def __init__(self, app, limit: int, service: Service) -> None:
        self.app, self.limit, self.service = app, limit, service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        msg = f"the request body is over the server's limit of {self.limit:,} bytes"
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            if scope["path"] in API_PATHS:
                self.service.count(scope["path"], 413)
            response = JSONResponse(body(413, msg, "too_large"), 413)
            return await response(scope, receive, send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise StarletteHTTPException(413, msg)  # FastAPI passes it through as is
            return message

        return await self.app(scope, limited, send)
