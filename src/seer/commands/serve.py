"""`seer serve`: an OpenAI-compatible HTTP server (see `seer.serve`; needs `seer[serve]`)."""

from __future__ import annotations

from seer.commands import options


def _megabytes(text: str) -> int:
    return int(options.number(float, 0, open_lo=True)(text) * (1 << 20))


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="OpenAI-compatible HTTP server (chat, completions, images)")
    options.add_model(p, default="builtin-vqa", help="model folder, or builtin / builtin-vqa "
                      "(default builtin-vqa: text and images)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument("--port", type=options.number(int, 0, 65535), default=8000)
    p.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    p.add_argument("--served-model-name", default=None,
                   help="the model id clients send (default: the model folder's name)")  # fmt: skip
    p.add_argument("--no-seer", action="store_true",
                   help="full windows unless a request sends \"seer\": true")  # fmt: skip
    p.add_argument("--max-batch", type=options.POSITIVE, default=64, help="rows per engine batch")
    p.add_argument("--max-queue", type=options.NONNEG, default=None,
                   help="waiting requests before 429 (default: unbounded)")  # fmt: skip
    p.add_argument("--max-tokens-per-step", type=options.POSITIVE, default=None,
                   help="token budget of one engine step")  # fmt: skip
    p.add_argument("--allow-local-images", action="store_true",
                   help="image_url may name a file here (default: data: URIs only)")  # fmt: skip
    p.add_argument("--max-image-mb", type=_megabytes, default=8 << 20, metavar="MB",
                   help="largest image accepted (default 8)")  # fmt: skip
    p.add_argument("--max-body-mb", type=_megabytes, default=32 << 20, metavar="MB",
                   help="largest request body accepted (default 32)")  # fmt: skip
    p.add_argument("--drain-timeout", type=options.number(float, 0), default=60.0,
                   help="seconds SIGTERM waits for running requests (default 60)")  # fmt: skip
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.errors import SeerError

    try:
        from seer.serve import serve
    except ImportError as e:
        raise SeerError(f"seer serve needs the serve extra ({e.name} is missing): "
                        "pip install 'seer[serve]'") from None  # fmt: skip
    lm = options.load(args)
    names = [args.served_model_name] if args.served_model_name else []
    names += [n for n in (lm.name, args.model) if n and n not in names]
    serve(
        lm,
        host=args.host,
        port=args.port,
        drain_timeout=args.drain_timeout,
        log_level=args.log_level,
        model_names=tuple(names),
        api_key=args.api_key,
        seer=not args.no_seer,
        max_batch=args.max_batch,
        max_queue=args.max_queue,
        max_tokens_per_step=args.max_tokens_per_step,
        allow_local_images=args.allow_local_images,
        max_image_bytes=args.max_image_mb,
        max_body_bytes=args.max_body_mb,
    )
    return 0
