"""Sweep the routing threshold tau_pad: throughput of Seer with routing vs tau_pad.

tau_pad decides when a group pays for padding (static, rho <= tau_pad) rather than packing
(varlen). The paper finds 0.2-0.6 flat and >= 0.7 bad on GPU; this measures it for our engine on
the built-in model (held-out prompts with Seer's detector, and the long-tailed synthetic mix),
`--repeats` runs per point, median tokens/s. Last line: one JSON record.

    python benchmarks/sweep_tau.py --n 64 --batches 32 64
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics

import torch
from rich.console import Console
from rich.table import Table

import seer
from seer.bench.throughput import Workload, heldout, run_case, seer_config, synthetic
from seer.config import SamplingParams

TAUS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batches", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    lm = seer.load(args.model or "builtin")
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    p = SamplingParams(gen_length=g).with_defaults(lm.default_rule)
    cfg = seer_config(lm)
    held = heldout(lm, args.n, args.seed, p)
    loads = [held, synthetic(held, g, args.seed)]
    warm = Workload(held.name, held.ids[:8], held.valid[:8], None)
    run_case(lm, warm, "seer-routed", 8, p, cfg, 0.4)  # warm-up
    rows = []
    for w in loads:
        for b in args.batches:
            sub = Workload(w.name, w.ids[:b], w.valid[:b], w.fixed and w.fixed[:b])
            for tau in TAUS:
                runs = [
                    run_case(lm, sub, "seer-routed", b, p, cfg, tau) for _ in range(args.repeats)
                ]
                tok_s = statistics.median(r["tok_s"] for r in runs)
                paths = runs[0]["paths"]
                rows.append({"workload": w.name, "batch": b, "tau_pad": tau, "tok_s": tok_s,
                             "paths": paths})  # fmt: skip
    t = Table(title=f"Seer + routing vs tau_pad ({lm.name}, gen_length {g}, tokens/s)")
    t.add_column("workload")
    t.add_column("batch")
    for tau in TAUS:
        t.add_column(f"τ={tau:g}", justify="right")
    for w in loads:
        for b in args.batches:
            sel = [r for r in rows if r["workload"] == w.name and r["batch"] == b]
            t.add_row(w.name, str(b), *(f"{r['tok_s']:.1f}" for r in sel))
    Console(width=140).print(t)
    record = {"bench": "sweep_tau", "model": lm.name, "machine": platform.machine(),
              "threads": args.threads, "torch": torch.__version__, "rows": rows}  # fmt: skip
    print(json.dumps(record))


if __name__ == "__main__":
    main()
