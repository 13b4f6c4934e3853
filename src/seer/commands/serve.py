"""`seer serve`: an OpenAI-compatible HTTP server (see `seer.serve`; needs the serve extra)."""

from __future__ import annotations

from seer.commands import options


def _megabytes(text: str) -> int:
    return int(options.number(float, 0, open_lo=True)(text) * (1 << 20))


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="OpenAI-compatible HTTP server (chat, completions, images)")
    options.add_model(p, default="builtin-vqa", help="model folder, or a built-in model's name "
                      "(default builtin-vqa: the multimodal model)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument("--port", type=options.number(int, 0, 65535), default=8000)
    p.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' on /v1/* and /metrics")  # fmt: skip
    p.add_argument("--public-metrics", action="store_true",
                   help="serve /metrics without the key (for a scraper)")  # fmt: skip
    p.add_argument("--served-model-name", default=None,
                   help="the model id clients send (default: the model folder's name)")  # fmt: skip
    p.add_argument("--no-seer", action="store_true",
                   help="full windows unless a request sends \"seer\": true")  # fmt: skip
    p.add_argument("--max-batch", type=options.POSITIVE, default=64, help="rows per engine batch")
    p.add_argument("--max-queue", type=options.POSITIVE, default=None,
                   help="waiting requests before 429, at least 1 (default: unbounded)")  # fmt: skip
    p.add_argument("--max-tokens-per-step", type=options.POSITIVE, default=None,
                   help="token budget of one engine step")  # fmt: skip
    p.add_argument("--allow-local-images", default=None, metavar="DIR",
                   help="image_url may name a file under DIR, relative to it (default: data: "
                   "URIs only)")  # fmt: skip
    p.add_argument("--max-image-mb", type=_megabytes, default=8 << 20, metavar="MB",
                   help="largest image accepted (default 8)")  # fmt: skip
    p.add_argument("--max-body-mb", type=_megabytes, default=32 << 20, metavar="MB",
                   help="largest request body accepted (default 32)")  # fmt: skip
    p.add_argument("--max-image-mp", type=options.number(float, 0, open_lo=True),
                   default=16.0, metavar="MP",
                   help="largest image accepted, in megapixels (default 16)")  # fmt: skip
    p.add_argument("--image-pixel-budget", type=options.number(float, 0, open_lo=True),
                   default=32.0, metavar="MP",
                   help="megapixels of images decoded at once over all requests; the rest wait "
                   "(default 32; ~40 bytes a pixel at the peak)")  # fmt: skip
    p.add_argument("--prepare-timeout", type=options.number(float, 0, open_lo=True),
                   default=30.0, metavar="S",
                   help="seconds one request may spend waiting, decoding its image and being "
                   "tokenized before a 503 (default 30)")  # fmt: skip
    p.add_argument("--drain-timeout", type=options.number(float, 0), default=60.0,
                   help="seconds SIGTERM waits for running requests (default 60)")  # fmt: skip
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.add_argument(
        "--ui",
        action="store_true",
        help="also serve the web page of `seer ui` at /ui/ (needs seer[ui]; with --api-key the "
        "page asks for the key)",
    )
    g = p.add_argument_group(
        "Ray Serve (the ray extra)",
        "N replicas of this server behind Ray Serve's proxy (--host/--port), each with its own "
        "model and engine (one GPU each when the cluster has GPUs, else one CPU). /metrics is "
        "aggregated: any replica answers with the sum over all replicas.",
    )
    for flag, help in (
        ("--replicas", "serve with N Ray Serve replicas (the initial number when autoscaling)"),
        ("--min-replicas", "autoscaling: the fewest replicas (default --replicas)"),
        ("--max-replicas", "autoscaling: the most replicas (default --replicas)"),
    ):
        g.add_argument(flag, type=options.POSITIVE, default=None, metavar="N", help=help)
    g.add_argument(
        "--ray-address",
        default=None,
        help="join this Ray cluster, e.g. auto (default: start a local one)",
    )
    p.set_defaults(func=main)


def _build(args) -> dict:
    """`seer.serve.build`'s options from the flags (the model names apart)."""
    return dict(api_key=args.api_key, public_metrics=args.public_metrics, seer=not args.no_seer,
                max_batch=args.max_batch, max_queue=args.max_queue,
                max_tokens_per_step=args.max_tokens_per_step,
                image_root=args.allow_local_images, max_image_bytes=args.max_image_mb,
                max_body_bytes=args.max_body_mb,
                max_image_pixels=int(args.max_image_mp * 1e6),
                pixel_budget=int(args.image_pixel_budget * 1e6),
                prepare_timeout=args.prepare_timeout)  # fmt: skip


def _replicas(args) -> int:
    import sys
    from pathlib import Path

    from seer.distributed.ray_serve import serve
    from seer.models.loader import read_config

    def ready(url: str, n: int, device: str) -> None:
        print(f"seer: serving {args.model} on {url} with {n} Ray Serve replica(s) on {device}; "
              "Ctrl-C stops", file=sys.stderr, flush=True)  # fmt: skip

    model = args.model
    if model not in options.BUILTIN:
        if not args.ray_address:  # a local cluster: a bad folder is an error here, not in Ray
            read_config(model)
        model = str(Path(model).expanduser().resolve())  # the replicas' working folder differs
    serve(model,
          replicas=args.replicas, min_replicas=args.min_replicas, max_replicas=args.max_replicas,
          address=args.ray_address, host=args.host, port=args.port, device=args.device,
          dtype=args.dtype, model_arg=args.model, served_model_name=args.served_model_name,
          drain_timeout=args.drain_timeout, log_level=args.log_level, ready=ready,
          **_build(args))  # fmt: skip
    return 0


def main(args) -> int:
    from seer import extras
    from seer.errors import SeerError

    extras.require("serve", "seer serve")  # before the model loads
    if args.ui:
        extras.require("ui", "seer serve --ui")
    from seer.serve import model_names, serve
    from seer.serve.security import image_root
    from seer.serve.server import bind

    if args.api_key is not None and not args.api_key.strip():
        raise SeerError("--api-key: give a key (an empty one would let every request in)")
    if args.ui and args.replicas is not None:
        raise SeerError("--ui runs on one server: drop --replicas, or run `seer ui` apart")
    if args.replicas is None:
        for flag in ("min_replicas", "max_replicas", "ray_address"):
            if getattr(args, flag) is not None:
                raise SeerError(f"--{flag.replace('_', '-')} needs --replicas N")
    if args.allow_local_images is not None:  # checked here, before anything loads
        args.allow_local_images = str(image_root(args.allow_local_images))
    if args.replicas is not None:
        extras.require("ray", "seer serve --replicas")
        if not args.ray_address:  # Ray's proxy binds it later; say now if it cannot
            bind(args.host, args.port).close()
        return _replicas(args)
    sock = bind(args.host, args.port)  # before the model loads: a taken port is one line
    lm = options.load(args)
    built = _build(args)
    page = None
    if args.ui:  # the page of `seer ui`, mounted on this server's app at /ui/
        from seer.ui import mount

        def page(app):
            mount(app, lm, api_key=built.get("api_key"))

    serve(lm, host=args.host, port=args.port, drain_timeout=args.drain_timeout,
          log_level=args.log_level, mount=page, sock=sock,
          model_names=model_names(lm, args.model, args.served_model_name),
          **built)  # fmt: skip
    return 0
