"""The simulator (`seer.sim`) against published GPU figures: two efficiency factors fitted on a
stated third of the points, the error reported on the other two thirds.

Each point names its source, its setup as published and every assumption the source leaves
open (prompt length, answer length, how its tokens/s counts tokens), then the simulator
predicts it with `SimEngine` — the engine's real scheduler and router on the virtual clock —
on the datasheet peaks of the named GPU (`seer.sim.hardware`). Fit: `Efficiency(compute,
memory)` by grid search (0.05 .. 1.00, step 0.01) minimising the median absolute log error on
the points whose index is a multiple of 3 (the "fit" third); every other point is held out.
Errors are predicted / published - 1.

    python benchmarks/validate_sim.py                 # table, docs/results/sim/, validation.json
    python benchmarks/validate_sim.py --no-write      # table only

Output: docs/results/sim/validation.md (the table) and validation.json (the record), and the
package's `src/seer/sim/validation.json` (the fitted factors and the held-out error, which
`seer simulate` prints beside every prediction). Last line: the JSON record.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
from pathlib import Path

from seer.engine.config import EngineConfig
from seer.sim import cost, engine, hardware, trace
from seer.sim.shapes import builtin_shapes

ROOT = Path(__file__).resolve().parents[1]
DATE = "2026-12-07"
FAST_DLLM = "NVlabs/Fast-dLLM README, 'Model Evaluation' table (A100 80GB per the paper)"
SEER_T1 = "Seer paper (arXiv 2607.14557) Table 1, batch 1, one A100"
SEER_F5 = "Seer paper Fig. 5, LaViDa-LLaDA on 4 x A100"
# Fig. 5 reading: lmms-eval's --batch_size is per process (one process per GPU) and each process
# logs its own tokens/s, so a point is one A100 at the stated batch (read instead as the batch
# split over 4 GPUs with the throughputs summed, every Fig. 5 point misses by +180 % to +600 %).
F5_GPUS = 1
DLMSERVE = "dlmserve 0.1.1 README 'Performance (RTX 5070 12 GB, INT4)', LLaDA-8B-Instruct"
# dlmserve's settings (docs/benchmarks.md and docs/perf_log.md: "steps=16, gen_length=64"; its
# benchmarks/perf_ci.py counts requests x gen_length over the wall time): a 64-position canvas in
# 16 steps of 4 tokens, one block.

# Assumptions the sources leave open (each stated once, used by the points below).
# Fast-dLLM's eval_llada.py counts non-[EOS] ids: for GSM8K the answer cut at lm-eval's stop
# sequences and re-tokenised, for HumanEval every non-[EOS] id of the window.
GSM8K = {"prompt": 900, "answer": 120}  # lm-eval gsm8k 5-shot in the chat template; CoT answer
HUMANEVAL = {"prompt": 150, "answer": 0.75}  # 0-shot prompt; non-[EOS] share of the window
CHAT = {"prompt": 25, "answer": 40}  # dlmserve: a short chat question; tok/s over the canvas
# dlmserve's INT4 is bitsandbytes NF4: on a forward of many positions each weight is read as
# 4 bits, written as fp16 and read again by the matmul (its 4-bit kernel serves only one-token
# inputs): 0.5 + 2 + 2 bytes per weight per forward.
NF4_BYTES = 4.5


def _fast(task: str, g: int, label: str, cache: str, threshold: bool, value: float) -> dict:
    t = dict(GSM8K if task == "gsm8k" else HUMANEVAL)
    if t["answer"] < 1:  # a share of the window
        t["answer"] = round(t["answer"] * g)
    return dict(
        id=f"fast-dllm {task} g{g} {label}",
        source=FAST_DLLM,
        model="llada-8b",
        gpu="a100",
        batch=1,
        requests=t,
        method="threshold" if threshold else "baseline",
        decoding=dict(gen_length=g, block=32, cache=cache),
        count="answer",
        published=value,
    )


def points() -> list[dict]:
    """Every published point, in a fixed order (index % 3 == 0: the fit third)."""
    out = []
    for task, g, vals in (
        ("gsm8k", 256, (6.73, 21.23, 16.53, 54.4)),
        ("gsm8k", 512, (3.23, 10.43, 18.63, 35.3)),
        ("humaneval", 256, (30.5, 40.73, 101.53, 114.1)),
        ("humaneval", 512, (18.4, 29.33, 57.13, 73.7)),
    ):
        out += [
            _fast(task, g, "LLaDA", "none", False, vals[0]),
            _fast(task, g, "+cache", "prefix", False, vals[1]),
            _fast(task, g, "+parallel", "none", True, vals[2]),
            _fast(task, g, "+cache+parallel", "prefix", True, vals[3]),
        ]
    # MMaDA's sampler as inference_mmu.py runs it (512 positions, 256 steps, blocks of 128). The
    # paper's Table 4 gives InfoVQA |O| = T = 32 for "the main results" instead; at 32 positions
    # in 32 steps the baseline would run 1.7 tokens/s (+1,176 %), a request in ~2.0 s, where the
    # paper's own Table 1 gives 14.94 s a request: its baseline cannot have run at that setting
    # on one A100, so the official sampler's setting is used (a reading, stated).
    mmada = dict(gen_length=512, tokens_per_step=2, block=128)
    for method, value in (("baseline", 0.13), ("seer", 4.02)):
        out.append(
            dict(
                id=f"seer-paper MMaDA InfoVQA {method}",
                source=SEER_T1,
                model="mmada-8b",
                gpu="a100",
                batch=1,
                requests="infovqa",
                method=method,
                decoding=mmada,
                count="answer",
                published=value,
            )
        )
    lavida = dict(gen_length=64, tokens_per_step=2, block=64, cache="prefix_lm")  # predict.py
    fig5 = {
        "vanilla": (21.55, 21.64, 22.11, 22.35),
        "naive": (23.53, 24.37, 24.78, 24.24),
        "full": (25.57, 29.35, 32.76, 35.84),
    }
    for k, b in enumerate((32, 64, 128, 256)):
        for name, vals in fig5.items():
            out.append(
                dict(
                    id=f"seer-paper Fig5 b{b} {name}",
                    source=SEER_F5,
                    model="lavida-llada",
                    gpu="a100",
                    gpus=F5_GPUS,
                    batch=b,
                    requests="chartqa",
                    method="baseline" if name == "vanilla" else "seer",
                    routing="naive" if name != "full" else "hybrid",
                    decoding=lavida,
                    count="answer",
                    published=vals[k],
                )
            )
    for b, value in ((1, 32.9), (4, 81.7), (8, 110.6)):
        out.append(
            dict(
                id=f"dlmserve b{b}",
                source=DLMSERVE,
                model="llada-8b",
                gpu="rtx5070",
                weight_bytes=NF4_BYTES,
                batch=b,
                requests=CHAT,
                method="baseline",
                decoding=dict(gen_length=64, tokens_per_step=4, block=64),
                count="canvas",
                published=value,
            )
        )
    return out


def predict(p: dict, eff: hardware.Efficiency) -> float:
    """The simulator's tokens/s for point `p` at `eff` (the run is simulated once per point;
    its ledger of forwards is re-priced at each efficiency)."""
    key = p["id"]
    if key not in _RUNS:
        _RUNS[key] = _simulate(p)
    hw, tokens, ledger = _RUNS[key]
    seconds = sum(cost.roof(hw, eff, f, b) + s for f, b, s in ledger)
    return tokens / seconds


_RUNS: dict[str, tuple] = {}


def _simulate(p: dict) -> tuple:
    """(gpu, tokens counted over every GPU, the ledger of one GPU's forwards) of point `p`."""
    shape = builtin_shapes()[p["model"]]
    if "weight_bytes" in p:
        shape = dataclasses.replace(shape, weight_bytes=p["weight_bytes"])
    gpus, batch = p.get("gpus", 1), p["batch"]
    per_gpu = max(1, batch // gpus)
    n = max(4 * per_gpu, 8)
    if isinstance(p["requests"], str):
        reqs = trace.builtin(p["requests"], n=n, seed=0).requests
    else:
        reqs = [trace.SimRequest(p["requests"]["prompt"], p["requests"]["answer"])] * n
    d = trace.Decoding(**p["decoding"])
    cfg = EngineConfig(max_batch=per_gpu, routing=p.get("routing", "hybrid"))
    hw = hardware.gpu(p["gpu"])
    sim = engine.SimEngine(shape, hw, hardware.Efficiency(), cfg, d)
    sim.ledger = []
    res = sim.run(reqs, p["method"])
    tokens = res.answer_tokens if p["count"] == "answer" else d.gen_length * len(reqs)
    return hw, gpus * tokens, sim.ledger


def fit(pts: list[dict]) -> tuple[hardware.Efficiency, float]:
    grid = [k / 100 for k in range(5, 101)]
    best = (math.inf, hardware.Efficiency())
    for c in grid[::5]:  # coarse, then fine around the best
        for m in grid[::5]:
            best = min(
                best,
                (_loss(pts, hardware.Efficiency(c, m)), hardware.Efficiency(c, m)),
                key=lambda x: x[0],
            )
    c0, m0 = best[1].compute, best[1].memory
    for c in (x for x in grid if abs(x - c0) <= 0.05):
        for m in (x for x in grid if abs(x - m0) <= 0.05):
            e = hardware.Efficiency(c, m)
            best = min(best, (_loss(pts, e), e), key=lambda x: x[0])
    return best[1], best[0]


def _loss(pts: list[dict], eff: hardware.Efficiency) -> float:
    return statistics.median(abs(math.log(predict(p, eff) / p["published"])) for p in pts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    pts = points()
    fit_set = [p for i, p in enumerate(pts) if i % 3 == 0]
    eff, _ = fit(fit_set)
    rows = []
    for i, p in enumerate(pts):
        pred = predict(p, eff)
        rows.append(
            {
                "id": p["id"],
                "role": "fit" if i % 3 == 0 else "held out",
                "published": p["published"],
                "predicted": round(pred, 3),
                "error": round(pred / p["published"] - 1, 4),
                "source": p["source"],
            }
        )
    held = [abs(r["error"]) for r in rows if r["role"] == "held out"]
    fitted = [abs(r["error"]) for r in rows if r["role"] == "fit"]
    record = {
        "date": DATE,
        "efficiency": {"compute": eff.compute, "memory": eff.memory},
        "fit_points": [r["id"] for r in rows if r["role"] == "fit"],
        "median_abs_error_held_out": round(statistics.median(held), 4),
        "median_abs_error_fit": round(statistics.median(fitted), 4),
        "held_out": len(held),
        "misses_over_50pct": [r["id"] for r in rows if abs(r["error"]) > 0.5],
        "assumptions": {
            "gsm8k": GSM8K,
            "humaneval": HUMANEVAL,
            "dlmserve_chat": CHAT,
            "threshold_tokens": trace.Decoding().threshold_tokens,
        },
        "points": rows,
    }
    lines = table(record)
    print("\n".join(lines))
    if not args.no_write:
        out = ROOT / "docs" / "results" / "sim"
        out.mkdir(parents=True, exist_ok=True)
        (out / "validation.md").write_text("\n".join(lines) + "\n")
        (out / "validation.json").write_text(json.dumps(record, indent=1) + "\n")
        keep = {
            k: record[k]
            for k in (
                "date",
                "efficiency",
                "median_abs_error_held_out",
                "median_abs_error_fit",
                "held_out",
                "fit_points",
            )
        }
        (ROOT / "src" / "seer" / "sim" / "validation.json").write_text(
            json.dumps(keep, indent=1) + "\n"
        )
    print(json.dumps({k: v for k, v in record.items() if k != "points"}))
    return 0


def table(record: dict) -> list[str]:
    e = record["efficiency"]
    out = [
        f"Simulator validation ({record['date']}): PREDICTED tokens/s against published "
        f"figures. Fitted on the 'fit' rows: compute efficiency {e['compute']:.2f}, memory "
        f"efficiency {e['memory']:.2f}; median |error| held out "
        f"{record['median_abs_error_held_out']:.0%} over {record['held_out']} points "
        f"(fit rows {record['median_abs_error_fit']:.0%}).",
        "",
        "| point | role | published tok/s | predicted tok/s | error |",
        "|---|---|---|---|---|",
    ]
    for r in record["points"]:
        out.append(
            f"| {r['id']} | {r['role']} | {r['published']:g} | {r['predicted']:.2f} | "
            f"{r['error']:+.0%} |"
        )
    out += ["", "Sources: " + "; ".join(sorted({r["source"] for r in record["points"]})) + "."]
    return out


if __name__ == "__main__":
    sys.exit(main())
