"""Time Seer's denoising loop on random LLaDA checkpoints, optionally beside the official sampler.

    python benchmarks/bench_loop.py                       # our loop only
    python benchmarks/bench_loop.py --official-generate /path/to/LLaDA/generate.py
    python benchmarks/bench_loop.py --sizes tiny --baseline    # before the loop refactor vs now

With `--baseline [DIR|COMMIT]` the loop of this checkout is timed against another tree of Seer:
a folder (a checkout, or its `src`) or a commit of this repository (extracted with `git
archive`); with no value, `BEFORE` (458d42d: the tree before the loop refactor, the parent of
the step-level engine's commit). One long-lived worker process per tree (this script in
`--worker` mode, with that tree's `src` on the Python path) loads the same random checkpoints;
`--rounds` rounds then run every case once in each tree, alternating which goes first (ABBA),
and each round gives one ratio now / before per case. The table gives, per case, the median
ratio with its quartiles and range (the spread is the machine's noise), on wall time and on
process CPU time, whether both trees produced the same token ids, and the median over the cases.

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
import hashlib
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import seer
from seer.models.configs import llada_config
from seer.models.factory import random_model, save_checkpoint
from seerbench import runs, stats

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


BEFORE = "458d42d"  # the tree before the loop refactor (the parent of a9843c7, the engine)


def _tree(spec: str, tmp: Path) -> Path:
    """`spec` as a Seer checkout's `src`: a folder (a checkout or its src), or a commit of this
    repository extracted with `git archive` into `tmp`."""
    import subprocess

    path = Path(spec)
    if path.is_dir():
        return (path / "src").resolve() if (path / "src").is_dir() else path.resolve()
    repo = Path(__file__).resolve().parents[1]
    out = tmp / f"tree-{spec}"
    out.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", spec, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "src"


class Worker:
    """This script in `--worker` mode under one tree's `src`: it loads the checkpoints once and
    answers one timed generation per request (a JSON line in, a JSON line out)."""

    def __init__(self, src: Path, folder: Path, threads: int) -> None:
        import os
        import subprocess

        env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS=str(threads))
        cmd = [sys.executable, __file__, "--worker", str(folder), "--threads", str(threads)]
        self.proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, **job) -> dict:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("a worker died (see its stderr above)")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def worker(folder: Path, threads: int) -> None:
    """`--worker`: one timed generation per stdin line `{"size", "batch", "steps", "block",
    "gen", "prompt_len", "seed"}`; prints `{"wall", "cpu", "nfe", "ids"}` (ids: a hash)."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    models = {}
    for line in sys.stdin:
        job = json.loads(line)
        if job["size"] not in models:
            models[job["size"]] = seer.load(folder / job["size"], tokenizer=False)
        lm = models[job["size"]]
        ids = prompts(job["batch"], job["prompt_len"], job["seed"]).tolist()
        kw = dict(
            gen_length=job["gen"],
            steps=job["steps"],
            block_length=job["block"],
            temperature=0.0,
            remasking="low_confidence",
        )
        wall, cpu = time.perf_counter(), time.process_time()
        out = lm.generate(ids, **kw)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        tokens = [g.token_ids for g in out]
        record = {
            "wall": wall,
            "cpu": cpu,
            "nfe": out[0].stats.nfe,
            "ids": hashlib.md5(str(tokens).encode()).hexdigest(),
        }
        print(json.dumps(record), flush=True)


def _spread(xs: list[float]) -> dict:
    return dict(stats.spread(xs), n=len(xs))


