"""`seer ui`: the web page that shows denoising step by step, baseline and Seer side by side
(see `seer.ui`; needs `seer[serve,ui]`). The OpenAI API of `seer serve` is served beside it."""

from __future__ import annotations

from seer.commands import options


def add_parser(sub) -> None:
    p = sub.add_parser("ui", help="web page: watch denoising step by step, with and without Seer")
    options.add_model(
        p,
        default="builtin",
        help="model folder, or a built-in model's name (default builtin; builtin-vqa takes images)",
    )
    options.add_server(p, ("host", "port"))
    p.add_argument(
        "--api-key",
        default=None,
        help="require 'Authorization: Bearer KEY' on the API (/v1/*, /metrics); the "
        "page asks for the key as its password",
    )
    options.add_server(p, ("log_level",))
    p.set_defaults(func=main)


def main(args) -> int:
    import sys

    from seer import extras

    extras.require("serve", "seer ui")  # before the model loads
    extras.require("ui", "seer ui")
    from seer.errors import SeerError
    from seer.serve import build, model_names
    from seer.serve.server import bind, run
    from seer.ui import PATH, mount

    if args.api_key is not None and not args.api_key.strip():
        raise SeerError("--api-key: give a key (an empty one would let every request in)")
    cfg = options.server_config(args)
    sock = bind(cfg.host, cfg.port)  # before the model loads: a taken port is one line
    lm = options.load(args)
    app = build(lm, model_names=model_names(lm, args.model), api_key=args.api_key)
    mount(app, lm, api_key=args.api_key)
    print(
        f"seer: the page for {args.model} is at http://{cfg.host}:{cfg.port}{PATH}/ (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    run(app, sock, log_level=cfg.log_level)
    return 0
