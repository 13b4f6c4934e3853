"""`seer` command line: generate | make-checkpoint | demo | profile | calibrate | bench.

Thin by design: each subcommand parses its options and calls the library. User mistakes
(`SeerError`) print one line and exit with status 2; anything else is a bug and shows a trace.
"""

from __future__ import annotations

import argparse
import json
import sys

from seer.config import CACHES, RULES, SCHEDULES
from seer.errors import SeerError
from seer.models.factory import ARCHS


def _add_sampling(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sampling")
    g.add_argument(
        "--gen-length", type=int, default=None, help="answer window (default: the model's)"
    )
    g.add_argument("--steps", type=int, default=None, help="denoising steps (default gen-length)")
    g.add_argument("--block-length", type=int, default=None, help="semi-AR block length")
    g.add_argument("--temperature", type=float, default=None, help="default: the model's")
    g.add_argument("--remasking", "--alg", dest="remasking", choices=RULES, default=None)
    g.add_argument("--alg-temp", type=float, default=None, help="Dream: position sampling temp")
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--cfg-scale", type=float, default=None)
    g.add_argument(
        "--schedule", choices=SCHEDULES, default=None, help="reveal counts (default: the rule's)"
    )
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="Fast-dLLM parallel decoding: reveal every masked position of the block whose "
        "confidence is >= this (at least one per step)",
    )
    g.add_argument(
        "--factor", type=float, default=None, help="Fast-dLLM factor-based parallel decoding"
    )


IMAGE_HELP = "image file or data:image/...;base64 URI (multimodal models)"


def _sampling(args) -> dict:
    keys = ("gen_length", "steps", "block_length", "temperature", "remasking", "alg_temp")
    keys += ("top_p", "top_k", "cfg_scale", "seed", "cache", "schedule", "threshold", "factor")
    return {k: getattr(args, k, None) for k in keys if getattr(args, k, None) is not None}


def cmd_generate(args) -> int:
    import seer

    lm = seer.load(args.model, dtype=args.dtype, device=args.device)
    seer_cfg = _seer_config(args)
    extra = {}
    if args.stop:  # stop strings -> ids, encoded as the official samplers do (no specials)
        if lm.tokenizer is None:
            raise SeerError("--stop needs the model's tokenizer")
        from seer.models.llada_v import encode_words

        extra["stop"] = tuple(tuple(encode_words(lm.tokenizer, w)) for w in args.stop)
    g = lm.generate(
        args.prompt,
        seer=seer_cfg,
        image=args.image,
        chat=not args.no_chat,
        **_sampling(args),
        **extra,
    )
    s = g.stats
    if args.json:
        record = {
            "answer": g.text,
            "token_ids": g.token_ids,
            "nfe": s.nfe,
            "seconds": round(s.seconds, 4),
            "tokens": s.tokens,
            "tokens_per_second": round(s.tokens_per_second, 2),
            "window": s.window,
            "gen_length": s.gen_length,
            "guard_grew": s.grown,
        }
        if g.boundary is not None:
            record["boundary"] = g.boundary.as_dict()
        print(json.dumps(record))
    else:
        print(g.text)
        extra = f", window {s.window}/{s.gen_length}" if seer_cfg else ""
        print(
            f"[{s.nfe} NFE, {s.seconds:.2f} s, {s.tokens} tokens, "
            f"{s.tokens_per_second:.1f} tok/s{extra}]",
            file=sys.stderr,
        )
    return 0


def _seer_config(args):
    """--seer: the model's stored Seer defaults (seer.json), else the paper's."""
    return True if getattr(args, "seer", False) else None


def cmd_make_checkpoint(args) -> int:
    from seer.models.factory import make_random_checkpoint

    folder = make_random_checkpoint(
        args.arch, args.out, layers=args.layers, width=args.width, seed=args.seed
    )
    print(f"wrote a random {args.arch} checkpoint to {folder}")
    print(f"try: seer generate --model {folder} --prompt 'repeat star 3 times'")
    return 0


def cmd_demo(args) -> int:
    from seer.demo.run import run_demo

    run_demo(args.model, args.out, text=args.text)
    return 0


def cmd_profile(args) -> int:
    import seer
    from seer.demo.run import builtin_path
    from seer.eval.profile import profile_prompt

    default = builtin_path("vqa" if args.image else "text")
    lm = seer.load(args.model or default, dtype=args.dtype, device=args.device)
    res = profile_prompt(
        lm,
        args.prompt,
        args.out,
        args.gen_length,
        args.theta,
        args.tensor,
        not args.no_generate,
        image=args.image,
    )
    print(
        f"wrote {res['png']} (detected boundary at {res['detected_index']}, true end at "
        f"{res['true_end']})"
    )
    return 0


def cmd_calibrate(args) -> int:
    from seer.boundary.calibrate_cli import run_calibration

    run_calibration(args.model, args.n, args.out, args.write, args.max_over, args.task)
    return 0