def compare(args, session) -> None:
    """Before vs now, interleaved at the level of single generations.

    One long-lived worker per tree (the same random checkpoints, loaded once by each). Every
    round runs each case once in each tree, in ABBA order (before/now, then now/before, ...), so
    drift on a shared machine hits both alike; each round gives one ratio now/before per case.
    Reported: the median of those ratios, their quartiles and range (the spread is the noise),
    on wall time and on process CPU time (robust to other jobs sharing the cores)."""
    sizes = [s for s in args.sizes.split(",") if s]
    batches = [int(b) for b in args.batches.split(",") if b]
    schedules = [tuple(map(int, s.split("/"))) for s in args.schedules.split(",") if s]
    skip = {s for s in args.skip.split(",") if s}
    cases = [
        (size, b, st, bl)
        for size in sizes
        for b in batches
        for st, bl in schedules
        if f"{size}:{b}:{st}/{bl}" not in skip
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in sizes:
            build(size, folder, args.seed)
        trees = {"before": _tree(args.baseline, folder), "now": Path(__file__).parents[1] / "src"}
        workers = {name: Worker(src, folder, args.threads) for name, src in trees.items()}
        job = lambda c, steps: dict(
            size=c[0],
            batch=c[1],
            steps=steps,
            block=c[3],  # noqa: E731
            gen=args.gen_length,
            prompt_len=args.prompt_len,
            seed=args.seed,
        )
        for c in cases:  # warm-up: the same shapes, one step per block
            for w in workers.values():
                w.run(**job(c, args.gen_length // c[3]))
        runs = {c: {"before": [], "now": []} for c in cases}
        t0 = time.perf_counter()
        for k in range(args.rounds):
            for i, c in enumerate(cases):
                order = ("before", "now") if (k + i) % 2 == 0 else ("now", "before")
                for name in order:
                    runs[c][name].append(workers[name].run(**job(c, c[2])))
            print(
                f"# round {k + 1}/{args.rounds} ({time.perf_counter() - t0:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        for w in workers.values():
            w.close()
    rows = []
    for c in cases:
        b, n = runs[c]["before"], runs[c]["now"]
        row = {
            "case": list(c),
            "nfe": n[0]["nfe"],
            "same_ids": all(x["ids"] == y["ids"] for x, y in zip(b, n, strict=True))
            and b[0]["nfe"] == n[0]["nfe"],
        }
        for clock in ("wall", "cpu"):
            row[f"before_{clock}_s"] = statistics.median(r[clock] for r in b)
            row[f"now_{clock}_s"] = statistics.median(r[clock] for r in n)
            ratios = [y[clock] / x[clock] for x, y in zip(b, n, strict=True)]
            row[f"ratio_{clock}"] = _spread(ratios)
        rows.append(row)
    pooled = {
        clock: _spread([r[f"ratio_{clock}"]["median"] for r in rows]) for clock in ("wall", "cpu")
    }
    print(
        f"before = {args.baseline}, now = this checkout; {args.rounds} interleaved rounds "
        f"(ABBA), {args.threads} thread(s); ratio = now / before per round (< 1: now faster)"
    )
    print(
        "size  B  steps/block  NFE  before s  now s  wall ratio: median [q1, q3] (min-max)"
        "   cpu ratio: median [q1, q3] (min-max)  same ids"
    )
    for r in rows:
        w, u = r["ratio_wall"], r["ratio_cpu"]
        size, b, st, bl = r["case"]
        print(
            f"{size:>4} {b:>2} {st:>6}/{bl:<4} {r['nfe']:>4} {r['before_wall_s']:>8.3f} "
            f"{r['now_wall_s']:>6.3f}  {w['median']:.3f} [{w['q1']:.3f}, {w['q3']:.3f}] "
            f"({w['min']:.2f}-{w['max']:.2f})    {u['median']:.3f} [{u['q1']:.3f}, "
            f"{u['q3']:.3f}] ({u['min']:.2f}-{u['max']:.2f})  {'yes' if r['same_ids'] else 'NO'}"
        )
    print(
        f"over the cases: wall {pooled['wall']['median']:.3f} (cases {pooled['wall']['min']:.3f}"
        f"-{pooled['wall']['max']:.3f}), cpu {pooled['cpu']['median']:.3f} (cases "
        f"{pooled['cpu']['min']:.3f}-{pooled['cpu']['max']:.3f})"
    )
    session.finish(
        rows,
        model=",".join(sizes),
        source="random",
        n=len(cases),
        baseline=args.baseline,
        rounds=args.rounds,
        pooled=pooled,
    )


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
    runs.add_arguments(
        ap,
        repeats=None,
        skip=("n", "data"),
        help={"repeats": "timed runs per sampler and case (default: tiny 5, mid 2)"},
    )
    ap.add_argument(
        "--official-generate",
        default=None,
        help="path to the official LLaDA generate.py, imported by path",
    )
    ap.add_argument(
        "--baseline",
        nargs="?",
        const=BEFORE,
        default=None,
        help="compare with another Seer tree: a folder, or a commit of this "
        f"repository (no value: {BEFORE}, the tree before the loop refactor)",
    )
    ap.add_argument("--rounds", type=int, default=15, help="--baseline: interleaved rounds")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(Path(args.worker), args.threads)
    session = runs.Session("loop", args)
    if args.baseline:
        return compare(args, session)

    torch.set_num_interop_threads(1)
    generate = import_official(args.official_generate) if args.official_generate else None
    sizes = [s for s in args.sizes.split(",") if s]
    for s in sizes:
        if s not in SIZES:
            sys.exit(f"unknown size {s!r}; choose from {', '.join(SIZES)}")
    batches = [int(b) for b in args.batches.split(",") if b]
    schedules = [tuple(map(int, s.split("/"))) for s in args.schedules.split(",") if s]
    skip = {s for s in args.skip.split(",") if s}

    print(f"# {runs.machine_info()}", flush=True)
    rows = []
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
    session.finish(
        rows,
        model=",".join(sizes),
        source="random",
        n=len(rows),
        vocab=VOCAB,
        official_generate=args.official_generate,
        sizes={s: SIZES[s][0] for s in sizes},
    )


if __name__ == "__main__":
    main()
