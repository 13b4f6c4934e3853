"""`seer serve`: an OpenAI-compatible HTTP server over the step-level engine (FastAPI + uvicorn).

    protocol.py   the request bodies (pydantic)          responses.py  response / chunk bodies
    convert.py    body -> engine Request (prompt, image, sampling through lm.sampling, Seer)
    worker.py     the engine's thread: adds/aborts in, results and block partials out
    app.py        the endpoints, errors (OpenAI-style bodies), auth, body limit, disconnects
    metrics.py    Prometheus metrics (`seer_*`)
    server.py     uvicorn with a draining SIGTERM

Needs the `serve` extra: `pip install -e ".[serve]"`.
"""

from __future__ import annotations


def build(lm, *, model_names=None, api_key=None, seer=True, max_batch=64, max_queue=None,
          max_tokens_per_step=None, allow_local_images=False, max_image_bytes=8 << 20,
          max_body_bytes=32 << 20):  # fmt: skip
    """The FastAPI app serving `lm` (its engine thread starts with the app's lifespan)."""
    from seer import extras

    extras.require("serve", "seer.serve")
    from seer.serve.app import ServeOptions, create_app
    from seer.serve.convert import Limits
    from seer.serve.engine_api import make_engine

    engine = make_engine(lm, max_batch, max_queue, max_tokens_per_step)
    names = tuple(model_names or ()) or (lm.name or "seer",)
    if lm.defaults.seer.chat_only:
        import logging

        logging.getLogger("seer.serve").warning(
            f"{names[0]} answers only inside its chat template (seer.json: chat_only): "
            "/v1/completions sends the prompt without it and gets empty answers; use "
            "/v1/chat/completions"
        )
    options = ServeOptions(
        model_names=names,
        api_key=api_key,
        seer=seer,
        limits=Limits(allow_local_images, max_image_bytes),
        max_body_bytes=max_body_bytes,
    )
    return create_app(lm, engine, options)


def model_names(lm, model: str | None = None, served: str | None = None) -> tuple[str, ...]:
    """The names a request's `model` may use: `served` (the one listed) if given, then the
    model's own name and the `--model` argument."""
    names = [served] if served else []
    names += [n for n in (lm.name, model) if n and n not in names]
    return tuple(names)


def serve(lm, host: str = "127.0.0.1", port: int = 8000, drain_timeout: float = 60.0,
          log_level: str = "info", ui: bool = False, **options) -> None:  # fmt: skip
    """Serve `lm` until SIGTERM (drains) or SIGINT; `options` as in `build`. `ui`: the page
    of `seer ui` too, at /ui/ (`seer.ui`)."""
    from seer.serve.server import run

    app = build(lm, **options)
    if ui:
        from seer.ui import mount

        mount(app, lm)
    run(app, host, port, drain_timeout, log_level)


__all__ = ["build", "model_names", "serve"]
