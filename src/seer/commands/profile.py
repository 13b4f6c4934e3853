"""`seer profile`: the step-0 sparsity heatmap (layers x answer positions) of one prompt."""

from __future__ import annotations

from seer.commands import options


def add_parser(sub) -> None:
    p = sub.add_parser("profile", help="step-0 sparsity heatmap (layers x positions) as a PNG")
    options.add_model(
        p, default="", help="model folder (default: builtin; with --image builtin-vqa)"
    )
    p.add_argument("--prompt", required=True, type=options.prompt)
    p.add_argument("--image", default=None, help=options.IMAGE_HELP)
    p.add_argument("--out", default="seer-profile.png", type=options.file_out)
    options.add_sampling_flags(p, "gen_length")
    p.add_argument("--no-generate", action="store_true", help="skip the baseline (true end)")
    options.add_seer(p, switch=False)
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.calibrate.profile import profile_prompt

    lm = options.load(args, args.model or ("builtin-vqa" if args.image else "builtin"))
    res = profile_prompt(
        lm,
        args.prompt,
        args.out,
        gen_length=args.gen_length,
        seer=options.seer_options(args),
        generate=not args.no_generate,
        image=args.image,
    )
    print(
        f"wrote {res['png']} (detected boundary at {res['detected_index']}, true end at "
        f"{res['true_end']})"
    )
    return 0