def cmd_bench(args) -> int:
    import torch

    import seer
    from seer.demo.run import builtin_path
    from seer.engine import bench

    torch.set_num_threads(args.threads)
    lm = seer.load(args.model or builtin_path(), dtype=args.dtype, device=args.device)
    n = max(args.n, *args.batches, 16)
    record = bench.run(
        lm,
        n=n,
        batches=tuple(args.batches),
        gen_length=args.gen_length,
        tau_pad=args.tau_pad,
        seed=args.seed,
        progress=lambda line: print(line, file=sys.stderr),
    )
    bench.show(record)
    if args.json:
        print(json.dumps(record))
    return 0


class _Parser(argparse.ArgumentParser):
    """Option errors as one line, like every other user error."""

    def error(self, message: str):
        self.exit(2, f"seer: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="seer", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    g = sub.add_parser("generate", help="answer one prompt")
    g.add_argument("--model", required=True, help="local model folder")
    g.add_argument("--prompt", required=True)
    g.add_argument("--image", default=None, help=IMAGE_HELP)
    g.add_argument("--dtype", default="float32", help="float32 | bfloat16 | float16")
    g.add_argument("--device", default="cpu")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    g.add_argument("--no-chat", action="store_true", help="do not apply the chat template")
    g.add_argument("--seer", action="store_true", help="truncate the window at the boundary")
    g.add_argument(
        "--stop", action="append", default=None, help="stop string (repeatable; LLaDA-V style)"
    )
    _add_sampling(g)
    g.add_argument(
        "--cache",
        choices=CACHES,
        default=None,
        help="KV cache: prefix or dual (Fast-dLLM, per semi-AR block), prefix_lm (LaViDa: the "
        "prompt encoded once, alone) (default none)",
    )
    g.set_defaults(func=cmd_generate)

    m = sub.add_parser("make-checkpoint", help="write a tiny random model in the official layout")
    m.add_argument("--arch", choices=ARCHS, default="llada")
    m.add_argument("--out", required=True, help="folder to create")
    m.add_argument("--layers", type=int, default=2)
    m.add_argument("--width", type=int, default=64)
    m.add_argument("--seed", type=int, default=0)
    m.set_defaults(func=cmd_make_checkpoint)

    d = sub.add_parser("demo", help="a built-in model with and without Seer: table + PNG")
    d.add_argument(
        "--model", default=None, help="model folder (default: the built-in multimodal model)"
    )
    d.add_argument("--text", action="store_true", help="the built-in text model instead")
    d.add_argument("--out", default="seer-demo.png", help="PNG of the step-0 profiles")
    d.set_defaults(func=cmd_demo)

    p = sub.add_parser("profile", help="step-0 sparsity heatmap (layers x positions) as a PNG")
    p.add_argument(
        "--model", default=None, help="model folder (default: a built-in model; with --image "
        "the multimodal one)"
    )  # fmt: skip
    p.add_argument("--prompt", required=True)
    p.add_argument("--image", default=None, help=IMAGE_HELP)
    p.add_argument("--out", default="seer-profile.png")
    p.add_argument("--gen-length", type=int, default=64)
    p.add_argument("--theta", type=float, default=None, help="zero threshold (model default)")
    p.add_argument("--tensor", choices=("down", "gate"), default=None)
    p.add_argument("--no-generate", action="store_true", help="skip the baseline (true end)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_profile)

    c = sub.add_parser(
        "calibrate",
        help="measure the step-0 signals on the demo tasks' held-out "
        "split and choose Seer defaults",
    )
    c.add_argument("--model", default=None, help="model folder (default: the built-in text "
                   "model; with --task vqa the multimodal one)")  # fmt: skip
    c.add_argument("--n", type=int, default=300, help="held-out requests")
    c.add_argument("--out", default="calibration", help="folder for the report and plots")
    c.add_argument("--write", action="store_true", help="store the choice in the model's seer.json")
    c.add_argument("--max-over", type=float, default=0.0, help="over-truncation allowed (share)")
    c.add_argument("--task", choices=("text", "vqa"), default=None,
                   help="held-out requests: text prompts or image questions (default: vqa for a "
                   "multimodal model, else text)")  # fmt: skip
    c.set_defaults(func=cmd_calibrate)

    b = sub.add_parser(
        "bench",
        help="batched serving: throughput and latency with and without Seer and routing",
    )
    b.add_argument("--model", default=None, help="model folder (default: the built-in model)")
    b.add_argument("--n", type=int, default=64, help="held-out prompts (>= the largest batch)")
    b.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64], help="batch sizes")
    b.add_argument("--gen-length", type=int, default=64)
    b.add_argument("--tau-pad", type=float, default=0.4, help="padding waste that packs a group")
    b.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--json", action="store_true", help="also print the JSON record")
    b.add_argument("--dtype", default="float32")
    b.add_argument("--device", default="cpu")
    b.set_defaults(func=cmd_bench)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SeerError as e:
        print(f"seer: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
