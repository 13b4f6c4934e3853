"""`seer serve`: an OpenAI-compatible HTTP server over the step-level engine (FastAPI + uvicorn).

    protocol.py   the request bodies (pydantic)          responses.py  response / chunk bodies
    convert.py    body -> engine Request (prompt, image; sampling and Seer resolved by the input
                  processor, `seer.engine.request`)
    worker.py     the engine's thread: adds/aborts in, results and block partials out
    prepare.py    off the engine's thread: image decoding, tokenizing (`seer.engine.prompts`),
                  their limits
    security.py   the API key (before the body is read), the local image folder
    app.py        the endpoints, errors (OpenAI-style bodies), body limit, disconnects
    metrics.py    Prometheus metrics (`seer_*`)
    server.py     the listening socket (bound first), uvicorn with a draining SIGTERM
    config.py     `ServerConfig`: the server's options and their one default each

Every default below is read from the option specs (`ServerConfig`, `EngineConfig`).

Needs the `serve` extra: `pip install -e ".[serve]"`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seer.engine.config import EngineConfig
from seer.serve.config import DEFAULTS as _S

if TYPE_CHECKING:
    from seer.lm import DiffusionLM

_E = EngineConfig()


def build(
    lm: DiffusionLM,
    *,
    model_names=None,
    api_key=None,
    public_metrics=False,
    seer=True,
    max_batch=_E.max_batch,
    max_queue=_E.max_queue,
    max_tokens_per_step=_E.max_tokens_per_step,
    grouping=_E.grouping,
    merge_on=_E.merge_on,
    image_root=None,
    max_image_bytes=_S["max_image_bytes"],
    max_body_bytes=_S["max_body_bytes"],
    max_image_pixels=_S["max_image_pixels"],
    pixel_budget=_S["pixel_budget"],
    prepare_timeout=_S["prepare_timeout"],
    chars_per_token=_S["chars_per_token"],
    read_timeout=_S["read_timeout"],
):
    """The FastAPI app serving `lm` (its engine thread starts with the app's lifespan).
    `image_root`: the folder image_url paths may name (None: data: URIs only);
    `max_image_pixels`: one image's pixels; `pixel_budget`: image pixels decoded at once over
    all requests; `prepare_timeout`: seconds
    one request may take to be decoded and tokenized (`seer.serve.prepare`); `read_timeout`:
    seconds between two parts of a request's body (408 past it)."""
    from seer import extras

    extras.require("serve", "seer.serve")
    from seer.engine import Engine
    from seer.serve.app import ServeOptions, create_app
    from seer.serve.prepare import Limits
    from seer.serve.security import image_root as resolved_root

    cfg = EngineConfig(
        max_batch=max_batch,
        max_queue=max_queue,
        max_tokens_per_step=max_tokens_per_step,
        grouping=grouping,
        merge_on=merge_on,
    )
    engine = Engine(lm, cfg)
    names = tuple(model_names or ()) or (lm.name or "seer",)
    if lm.defaults.seer.chat_only:
        import logging

        logging.getLogger("seer.serve").warning(
            f"{names[0]} answers only inside its chat template (seer.json: chat_only): "
            "/v1/completions sends the prompt without it and gets empty answers; use "
            "/v1/chat/completions"
        )
    root = None if image_root is None else resolved_root(image_root)
    options = ServeOptions(
        model_names=names,
        api_key=api_key,
        public_metrics=public_metrics,
        seer=seer,
        limits=Limits(
            root, max_image_bytes, max_image_pixels, pixel_budget, prepare_timeout, chars_per_token
        ),
        max_body_bytes=max_body_bytes,
        read_timeout=read_timeout,
    )
    return create_app(lm, engine, options)


def model_names(
    lm: DiffusionLM, model: str | None = None, served: str | None = None
) -> tuple[str, ...]:
    """The names a request's `model` may use: `served` (the one listed) if given, then the
    model's own name and the `--model` argument."""
    names = [served] if served else []
    names += [n for n in (lm.name, model) if n and n not in names]
    return tuple(names)


def serve(
    lm: DiffusionLM,
    host: str = _S["host"],
    port: int = _S["port"],
    drain_timeout: float = _S["drain_timeout"],
    log_level: str = _S["log_level"],
    mount=None,
    sock=None,
    max_connections: int = _S["max_connections"],
    **options,
) -> None:
    """Serve `lm` until SIGTERM (drains) or SIGINT; `options` as in `build`;
    `max_connections`: connections and requests held at once (`seer.serve.server`). `mount`: called
    with the app before it serves (`seer serve --ui` mounts the page of `seer ui` there, at
    /ui/). `sock`: a socket `seer.serve.server.bind` made (else it binds host:port here; a
    `SeerError` if it cannot)."""
    from seer.serve.server import bind, run

    sock = sock or bind(host, port)
    app = build(lm, **options)
    if mount is not None:
        mount(app)
    read_timeout = options.get("read_timeout", _S["read_timeout"])
    run(app, sock, drain_timeout, log_level, read_timeout, max_connections)


__all__ = ["build", "model_names", "serve"]
