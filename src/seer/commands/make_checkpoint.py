"""`seer make-checkpoint`: write a tiny random model in an official checkpoint layout."""

from __future__ import annotations

from seer.commands import options

ARCHS_HELP = "llada | dream | lavida-llada | lavida-dream (default llada)"


def add_parser(sub) -> None:
    p = sub.add_parser("make-checkpoint", help="write a tiny random model in the official layout")
    p.add_argument("--arch", default="llada", help=ARCHS_HELP)
    p.add_argument("--out", required=True, type=options.folder_out, help="folder to create")
    p.add_argument("--layers", type=options.number(int, 1, 32), default=2, help="1..32")
    p.add_argument(
        "--width",
        type=options.number(int, 8, 1024),
        default=64,
        help="hidden size, 8..1024 (a tiny model for tests)",
    )
    p.add_argument("--seed", type=options.number(int), default=0)
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that is not empty (its files of the same names are replaced)",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.models.factory import make_random_checkpoint

    folder = make_random_checkpoint(
        args.arch,
        args.out,
        layers=args.layers,
        width=args.width,
        seed=args.seed,
        overwrite=args.force,
    )
    print(f"wrote a random {args.arch} checkpoint to {folder}")
    print(f"try: seer generate --model {folder} --prompt 'repeat star 3 times'")
    return 0
