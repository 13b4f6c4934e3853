"""Time Seer's denoising loop on random LLaDA checkpoints, optionally beside the official sampler.

    python benchmarks/bench_loop.py                       # our loop only
    python benchmarks/bench_loop.py --official-generate /path/to/LLaDA/generate.py
    python benchmarks/bench_loop.py --sizes tiny --baseline /tmp/seer-before  # before vs now

With `--baseline DIR` (another checkout of Seer, e.g. `git worktree add DIR <commit>`), the same
cases run in `--rounds` alternating subprocesses of this script, one with `DIR/src` on the
Python path and one with this checkout's `src`, and the table gives the median of each case's
median wall time and their ratio (now / before; < 1 = now is faster).

For each size (tiny: d 64 x 2 layers; mid: d 1024 x 12 layers x 16 heads, MLP 2816, vocab 2048)
a random checkpoint in the official LLaDA layout is written to a temporary folder and loaded with
`seer.load` (which goes through `seer.models.loader.load_model`). Every case is timed through the
public `DiffusionLM.generate` (canvas + loop + answer). With `--official-generate`, that file is
imported by path (its code is never copied) and its `generate()` drives the very same `.model` on
the same prompt ids; the two token-id outputs are compared.

Prompts have equal lengths (no padding), so both samplers see the same inputs with no attention
mask. Temperature 0 and `low_confidence` remasking make both deterministic. Each case gets one
warm-up generation with the same shapes and the fewest steps (one per block), then `repeats`
timed generations per sampler, interleaved (ours/official, then official/ours, ...) so that drift
on a shared machine hits both alike. Reported: the median wall time and the median CPU time of
the process (`time.process_time`, robust when other jobs share the cores; with `--threads 1`
it is the time our one compute thread ran), and, from forward hooks on the model, the CPU time
per step spent outside the model's forward (the sampler's own overhead: masks, softmax, top-k).
The verdict ("ours/official") is given on both clocks.

The last line of stdout is one JSON record of the whole run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import seer
from seer.eval.machine import machine_info
from seer.models.factory import llada_config, random_model, save_checkpoint

VOCAB = 2048
MASK, EOS = VOCAB - 1, VOCAB - 2  # pad = EOS, as in the released LLaDA configs
SIZES = {
    # name: (model shape, init std, default repeats)
    "tiny": (dict(d_model=64, n_layers=2, n_heads=4, mlp_hidden_size=192), 0.2, 5),
    "mid": (dict(d_model=1024, n_layers=12, n_heads=16, mlp_hidden_size=2816), 0.02, 2),
}


class ForwardClock:
    """Hooks on the model: CPU seconds spent inside its forward, whoever calls it."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.inside, self._t = 0.0, 0.0
        model.register_forward_pre_hook(self._pre)
        model.register_forward_hook(self._post)

    def _pre(self, *_):
        self._t = time.process_time()

    def _post(self, *_):
        self.inside += time.process_time() - self._t


class Timed:
    """Wall and CPU time of one generation, and the CPU time outside the model's forward."""

    def __init__(self, clock: ForwardClock) -> None:
        self.clock = clock

    def __enter__(self):
        self.inside0 = self.clock.inside
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
        self.outside = self.cpu - (self.clock.inside - self.inside0)


