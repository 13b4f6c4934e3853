"""The FastAPI application: OpenAI-compatible endpoints over one engine thread.

    GET  /health               200 {"status": "ok"} (503 while draining); never needs the key
    GET  /v1/models            the served model
    POST /v1/chat/completions  messages (text, one image as a data: URI), stream or not
    POST /v1/completions       a text or token-id prompt, stream or not
    GET  /metrics              Prometheus text format (`seer_*`); needs the key unless public

No OpenAPI schema or docs page is served. The key is checked first, before the body is read
(`security.APIKey`). The body is read within its size limit and `read_timeout` (408 past it,
and the connection closed: `_BodyLimit`), then everything that costs CPU runs in the preparer's
threads, within its time limit (`prepare`), never on the event loop, so `/health` keeps
answering whatever a client sends: the body's JSON values are counted (`MAX_JSON_ITEMS`, 413)
before it is parsed, the request models bound every list and string (`protocol`), then the body
is checked (model, sampling, Seer options, stop strings encoded) and prepared (image decoded,
prompt tokenized, within limits). The request is added to the engine through the worker thread;
`engine.add` checks the prepared prompt against the model (context length), so every user
mistake is a 4xx before anything runs.
Non-streamed requests wait for their result while watching for the client leaving; streamed ones
send each semi-autoregressive block when it is final. A client that leaves aborts its request.
While draining (SIGTERM) new requests get 503 and running ones finish; those still running
when the server stops (`seer.serve.server`) get 503 ``shutting_down``, a stream as a last chunk
carrying the error, then ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException as StarletteHTTPException

from seer.engine import QueueFull
from seer.engine.request import Deltas
from seer.errors import SeerError
from seer.serve import convert
from seer.serve.config import DEFAULTS
from seer.serve.errors import APIError, bad_request, body, too_large, validation_message
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
# the commas and brackets a body may hold, counted before it is parsed: this bounds the time
# parsing takes (the parser holds the interpreter while it runs); a token-id prompt as long as
# `protocol.MAX_PROMPT_IDS` fits
MAX_JSON_ITEMS = 1 << 17


@dataclass(slots=True)
class ServeOptions:
    """How the server behaves (from `seer serve`'s flags)."""

    model_names: tuple[str, ...]  # names a request's `model` may use; the first is listed
    api_key: str | None = None  # require "Authorization: Bearer <key>" on /v1/* and /metrics
    public_metrics: bool = False  # /metrics without the key
    seer: bool = True  # Seer on unless a request says "seer": false
    limits: Limits = field(default_factory=Limits)
    max_body_bytes: int = DEFAULTS["max_body_bytes"]  # a request body over this gets 413
    read_timeout: float = DEFAULTS["read_timeout"]  # seconds between two parts of a body: 408


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
        self.metrics.watch(
            lambda: engine_counts(engine)[0] + self.worker.pending, lambda: engine_counts(engine)[1]
        )

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

    app = FastAPI(title="Seer", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    _install_errors(app, service)
    app.add_middleware(
        _BodyLimit, limit=options.max_body_bytes, service=service, timeout=options.read_timeout
    )
    if options.api_key is not None:  # outermost: the key before the body is read

        def refused(path: str) -> None:
            if path in API_PATHS:
                service.count(path, 401)

        app.add_middleware(
            APIKey, key=options.api_key, public_metrics=options.public_metrics, refused=refused
        )

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
        return {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "seer"}],
        }

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await _serve(service, request, ChatRequest)

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await _serve(service, request, CompletionRequest)

    return app


# -- checks -------------------------------------------------------------------------------------
async def _serve(service: Service, request: Request, kind: type[SamplingFields]):
    """Read the body, then check and convert it in the preparer's threads, then answer."""
    _check_open(service)
    raw = await request.body()  # within the size limit and the read timeout (`_BodyLimit`)
    body, prompt, req = await service.preparer.run(_accept, service, kind, raw)
    envelope = Envelope("chat" if kind is ChatRequest else "text", body.model)
    return await _answer(service, request, body, prompt, req, envelope)


