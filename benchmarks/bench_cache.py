"""Time the KV-cache policies (none / prefix / dual), with and without a truncated window.

    nice python benchmarks/bench_cache.py                  # d 512 x 8 layers, gen 128, block 16

A random LLaDA checkpoint in the official layout (d 512, 8 layers, 8 heads, MLP 1536, vocab
2048) is written to a temporary folder and loaded with `seer.load`. One prompt of 32 random
tokens is answered by the loop that `DiffusionLM.generate` runs (`lm.loop.run`, whose result also
counts the forwarded columns) on a fresh canvas each time (temperature 0, `low_confidence`,
gen_length 128, semi-AR block 16, 64 steps: 8 per block) under each cache, once over the full
window and once cut to a fixed window after step 0 (`FixedWindowPolicy`, the oracle form of
Seer's truncation; 32 of 128 positions by default).

Each case runs one warm-up generation with the same shapes and one step per block; then the
timed runs go round the cases `repeats` times (interleaved, so drift on a shared machine hits
every case alike). Reported per case: NFE, the rows x columns run through the model
(`LoopResult.forwarded`, proportional to the forward FLOPs but attention), the median wall and
process-CPU seconds per generation, the speed-up over no cache on the full window, and how many
answer tokens equal those of the uncached run with the same window (the cache is approximate:
on a random model the answers drift, on a trained one Fast-dLLM reports little loss).

The last line of stdout is the JSON record of the whole run (`seerbench.runs`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import torch

import seer
from seer.boundary.truncation import FixedWindowPolicy
from seer.diffusion.loop import make_canvas
from seer.models.configs import llada_config
from seer.models.factory import random_model, save_checkpoint
from seerbench import runs

VOCAB = 2048
MASK, EOS = VOCAB - 1, VOCAB - 2  # pad = EOS, as in the released LLaDA configs
SHAPE = dict(d_model=512, n_layers=8, n_heads=8, mlp_hidden_size=1536)
CACHES = ("none", "prefix", "dual")


def build(folder: Path, seed: int):
    raw = llada_config(VOCAB, mask_token_id=MASK, eos_token_id=EOS, pad_token_id=EOS, **SHAPE)
    save_checkpoint(random_model(raw, seed=seed, std=0.02), raw, folder)
    return seer.load(folder, tokenizer=False)


def generate(lm, ids: list[int], cache: str, window: int | None, steps: int, args):
    """One timed generation: (wall s, cpu s, answer ids, nfe, forwarded)."""
    policy = FixedWindowPolicy([window]) if window else None
    p = seer.SamplingParams(
        gen_length=args.gen_length,
        steps=steps,
        block_length=args.block,
        remasking="low_confidence",
        cache=cache,
    )
    with runs.Timer() as t:
        canvas = make_canvas([ids], p.gen_length, lm.tokens, lm.device)
        res = lm.loop.run(canvas, p, policy=policy)
    return t.wall, t.cpu, res.answer[0].tolist(), res.nfe, res.forwarded


def table(rows: list[dict]) -> str:
    head = ["cache", "window", "NFE", "cols", "s/gen", "cpu s", "speed-up", "same as none"]
    lines = [head]
    for r in rows:
        lines.append(
            [
                r["cache"],
                str(r["window"]),
                str(r["nfe"]),
                str(r["forwarded"]),
                f"{r['seconds']:.3f}",
                f"{r['cpu_seconds']:.3f}",
                f"{r['speedup']:.2f}x",
                f"{r['same_tokens']}/{r['window']}",
            ]
        )
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    fmt = lambda xs: "  ".join(x.rjust(w) for x, w in zip(xs, widths, strict=True))  # noqa: E731
    legend = (
        "cols: rows x columns run through the model, summed over forwards; s/gen, cpu s: median "
        "wall / process-CPU seconds per generation; speed-up: over none on the full window (wall); "
        "same as none: answer tokens equal to the uncached run with the same window"
    )
    out = [fmt(head), "  ".join("-" * w for w in widths), *map(fmt, lines[1:])]
    return "\n".join([*out, "", legend])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--window", type=int, default=32, help="truncated window (0: full only)")
    ap.add_argument("--prompt-len", type=int, default=32)
    runs.add_arguments(ap, repeats=5, skip=("n", "data"))
    args = ap.parse_args(argv)
    session = runs.Session("cache", args)
    torch.set_num_interop_threads(1)
    print(f"# {runs.machine_info()}", flush=True)
    g = torch.Generator().manual_seed(args.seed)
    ids = torch.randint(0, EOS, (args.prompt_len,), generator=g).tolist()  # never MASK or EOS
    windows = [args.gen_length] + ([args.window] if args.window else [])
    cases = [(c, w) for w in windows for c in CACHES]
    with tempfile.TemporaryDirectory() as tmp:
        lm = build(Path(tmp) / "llada", args.seed)
        params = sum(p.numel() for p in lm.model.parameters())
        print(f"# LLaDA {SHAPE}, vocab {VOCAB}, {params / 1e6:.1f}M params", flush=True)
        warm = args.gen_length // args.block  # one step per block: the same shapes, quickly
        runs.warm(
            lambda c: generate(
                lm, ids, c[0], None if c[1] == args.gen_length else c[1], warm, args
            ),
            cases,
        )
        timed: dict[tuple, list] = {case: [] for case in cases}
        for _, (cache, w) in runs.rounds(cases, args.repeats):
            window = None if w == args.gen_length else w
            timed[cache, w].append(generate(lm, ids, cache, window, args.steps, args))
    rows = []
    for cache, w in cases:
        rs = timed[cache, w]
        base = timed["none", w][0][2]
        row = {
            "cache": cache,
            "window": w,
            "nfe": rs[0][3],
            "forwarded": rs[0][4],
            "seconds": statistics.median(r[0] for r in rs),
            "cpu_seconds": statistics.median(r[1] for r in rs),
            "all_seconds": [round(r[0], 4) for r in rs],
            "same_tokens": sum(a == b for a, b in zip(rs[0][2][:w], base[:w], strict=True)),
        }
        rows.append(row)
        print(f"# {json.dumps(row)}", flush=True)
    full = next(r for r in rows if r["cache"] == "none" and r["window"] == args.gen_length)
    for r in rows:
        r["speedup"] = full["seconds"] / r["seconds"]
    print()
    print(table(rows))
    shape = {**SHAPE, "vocab": VOCAB, "params_m": round(params / 1e6, 2)}
    session.finish(rows, model="random-llada", source="random", n=1, shape=shape)


if __name__ == "__main__":
    main()