class HFView:
    """What the official `generate()` reads from a transformers model besides calling it:
    `.device`. Calls go straight to our `.model`; nothing else is changed."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.device = next(model.parameters()).device

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)


def import_official(path: str):
    spec = importlib.util.spec_from_file_location("official_llada_generate", path)
    if spec is None or spec.loader is None:
        sys.exit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


def build(size: str, folder: Path, seed: int):
    shape, std, _ = SIZES[size]
    raw = llada_config(VOCAB, mask_token_id=MASK, eos_token_id=EOS, pad_token_id=EOS, **shape)
    model = random_model(raw, seed=seed, std=std)
    save_checkpoint(model, raw, folder / size)
    del model
    return seer.load(folder / size, tokenizer=False)


def prompts(batch: int, length: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, EOS, (batch, length), generator=g)  # never MASK or EOS


def run_ours(clock, lm, ids: torch.Tensor, steps: int, gen: int, block: int):
    with Timed(clock) as t:
        out = lm.generate(
            ids.tolist(),
            gen_length=gen,
            steps=steps,
            block_length=block,
            temperature=0.0,
            remasking="low_confidence",
        )
    return t, torch.tensor([g.token_ids for g in out]), out[0].stats.nfe


def run_official(clock, generate, view, ids: torch.Tensor, steps: int, gen: int, block: int):
    with Timed(clock) as t:
        x = generate(
            view,
            ids,
            steps=steps,
            gen_length=gen,
            block_length=block,
            temperature=0.0,
            remasking="low_confidence",
            mask_id=MASK,
        )
    return t, x[:, ids.shape[1] :], steps  # one forward per step (no CFG)


def _summary(runs: list[Timed], nfe: int, name: str) -> dict:
    med = statistics.median
    return {
        f"{name}_s": med(r.wall for r in runs),
        f"{name}_cpu_s": med(r.cpu for r in runs),
        f"{name}_all_s": [round(r.wall, 4) for r in runs],
        f"{name}_all_cpu_s": [round(r.cpu, 4) for r in runs],
        f"{name}_outside_ms_per_nfe": 1000 * med(r.outside for r in runs) / nfe,
        f"nfe_{name}": nfe,
    }


def bench_case(clock, lm, generate, size, batch, steps, block, args, repeats):
    ids = prompts(batch, args.prompt_len, args.seed)
    gen = args.gen_length
    view = HFView(lm.model) if generate else None
    warm = gen // block  # fewest steps: one per block, same shapes as the timed runs
    run_ours(clock, lm, ids, warm, gen, block)
    if generate:
        run_official(clock, generate, view, ids, warm, gen, block)
    ours, official, tok_ours, tok_off, nfe_ours, nfe_off = [], [], None, None, 0, 0
    for r in range(repeats):
        order = ("ours", "official") if r % 2 == 0 else ("official", "ours")
        for who in order:
            if who == "ours":
                t, tok_ours, nfe_ours = run_ours(clock, lm, ids, steps, gen, block)
                ours.append(t)
            elif generate:
                t, tok_off, nfe_off = run_official(clock, generate, view, ids, steps, gen, block)
                official.append(t)
    row = {
        "size": size,
        "batch": batch,
        "prompt_len": args.prompt_len,
        "gen_length": gen,
        "steps": steps,
        "block_length": block,
        "repeats": repeats,
        **_summary(ours, nfe_ours, "ours"),
    }
    row["ours_ms_per_nfe"] = 1000 * row["ours_s"] / nfe_ours
    if generate:
        row.update(_summary(official, nfe_off, "official"))
        row.update(
            ratio=row["ours_s"] / row["official_s"],
            ratio_cpu=row["ours_cpu_s"] / row["official_cpu_s"],
            identical=bool(torch.equal(tok_ours, tok_off)),
        )
        if not row["identical"]:
            row["differing_positions"] = int((tok_ours != tok_off).sum())
    return row


def table(rows, with_official: bool) -> str:
    head = ["size", "B", "steps", "block", "NFE", "ours s", "ours cpu s", "ms/NFE", "ours out ms"]
    if with_official:
        head += ["off. s", "off. cpu s", "off. out ms", "ratio wall", "ratio cpu", "same ids"]
    lines = [head]
    for r in rows:
        line = [
            r["size"],
            str(r["batch"]),
            str(r["steps"]),
            str(r["block_length"]),
            str(r["nfe_ours"]),
            f"{r['ours_s']:.3f}",
            f"{r['ours_cpu_s']:.3f}",
            f"{r['ours_ms_per_nfe']:.1f}",
            f"{r['ours_outside_ms_per_nfe']:.2f}",
        ]
        if with_official:
            line += [
                f"{r['official_s']:.3f}",
                f"{r['official_cpu_s']:.3f}",
                f"{r['official_outside_ms_per_nfe']:.2f}",
                f"{r['ratio']:.3f}",
                f"{r['ratio_cpu']:.3f}",
                "yes" if r["identical"] else f"NO ({r['differing_positions']})",
            ]
        lines.append(line)
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    fmt = lambda xs: "  ".join(x.rjust(w) for x, w in zip(xs, widths, strict=True))  # noqa: E731
    out = [fmt(lines[0]), "  ".join("-" * w for w in widths)]
    legend = (
        "s: median wall seconds per generation; cpu s: median process CPU seconds; ms/NFE: wall "
        "ms per forward; out ms: CPU ms per step outside the model forward (sampler overhead); "
        "ratio: ours/official (< 1 = we are faster)"
    )
    return "\n".join(out + [fmt(x) for x in lines[1:]] + ["", legend])


def compare(args, argv: list[str]) -> None:
    """Alternate subprocess runs of this checkout and `args.baseline`; print the ratio table."""
    import os
    import subprocess

    here = Path(__file__).resolve().parents[1] / "src"
    trees = {"before": Path(args.baseline).resolve() / "src", "now": here}
    rest, skip = [], False
    for a in argv:  # the same options, without --baseline / --rounds
        if skip:
            skip = False
        elif a in ("--baseline", "--rounds"):
            skip = True
        elif not a.startswith(("--baseline=", "--rounds=")):
            rest.append(a)
    times: dict[str, dict[tuple, list[float]]] = {"before": {}, "now": {}}
    for k in range(args.rounds):
        for name in ("before", "now") if k % 2 == 0 else ("now", "before"):
            env = dict(os.environ, PYTHONPATH=str(trees[name]))
            out = subprocess.run([sys.executable, __file__, *rest], env=env, check=True,
                                 capture_output=True, text=True).stdout  # fmt: skip
            for r in json.loads(out.strip().splitlines()[-1])["results"]:
                key = (r["size"], r["batch"], r["steps"], r["block_length"])
                times[name].setdefault(key, []).append(r["ours_s"])
    rows = []
    print("size  B  steps/block  before s  now s  now/before")
    for key in times["now"]:
        b, n = statistics.median(times["before"][key]), statistics.median(times["now"][key])
        rows.append({"case": list(key), "before_s": b, "now_s": n, "ratio": n / b})
        print(f"{key[0]:>4} {key[1]:>2} {key[2]:>6}/{key[3]:<4} {b:>8.3f} {n:>6.3f} {n / b:>10.3f}")
    record = {"benchmark": "bench_loop --baseline", "machine": machine_info(),
              "baseline": str(args.baseline), "rounds": args.rounds, "results": rows}  # fmt: skip
    print(json.dumps(record))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="tiny,mid", help="comma list of: " + ",".join(SIZES))
    ap.add_argument("--batches", default="1,4", help="batch sizes, comma list")
    ap.add_argument(
        "--schedules",
        default="64/64,32/16",
        help="steps/block_length pairs, comma list (gen_length fixed)",
    )
    ap.add_argument(
        "--skip",
        default="mid:4:64/64",
        help="size:batch:steps/block cases to leave out (comma list; '' for none); "
        "the default drops the costliest mid case to keep a CPU run short",
    )
    ap.add_argument("--gen-length", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed runs per sampler and case (default: tiny 5, mid 2)",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--official-generate",
        default=None,
        help="path to the official LLaDA generate.py, imported by path",
    )
    ap.add_argument("--baseline", default=None, help="another Seer checkout to compare with")
    ap.add_argument("--rounds", type=int, default=4, help="--baseline: alternating runs each")
    args = ap.parse_args(argv)
    if args.baseline:
        return compare(args, sys.argv[1:] if argv is None else argv)

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    generate = import_official(args.official_generate) if args.official_generate else None
    sizes = [s for s in args.sizes.split(",") if s]
    for s in sizes:
        if s not in SIZES:
            sys.exit(f"unknown size {s!r}; choose from {', '.join(SIZES)}")
    batches = [int(b) for b in args.batches.split(",") if b]
    schedules = [tuple(map(int, s.split("/"))) for s in args.schedules.split(",") if s]
    skip = {s for s in args.skip.split(",") if s}

    machine = machine_info()
    print(f"# {machine}", flush=True)
    rows, t_all = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            lm = build(size, Path(tmp), args.seed)
            clock = ForwardClock(lm.model)
            params = sum(p.numel() for p in lm.model.parameters())
            print(
                f"# {size}: {SIZES[size][0]}, vocab {VOCAB}, {params / 1e6:.1f}M params", flush=True
            )
            repeats = args.repeats or SIZES[size][2]
            for batch in batches:
                for steps, block in schedules:
                    if f"{size}:{batch}:{steps}/{block}" in skip:
                        continue
                    row = bench_case(clock, lm, generate, size, batch, steps, block, args, repeats)
                    row["params_m"] = round(params / 1e6, 2)
                    rows.append(row)
                    print(f"# {json.dumps(row)}", flush=True)
            del lm
    print()
    print(table(rows, generate is not None))
    if generate is not None:
        same = all(r["identical"] for r in rows)
        print(f"\ntoken ids identical to the official generate() in every case: {same}")
    record = {
        "benchmark": "bench_loop",
        "machine": machine,
        "vocab": VOCAB,
        "seed": args.seed,
        "official_generate": args.official_generate,
        "wall_s": time.perf_counter() - t_all,
        "sizes": {s: SIZES[s][0] for s in sizes},
        "results": rows,
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
