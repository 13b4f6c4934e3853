"""Seer on a built-in model's held-out split: accuracy, boundary quality, speed.

`--task text|vqa` picks the held-out requests (`seer.data`, evaluation side of the built-in tasks):
the text tasks, or image questions (`synthetic.vqa`) for a multimodal model, the default
for one. Each request's prompt is encoded once (`lm.prompt`: for an image, vision tower, projector
and splicing into the prompt embeddings), timed, and the same `PromptInput` goes to every method.

Methods, each run one request at a time (batch 1, greedy, steps = gen_length):
  baseline      the full window
  seer          the model's Seer defaults (seer.json) with the guard
  seer-noguard  the same without the guard
  seer-slack2   the guard also grows answers that end in the last 2 positions of the window
  seer-step0    the sparsity detector with the cut applied inside step 0 (paper Fig. 4)
  oracle        cut at the true end (the baseline answer's end token), same bucket rounding

Reports accuracy (`seer.data.score`: each family's own metric, exact match otherwise) overall
and per family, boundary MAE and
over-truncation (kept window < true end + 1), window cuts (an answer with no end token inside
its final window, shorter than gen_length: cut by the window; the guard exists to keep this at
0), shorter answers (fewer tokens than the baseline's answer, for any reason: a model that sees
a shorter window may also answer differently; the oracle's count is the reference),
NFE, denoising time, speedup vs baseline and as a fraction of the oracle's, and the share of
time in detection. Seer only shortens the denoising loop; the prompt processing (the same for
every method) is reported apart, with an end-to-end speedup (prompt + denoising) beside the
loop's, so that the loop's speedup is not read as the request's. Every window shape (and the
vision tower) is warmed up first, and every method runs once on the first request, untimed.
Last line: the JSON record (`seerbench.runs`).

    python benchmarks/bench_seer.py --n 300                      # built-in text model
    python benchmarks/bench_seer.py --model DIR --n 60           # task from the model (vqa)
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass

import torch
from rich.console import Console
from rich.progress import track
from rich.table import Table

import seer
from seer.boundary.config import SeerConfig
from seer.boundary.truncation import FixedWindowPolicy, round_window
from seer.data import Example, score
from seer.data.builtin import source_for
from seer.engine.request import seer_config as resolve
from seer.errors import SeerError
from seerbench import runs
from seerbench.draws import held_out
from seerbench.machine import machine_info

METHODS = ("baseline", "seer", "seer-noguard", "seer-slack2", "seer-step0", "oracle")


@dataclass(slots=True)
class Row:
    """One held-out request, answered by every method."""

    example: Example  # the request: family, reference answer
    prompt_seconds: float  # encoding its prompt once (image: vision tower + splicing)
    results: dict  # method -> Generation


def task_for(lm, task: str | None) -> str:
    """`task` checked against the model; None -> "vqa" for a multimodal model, else "text"."""
    if task is None:
        return "vqa" if lm.multimodal else "text"
    if task == "vqa" and not lm.multimodal:
        raise SeerError(f"{lm.name or 'this model'} is a text model; the vqa task needs images")
    return task


def methods(lm, q, g: int, cfg: SeerConfig, step0: SeerConfig | None) -> dict:
    """Every method on the encoded prompt `q` (one request, batch 1)."""
    base = lm.generate(q, gen_length=g)
    res = {"baseline": base}
    res["seer"] = lm.generate(q, gen_length=g, seer=cfg)
    res["seer-noguard"] = lm.generate(
        q, gen_length=g, seer=SeerConfig(**{**_fields(cfg), "guard": False})
    )
    res["seer-slack2"] = lm.generate(
        q, gen_length=g, seer=SeerConfig(**{**_fields(cfg), "guard_slack": 2})
    )
    if step0 is not None:
        res["seer-step0"] = lm.generate(q, gen_length=g, seer=step0)
    w = round_window(base.stats.tokens + 1, g, cfg.bucket)
    res["oracle"] = lm.generate(q, gen_length=g, policy=FixedWindowPolicy([w]))
    return res


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    name = args.model or ("builtin-vqa" if args.task == "vqa" else "builtin")
    lm = seer.load(name)
    task = task_for(lm, args.task)
    meta = lm.meta.get("seer", {})
    g = args.gen_length or meta.get("gen_length", 64)
    cfg = resolve(lm, True)
    step0 = None
    if meta.get("sparsity_config"):
        step0 = SeerConfig.from_dict({**meta["sparsity_config"], "cut_in_step0": True})
    source = source_for(name, task == "vqa")
    examples = held_out(source, args.n, args.seed)
    first = lm.prompt(examples[0].prompt, examples[0].image)  # also warms the vision tower
    runs.warm_windows(lm, first, g, cfg.bucket)  # every window shape
    methods(lm, first, g, cfg, step0)  # every method's code path, untimed
    rows = []
    for ex in track(examples, description=f"held-out {task} requests"):
        with runs.Timer() as t:
            q = lm.prompt(ex.prompt, ex.image)  # PromptInput: ids (+ spliced embeddings)
        rows.append(Row(ex, t.wall, methods(lm, q, g, cfg, step0)))
    record = summarise(rows, g, lm, cfg, args)
    record["task"] = task
    return record


def _fields(cfg: SeerConfig) -> dict:
    from dataclasses import fields

    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}


def summarise(rows: list[Row], g: int, lm, cfg, args) -> dict:
    out = {}
    prompt_s = sum(row.prompt_seconds for row in rows)
    for m in METHODS:
        if m not in rows[0].results:
            continue
        acc = defaultdict(list)
        secs = nfe = det = mae = over = silent = same = fired = cut = 0.0
        for row in rows:
            ex, res = row.example, row.results
            r, base = res[m], res["baseline"]
            acc[ex.family].append(score(ex, r.text))
            secs += r.stats.seconds
            det += r.stats.detect_seconds
            nfe += r.stats.nfe
            same += r.token_ids == base.token_ids
            silent += r.stats.tokens < base.stats.tokens
            cut += r.stats.window < g and r.stats.tokens >= r.stats.window
            fired += r.stats.grown > 0
            target = base.stats.tokens + 1
            b = r.boundary
            length = g if b is None or b.length is None else b.length
            if m == "oracle":
                length = target
            mae += abs(length - target)
            kept = b.window if b is not None else r.stats.window
            over += kept < min(target, g)
        n = len(rows)
        out[m] = {
            "accuracy": sum(sum(v) for v in acc.values()) / n,
            "per_family": {f: sum(v) / len(v) for f, v in sorted(acc.items())},
            "boundary_mae": mae / n,
            "over_truncation": over / n,
            "shorter_than_baseline": int(silent),
            "window_cuts": int(cut),
            "same_as_baseline": same / n,
            "guard_fired": fired / n,
            "nfe": nfe / n,
            "seconds": secs,  # denoising loops only
            "detect_share": det / secs if secs else 0.0,
            "e2e_seconds": prompt_s + secs,  # + encoding the prompts (the same for every method)
        }
    base_s, base_e2e = out["baseline"]["seconds"], out["baseline"]["e2e_seconds"]
    for r in out.values():
        r["speedup"] = base_s / r["seconds"]
        r["e2e_speedup"] = base_e2e / r["e2e_seconds"]
    oracle_gain = out["oracle"]["speedup"] - 1
    for m, r in out.items():  # share of the oracle's time saving that the method gets
        if m == "baseline":
            r["of_oracle"] = 0.0
        else:
            r["of_oracle"] = (r["speedup"] - 1) / oracle_gain if oracle_gain else float("nan")
    record = {
        "bench": "seer_heldout",
        "model": lm.name,
        "n": len(rows),
        "gen_length": g,
        "prompt_seconds": prompt_s,  # encoding every prompt once (tokenizer; image features)
        "prompt_share": prompt_s / base_e2e if base_e2e else 0.0,  # of the baseline end to end
        "seer_config": _fields(cfg),
        "machine": machine_info(),
        "torch": torch.__version__,
        "results": out,
    }
    return record


def show(record: dict) -> None:
    c = Console(width=190)
    task = record.get("task", "text")
    t = Table(
        title=f"Seer on {record['model']}: {record['n']} held-out {task} requests, "
        f"gen_length {record['gen_length']}"
    )
    cols = (
        "method",
        "accuracy",
        "MAE",
        "over-trunc",
        "window cuts",
        "shorter",
        "same",
        "guard",
        "NFE",
        "loop s",
        "loop speedup",
        "of oracle",
        "detect %",
        "e2e s",
        "e2e speedup",
    )
    for col in cols:
        t.add_column(col, justify="right")
    for m, r in record["results"].items():
        t.add_row(
            m,
            f"{r['accuracy']:.1%}",
            f"{r['boundary_mae']:.2f}",
            f"{r['over_truncation']:.1%}",
            str(r["window_cuts"]),
            str(r["shorter_than_baseline"]),
            f"{r['same_as_baseline']:.1%}",
            f"{r['guard_fired']:.1%}",
            f"{r['nfe']:.1f}",
            f"{r['seconds']:.1f}",
            f"{r['speedup']:.2f}x",
            f"{r['of_oracle']:.0%}",
            f"{r['detect_share']:.2%}",
            f"{r['e2e_seconds']:.1f}",
            f"{r['e2e_speedup']:.2f}x",
        )
    c.print(t)
    ps, n = record["prompt_seconds"], record["n"]
    c.print(
        f"prompt processing, once per request and shared by every method: {ps:.2f} s "
        f"({1000 * ps / n:.1f} ms per request, {record['prompt_share']:.1%} of the baseline's "
        "end-to-end time); e2e = prompt processing + denoising loop"
    )
    fams = list(record["results"]["baseline"]["per_family"])
    t2 = Table(title="accuracy per family")
    t2.add_column("method")
    for f in fams:
        t2.add_column(f, justify="right")
    for m, r in record["results"].items():
        t2.add_row(m, *(f"{r['per_family'][f]:.1%}" for f in fams))
    c.print(t2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: a built-in model)")
    ap.add_argument(
        "--task",
        choices=("text", "vqa"),
        default=None,
        help="held-out requests (default: vqa for a multimodal model, else text)",
    )
    runs.add_arguments(ap, n=300, seed=11, skip=("data", "repeats"))
    ap.add_argument("--gen-length", type=int, default=None)
    args = ap.parse_args()
    session = runs.Session("seer", args)
    try:
        record = run(args)
    except SeerError as e:  # a task the model cannot take: one line
        ap.error(str(e))
    show(record)
    session.emit(session.adopt(record))


if __name__ == "__main__":
    main()
