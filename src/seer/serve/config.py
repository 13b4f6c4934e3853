"""`ServerConfig`: the options of the HTTP server (`seer serve`, `seer ui`, Ray Serve replicas):
where it listens, what it accepts and how long it waits. Each field declares its help, range
and CLI flag (`seer.spec`); the subcommands' flags, `seer.serve.build` / `serve`, the
preparer's `Limits` and Ray Serve read their defaults from here. Torch- and FastAPI-free.

The engine's options (`max_batch`, `max_queue`, `max_tokens_per_step`) are `EngineConfig`'s."""

from __future__ import annotations

from dataclasses import dataclass

from seer.spec import defaults, option, validate

SERVER = "server"  # the CLI group of these options
LOG_LEVELS = ("debug", "info", "warning", "error")
MB, MP = 1 << 20, 1_000_000  # the CLI's units of bytes and pixels


def _server(default, help: str, **kw):
    return option(default, help, group=SERVER, **kw)


@dataclass(slots=True, frozen=True)
class ServerConfig:
    """How the server listens and what it accepts (validated on construction)."""

    host: str = _server("127.0.0.1", "address to listen on", flag="--host", metavar="HOST")
    # `seer ui` listens on the same port as `seer serve` (it serves the same API beside its page)
    port: int = _server(8000, "port to listen on", lo=0, hi=65535, flag="--port")
    max_body_bytes: int = _server(
        32 * MB,
        "largest request body accepted, in MB",
        lo=0,
        open_lo=True,
        scale=MB,
        flag="--max-body-mb",
        metavar="MB",
    )
    max_image_bytes: int = _server(
        8 * MB,
        "largest image accepted, in MB",
        lo=0,
        open_lo=True,
        scale=MB,
        flag="--max-image-mb",
        metavar="MB",
    )
    max_image_pixels: int = _server(
        16 * MP,
        "largest image accepted, in megapixels",
        lo=0,
        open_lo=True,
        scale=MP,
        flag="--max-image-mp",
        metavar="MP",
    )
    pixel_budget: int = _server(
        32 * MP,
        "megapixels of images decoded at once over all requests; the rest wait "
        "(~40 bytes a pixel at the peak)",
        lo=0,
        open_lo=True,
        scale=MP,
        flag="--image-pixel-budget",
        metavar="MP",
    )
    prepare_timeout: float = _server(
        30.0,
        "seconds one request may spend waiting, decoding its image and being tokenized "
        "before a 503",
        lo=0,
        open_lo=True,
        flag="--prepare-timeout",
        metavar="S",
    )
    # a text prompt holds at most this x the model's context in characters (checked before
    # tokenizing: real tokenizers average 3-5 characters a token)
    chars_per_token: int = _server(32, "prompt characters allowed per token of context", lo=1)
    read_timeout: float = _server(
        10.0,
        "seconds a client may take to send a request's head, or the next part of its "
        "body, before its connection is closed (408 for a body)",
        lo=0,
        open_lo=True,
        flag="--read-timeout",
        metavar="S",
    )
    max_connections: int = _server(
        1024,
        "connections and requests held at once; past it a new request gets 503",
        lo=1,
        flag="--max-connections",
        metavar="N",
    )
    drain_timeout: float = _server(
        60.0,
        "seconds SIGTERM waits for running requests",
        lo=0,
        flag="--drain-timeout",
        metavar="S",
    )
    log_level: str = _server(
        "info", "server log level", choices=LOG_LEVELS, noun="log level", flag="--log-level"
    )

    def __post_init__(self) -> None:
        validate(self)


DEFAULTS = defaults(ServerConfig)  # field -> its one default