def _accept(service: Service, kind: type[SamplingFields], raw: bytes):
    """(body, prompt, resolved `Request`) of a raw body, or an `APIError`. In a thread."""
    body = parse(kind, raw)
    _check_open(service)
    _check_model(service, body)
    lm, options = service.lm, service.options
    if isinstance(body, ChatRequest):
        prompt = convert.chat_prompt(lm, body, options.limits)
    elif isinstance(body, CompletionRequest):
        prompt = convert.completion_prompt(lm, body)
    else:  # the endpoints pass only these two
        raise TypeError(f"no endpoint takes a {type(body).__name__}")
    # resolved once: defaults, rules, Seer; the stop strings encoded
    return body, prompt, convert.request_for(lm, body, options.seer)


def parse(kind: type[SamplingFields], raw: bytes) -> SamplingFields:
    """The request body `raw` as a `kind`, or a 400 / 413 naming what is wrong. Its JSON values
    are counted before it is parsed (`MAX_JSON_ITEMS`)."""
    if json_items(raw) > MAX_JSON_ITEMS:
        raise too_large(
            f"the request body holds over {MAX_JSON_ITEMS:,} JSON values (commas "
            "and brackets); send fewer messages, parts or token ids"
        )
    try:
        data = json.loads(raw)
    except RecursionError:
        raise bad_request("the request body is nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, or bytes that are not UTF-8
        raise bad_request(f"the request body is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise bad_request(f"the request body must be a JSON object, not {type(data).__name__}")
    try:
        return kind.model_validate(data)
    except ValidationError as e:
        text, loc = validation_message(e.errors(include_url=False))
        raise APIError(400, text, "invalid_request", loc) from None
    except RecursionError:
        raise bad_request("the request body is nested too deeply") from None


def json_items(raw: bytes, chunk: int = 1 << 20) -> int:
    """The commas and brackets of `raw`, counted a megabyte at a time (each count holds the
    interpreter; between two, the event loop's thread gets its turn)."""
    return sum(
        raw.count(c, i, i + chunk) for i in range(0, len(raw), chunk) for c in (b",", b"[", b"{")
    )


def _check_open(service: Service) -> None:
    if service.draining:
        raise APIError(
            503, "the server is shutting down; retry on another replica", "shutting_down"
        )


def _check_model(service: Service, body: SamplingFields) -> None:
    if body.model not in service.options.model_names:
        raise APIError(
            404,
            f"model {body.model!r} is not served here; this server serves "
            f"{service.options.model_names[0]!r}",
            "model_not_found",
            "model",
        )


# -- answering ----------------------------------------------------------------------------------
async def _answer(service: Service, request: Request, body, prompt, req, envelope: Envelope):
    lm = service.lm
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
        return StreamingResponse(
            gen,
            media_type="text/event-stream",
            background=cleanup,
            headers={"Cache-Control": "no-cache"},
        )
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
    """413 for bodies over the limit: by Content-Length up front, else while reading; 408 (and
    the connection closed) when a body's next part does not come within `timeout` seconds."""

    def __init__(self, app, limit: int, service: Service, timeout: float) -> None:
        self.app, self.limit, self.service, self.timeout = app, limit, service, timeout

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
        seen, whole, started = 0, False, False

        async def limited():
            nonlocal seen, whole
            if whole:  # the body is read: what comes next is the client leaving, whenever
                return await receive()
            try:
                async with asyncio.timeout(self.timeout):
                    message = await receive()
            except TimeoutError:
                raise _SlowBody from None
            whole = not message.get("more_body", False)
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise StarletteHTTPException(413, msg)  # FastAPI passes it through as is
            return message

        async def sending(message):
            nonlocal started
            started = True
            await send(message)

        try:
            return await self.app(scope, limited, sending)
        except _SlowBody:
            if scope["path"] in API_PATHS:
                self.service.count(scope["path"], 408)
            if not started:
                text = (
                    f"the request body did not arrive within {self.timeout:g} s of its "
                    "previous part; send it whole"
                )
                response = JSONResponse(
                    body(408, text, "timeout"), 408, headers={"Connection": "close"}
                )
                await response(scope, receive, send)


class _SlowBody(Exception):
    """A request body's next part did not come in time (`_BodyLimit`)."""
