"""`seer demo`: a built-in model answers fixed requests with and without Seer (table + PNG)."""

from __future__ import annotations

from seer.commands.options import file_out


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="a built-in model with and without Seer: table + PNG")
    p.add_argument(
        "--model", default=None, help="model folder (default: the built-in multimodal model)"
    )
    p.add_argument("--text", action="store_true", help="the built-in text model instead")
    p.add_argument(
        "--out", default="seer-demo.png", type=file_out, help="PNG of the step-0 profiles"
    )
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.demo import run_demo

    run_demo(args.model, args.out, text=args.text)
    return 0
