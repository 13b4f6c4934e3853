"""The CPU cost model (`seerbench.costmodel`: time = r + sum over forwards of a + b q + c q kv)
fitted on ONE comparison run and scored on OTHERS — other requests, other windows, other configs
(block sizes, caches) — so its error is an out-of-sample error, not a fit's residual.

    python benchmarks/costmodel_oos.py            # table + docs/results/sim/costmodel-oos.{md,json}

Fit: every (request, config) at batch 1 of `--fit` on the end-to-end CPU clock, over the
requests at even positions of its held-out list; scored on the requests at odd positions of
each `--score` run (the runs draw the same held-out list, so fit and score never share a
request), per config: the predicted total seconds over its requests against the
measured total, and the predicted speed-up over the config's 1-token-per-step baseline against
the measured one (errors: predicted / measured - 1). Every run is the built-in text model
(weights sha256 0ad23f93...) on the same 2-core VM, torch 2.13.0+cpu, 1 thread, at other times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from seerbench import costmodel, records
from seerbench.compare import family
from seerbench.compare_report import b1_repeats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "compare"
FIT = RESULTS / "shipped" / "raw-builtin.jsonl"
SCORE = (RESULTS / "windows" / "raw-builtin-g256.jsonl", RESULTS / "sweep" / "raw-builtin.jsonl")
CLOCK = "e2e_cpu"


def shape_of(name: str) -> dict:
    """cache, block and cut of a config name (seerbench.compare's names)."""
    method = name.split("@", 1)[0]
    fam = family(method)
    block = int(method.split("/b", 1)[1]) if "/b" in method else None
    cache = next((c for c in ("dual", "prefix", "dpad") if c in fam.split("+")), "none")
    cut = any(
        p in ("seer", "oracle", "static") or p.startswith("seer-")
        for p in fam.replace("+guard", "").split("+")
    )
    return {"cache": cache, "block": block, "cut": cut}


def load(path: Path, parity: int) -> tuple[int, list[dict]]:
    """(gen_length, the request rows whose position in the held-out list has `parity`)."""
    rows = [json.loads(line) for line in records.read_text(path).splitlines() if line.strip()]
    g = rows[0]["settings"]["gen_length"]
    return g, [r for r in rows if "results" in r and int(r["request"]) % 2 == parity]


def observations(g: int, rows: list[dict]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """config -> (features per request, seconds per request)."""
    out: dict[str, tuple[list, list]] = {}
    for row in rows:
        for name, x in row["results"].items():
            if name.startswith("daedal") or "nfe" not in x:
                continue  # DAEDAL's window grows: not the model's form
            s = shape_of(name)
            f = costmodel.terms(
                x.get("prompt_tokens", 0),
                x["window"],
                x["nfe"],
                g,
                s["cache"],
                s["block"],
                s["cut"],
            )
            xs, ys = out.setdefault(name, ([], []))
            xs.append(f)
            ys.append(statistics.median(b1_repeats(x, row, CLOCK)))
    return {k: (np.asarray(a), np.asarray(b)) for k, (a, b) in out.items()}


def score(fit: costmodel.Fit, obs: dict) -> list[dict]:
    base = obs.get("baseline@k=1")
    out = []
    for name, (x, y) in sorted(obs.items()):
        pred, meas = float(fit.predict(x).sum()), float(y.sum())
        r = {
            "config": name,
            "requests": len(y),
            "measured_s": meas,
            "predicted_s": pred,
            "time_error": pred / meas - 1,
        }
        if base is not None and name != "baseline@k=1":
            bp, bm = float(fit.predict(base[0]).sum()), float(base[1].sum())
            r["speedup_measured"] = bm / meas
            r["speedup_predicted"] = bp / pred
            r["speedup_error"] = r["speedup_predicted"] / r["speedup_measured"] - 1
        out.append(r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", type=Path, default=FIT)
    ap.add_argument("--score", type=Path, nargs="+", default=list(SCORE))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    g, rows = load(args.fit, 0)
    obs = observations(g, rows)
    fit = costmodel.fit(
        np.concatenate([x for x, _ in obs.values()]), np.concatenate([y for _, y in obs.values()])
    )
    record = {
        "fit_on": str(args.fit.relative_to(ROOT)) + " (even requests)",
        "clock": CLOCK,
        "coef": fit.coef,
        "in_sample": _summary(score(fit, obs)),
        "scored": {},
    }
    lines = [
        f"CPU cost model fitted on {record['fit_on']} ({fit.n} request x config "
        f"observations, {CLOCK}); in-sample median |time error| "
        f"{record['in_sample']['median_abs_time_error']:.0%}, |speed-up error| "
        f"{record['in_sample']['median_abs_speedup_error']:.0%}. Scored out of sample:",
        "",
    ]
    for path in args.score:
        g2, rows2 = load(path, 1)
        res = score(fit, observations(g2, rows2))
        s = _summary(res)
        record["scored"][str(path.relative_to(ROOT))] = {
            "gen_length": g2,
            "requests": len(rows2),
            **s,
            "configs": res,
        }
        lines += [
            f"{path.relative_to(ROOT)} (window {g2}, its {len(rows2)} odd requests, "
            f"{len(res)} configs): median |time error| {s['median_abs_time_error']:.0%} "
            f"(worst {s['worst_time']}), median |speed-up error| "
            f"{s['median_abs_speedup_error']:.0%} (worst {s['worst_speedup']})",
            "",
            "| config | measured s | predicted s | error | × baseline measured | predicted "
            "| error |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in res:
            sp = (
                (
                    f"{r['speedup_measured']:.2f}× | {r['speedup_predicted']:.2f}× | "
                    f"{r['speedup_error']:+.0%}"
                )
                if "speedup_error" in r
                else "— | — | —"
            )
            lines.append(
                f"| {r['config']} | {r['measured_s']:.1f} | {r['predicted_s']:.1f} | "
                f"{r['time_error']:+.0%} | {sp} |"
            )
        lines.append("")
    print("\n".join(lines))
    if not args.no_write:
        out = ROOT / "docs" / "results" / "sim"
        out.mkdir(parents=True, exist_ok=True)
        (out / "costmodel-oos.md").write_text("\n".join(lines))
        (out / "costmodel-oos.json").write_text(json.dumps(record, indent=1) + "\n")
    print(
        json.dumps(
            {k: v for k, v in record.items() if k != "scored"}
            | {
                "scored": {
                    k: {m: v[m] for m in v if m != "configs"} for k, v in record["scored"].items()
                }
            }
        )
    )
    return 0


def _summary(res: list[dict]) -> dict:
    t = [abs(r["time_error"]) for r in res]
    s = [abs(r["speedup_error"]) for r in res if "speedup_error" in r]
    worst_t = max(res, key=lambda r: abs(r["time_error"]))
    worst_s = max(
        (r for r in res if "speedup_error" in r),
        key=lambda r: abs(r["speedup_error"]),
        default=None,
    )
    return {
        "median_abs_time_error": statistics.median(t) if t else None,
        "median_abs_speedup_error": statistics.median(s) if s else None,
        "worst_time": f"{worst_t['config']} {worst_t['time_error']:+.0%}",
        "worst_speedup": f"{worst_s['config']} {worst_s['speedup_error']:+.0%}" if worst_s else "",
    }


if __name__ == "__main__":
    sys.exit(main())
