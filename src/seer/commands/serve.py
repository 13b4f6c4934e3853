"""`seer serve`: an OpenAI-compatible HTTP server (see `seer.serve`; needs the serve extra)."""

from __future__ import annotations

from seer.commands import options
from seer.engine.config import EngineConfig
from seer.engine.pricing import AUTO, OFF, served_shape

# the server's options past host and port (`seer.serve.config.ServerConfig`)
SERVE_LIMITS = (
    "max_image_bytes",
    "max_body_bytes",
    "max_image_pixels",
    "pixel_budget",
    "prepare_timeout",
    "read_timeout",
    "max_connections",
    "drain_timeout",
    "log_level",
)


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="OpenAI-compatible HTTP server (chat, completions, images)")
    options.add_model(
        p,
        default="builtin-vqa",
        help="model folder, or a built-in model's name (default builtin-vqa: the multimodal model)",
    )
    options.add_server(p, ("host", "port"))
    p.add_argument(
        "--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1/* and /metrics"
    )
    p.add_argument(
        "--public-metrics",
        action="store_true",
        help="serve /metrics without the key (for a scraper)",
    )
    p.add_argument(
        "--served-model-name",
        default=None,
        help="the model id clients send (default: the model folder's name)",
    )
    p.add_argument(
        "--no-seer", action="store_true", help='full windows unless a request sends "seer": true'
    )
    options.add_engine(p)
    p.add_argument(
        "--allow-local-images",
        default=None,
        metavar="DIR",
        help="image_url may name a file under DIR, relative to it (default: data: URIs only)",
    )
    options.add_server(p, SERVE_LIMITS)
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
    """`seer.serve.build`'s options from the flags (the model names apart), every default
    read from the option specs (`EngineConfig`, `ServerConfig`)."""
    cfg = options.server_config(args)
    given = options.engine_options(args)
    engine = {k: given[k] for k in options.ENGINE_FLAGS}
    EngineConfig(**engine)  # a bad engine option is one line here, before the model loads
    return dict(
        api_key=args.api_key,
        public_metrics=args.public_metrics,
        seer=not args.no_seer,
        image_root=args.allow_local_images,
        **engine,
        **{k: getattr(cfg, k) for k in BUILD_LIMITS},
    )


BUILD_LIMITS = (
    "max_image_bytes",
    "max_body_bytes",
    "max_image_pixels",
    "pixel_budget",
    "prepare_timeout",
    "read_timeout",
)  # ServerConfig's options that `seer.serve.build` takes


def _replicas(args) -> int:
    import sys
    from pathlib import Path

    from seer.distributed.ray_serve import serve
    from seer.engine.pricing import absolute
    from seer.models.loader import read_config

    def ready(url: str, n: int, device: str) -> None:
        print(
            f"seer: serving {args.model} on {url} with {n} Ray Serve replica(s) on {device}; "
            "Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )

    model, cfg = args.model, options.server_config(args)
    if model not in options.BUILTIN:
        if not args.ray_address:  # a local cluster: a bad folder is an error here, not in Ray
            read_config(model)
        model = str(Path(model).expanduser().resolve())  # the replicas' working folder differs
    build = _build(args)
    build["merge_on"] = absolute(build["merge_on"])  # so is a model folder merge_on names
    serve(
        model,
        replicas=args.replicas,
        min_replicas=args.min_replicas,
        max_replicas=args.max_replicas,
        address=args.ray_address,
        host=cfg.host,
        port=cfg.port,
        device=args.device,
        dtype=args.dtype,
        model_arg=args.model,
        served_model_name=args.served_model_name,
        drain_timeout=cfg.drain_timeout,
        log_level=cfg.log_level,
        ready=ready,
        **build,
    )
    return 0


def main(args) -> int:
    import sys

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
    cfg = options.server_config(args)
    if args.allow_local_images is not None:  # checked here, before anything loads
        args.allow_local_images = str(image_root(args.allow_local_images))
    if args.replicas is not None:
        extras.require("ray", "seer serve --replicas")
        if not args.ray_address:  # Ray's proxy binds it later; say now if it cannot
            bind(cfg.host, cfg.port).close()
        return _replicas(args)
    built = _build(args)  # every option checked before the model loads
    sock = bind(cfg.host, cfg.port)  # before the model loads: a taken port is one line
    lm = options.load(args)
    merge_on = built["merge_on"]
    if merge_on and merge_on.lower() not in (AUTO, *OFF) and ":" not in merge_on:
        served_shape(lm.model.config, lm.name or args.model)  # priced as it: one line if unknown
    page = None
    if args.ui:  # the page of `seer ui`, mounted on this server's app at /ui/
        from seer.ui import mount

        def page(app):
            mount(app, lm, api_key=built.get("api_key"))

    names = model_names(lm, args.model, args.served_model_name)
    host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
    ui = f", the page at http://{host}:{cfg.port}/ui/" if args.ui else ""
    print(
        f"seer: serving {names[0]} on http://{host}:{cfg.port} (OpenAI API at /v1{ui}; "
        "Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    serve(
        lm,
        host=cfg.host,
        port=cfg.port,
        drain_timeout=cfg.drain_timeout,
        log_level=cfg.log_level,
        mount=page,
        sock=sock,
        max_connections=cfg.max_connections,
        model_names=names,
        **built,
    )
    return 0
