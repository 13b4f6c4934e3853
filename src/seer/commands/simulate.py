"""`seer simulate`: what Seer buys on a GPU before buying GPU time — the engine's scheduler and
router on a virtual clock priced by a GPU's datasheet roofline and a model's config (weights not
needed; `seer.sim`). Every figure is printed as PREDICTED with the simulator's validation error."""

from __future__ import annotations

import json

from seer.commands import options

BATCHES = [1, 16, 64, 256]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "simulate",
        help="predicted GPU throughput and latency with and without "
        "Seer (a simulation, no GPU needed)",
    )
    p.add_argument(
        "--model",
        default="llada-8b",
        help="a model folder or config.json, or a built-in shape: llada-8b, dream-7b, "
        "lavida-llada, lavida-dream, llada-v, mmada-8b (default: llada-8b)",
    )
    p.add_argument("--gpu", default="h100", help="a100 | h100 | h200 | rtx5070 (default: h100)")
    p.add_argument(
        "--trace",
        default=None,
        help="a trace file (a compare record's raw JSON Lines, or rows of "
        "prompt_tokens / answer_tokens / image / arrival) or a built-in trace: "
        "builtin-text, chartqa, infovqa, docvqa, mathvista (default: "
        "builtin-text, or chartqa for a model with images)",
    )
    p.add_argument(
        "--batches",
        type=options.POSITIVE,
        nargs="+",
        default=BATCHES,
        help="rows per engine batch (default: 1 16 64 256)",
    )
    p.add_argument(
        "--gen-length",
        type=options.POSITIVE,
        default=None,
        help="the full window (default: the trace's, else 256)",
    )
    p.add_argument(
        "--tokens-per-step",
        type=options.POSITIVE,
        default=1,
        help="fixed-rate steps: tokens revealed per step (default 1)",
    )
    p.add_argument("--block", type=options.POSITIVE, default=32, help="block length (default 32)")
    p.add_argument(
        "--threshold-tokens",
        type=float,
        default=2.0,
        help="answer tokens per forward under threshold decoding (default 2.0, an assumption)",
    )
    p.add_argument("--cache", default="none", help="none | prefix | dual | prefix_lm")
    p.add_argument(
        "--n",
        type=options.POSITIVE,
        default=None,
        help="requests drawn from a built-in trace (default: 4 x the largest batch, "
        "at least 64; each batch size serves the first 4 x its rows of them, at least 64)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="also print the JSON record")
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.roofline import hardware
    from seer.sim import load_shape, report, trace

    hw = hardware.gpu(args.gpu)
    shape = load_shape(args.model)
    n = args.n or max(64, 4 * max(args.batches))
    name = args.trace or ("chartqa" if shape.image_tokens else "builtin-text")
    tr = trace.load(name, n=n, seed=args.seed)
    gen = args.gen_length or tr.gen_length or 256
    if tr.gen_length is not None and gen != tr.gen_length:  # measured windows belong to theirs
        for r in tr.requests:
            r.measured.clear()
    d = trace.Decoding(
        gen_length=gen,
        tokens_per_step=args.tokens_per_step,
        block=args.block,
        threshold_tokens=args.threshold_tokens,
        cache=args.cache,
    )
    record = report.simulate(shape, hw, tr, tuple(args.batches), d)
    print("\n".join(report.lines(record)))
    if args.json:
        print(json.dumps(record))
    return 0
