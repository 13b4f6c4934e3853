"""Sweep the routing threshold tau_pad: throughput of Seer with routing vs tau_pad.

tau_pad decides when a group pays for padding (static, rho <= tau_pad) rather than packing
(varlen). The paper finds 0.2-0.6 flat and >= 0.7 bad on GPU; this measures it for our engine on
the built-in model (held-out prompts with Seer's detector, and the long-tailed synthetic mix),
`--repeats` runs per point, interleaved over the taus, median tokens/s. Last line: the
JSON record (`seerbench.runs`).

    python benchmarks/sweep_tau.py --n 64 --batches 32 64
"""

from __future__ import annotations

import argparse
import statistics

from rich.console import Console
from rich.table import Table

import seer
from seer.sampling import SamplingParams
from seer.throughput import Workload, heldout, run_case, seer_config, synthetic
from seerbench import runs

TAUS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    runs.add_arguments(ap, n=64, repeats=2, skip=("data",))
    ap.add_argument("--batches", type=int, nargs="+", default=[32, 64])
    args = ap.parse_args()
    session = runs.Session("sweep_tau", args)
    lm = seer.load(args.model or "builtin")
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    p = SamplingParams(gen_length=g).with_defaults(lm.default_rule)
    cfg = seer_config(lm)
    held = heldout(lm, args.n, args.seed, p)
    loads = [held, synthetic(held, g, args.seed)]
    for w in loads:  # warm-up: every path (static, varlen, eager) on both workloads
        small = Workload(w.name, w.base[:8], w.valid[:8], w.fixed and w.fixed[:8])
        runs.warm(lambda tau, s=small: run_case(lm, s, "seer-routed", 8, p, cfg, tau), TAUS)
    rows = []
    for w in loads:
        for b in args.batches:
            sub = Workload(w.name, w.base[:b], w.valid[:b], w.fixed and w.fixed[:b])
            timed: dict[float, list] = {tau: [] for tau in TAUS}
            for _, tau in runs.rounds(TAUS, args.repeats):  # interleaved over the taus
                timed[tau].append(run_case(lm, sub, "seer-routed", b, p, cfg, tau))
            for tau in TAUS:
                tok_s = statistics.median(r["tok_s"] for r in timed[tau])
                paths = timed[tau][0]["paths"]
                rows.append(
                    {"workload": w.name, "batch": b, "tau_pad": tau, "tok_s": tok_s, "paths": paths}
                )
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
    session.finish(rows, model=lm.name or args.model or "builtin", source="builtin")


if __name__ == "__main__":
    main()
