"""What Seer's boundary detection costs, as a share of the denoising loop, on the built-in models.

For each shipped model (text `builtin`, multimodal `builtin-vqa`: the v2 models; the records
in docs/results were measured on the first ones) and each Seer signal it ships (the calibrated
default from seer.json, and the sparsity detector of its `sparsity_config`), every
held-out request (`seer.data`, evaluation side: never used for calibration) is answered at batch
1, greedy, steps = window, with the signals interleaved request by request. Per run it records:

  loop      the denoising loop's wall time (`Generation.stats.seconds`)
  detect    detection proper: the probe's hooks inside step 0 (the sparsity signal) plus the
            detector (end probability, rule, reports) - `SeerPolicy.detect_seconds`
  policy    everything the loop times inside the window policy: detection plus the relayout of
            the canvas and the cache to the cut window and the new step plan
            (`Generation.stats.detect_seconds`, the figure the README reported as "detection")

  cpu       this thread's CPU time for the whole `generate` call (engine, loop, detection) and for
            detection alone (`SeerPolicy.detect_cpu_seconds`): CPU time does not count the moments
            another process holds the core, so it is the figure to trust on a shared machine

and prints, per model and signal, the medians per request, the median of the per-request wall
shares detect / loop and policy / loop, sum(detect) / sum(loop) (which one descheduled moment
can inflate), and the CPU share sum(detect cpu) / sum(generate cpu). Every window shape and every
signal is warmed up first. Any model folder can be measured (`--models DIR --data SOURCE`, e.g. a
v2 checkpoint with `--data builtin-v2`); `bench_compare.py` records the same share for every Seer
composition (its record's `detection`). Last line: the JSON record.

    python benchmarks/bench_detect.py --n 60
    python benchmarks/bench_detect.py --models /work/runs/builtin-v2/export --data builtin-v2
"""

from __future__ import annotations

import argparse
import statistics
import time

import seer
from seer.boundary.config import SeerConfig
from seer.boundary.truncation import SeerPolicy
from seer.data.builtin import source_for
from seer.engine.request import seer_config as resolve
from seerbench import runs
from seerbench.draws import held_out

MODELS = ("builtin", "builtin-vqa")


def signals(lm) -> dict[str, SeerConfig]:
    """The Seer settings each built-in model ships: its default and its sparsity detector."""
    out = {"default": resolve(lm, True)}
    sparsity = dict(lm.defaults.seer.sparsity_config)
    if sparsity:
        out["sparsity"] = resolve(lm, SeerConfig.from_dict(sparsity))
    return out


def run_model(name: str, n: int, data: str | None = None, seed: int = 0) -> dict:
    from seerbench.compare import encode

    lm = seer.load(name)
    g = lm.sampling().gen_length
    configs = signals(lm)
    source = data or source_for(name, lm.multimodal)
    examples = held_out(source, n, seed)
    prompts = [encode(lm, e) for e in examples]  # encoded once (a chat through its template)
    bucket = min(c.bucket for c in configs.values())
    runs.warm_windows(lm, prompts[0], g, bucket)  # every window shape, before any timing

    def seer_policy(c: SeerConfig) -> SeerPolicy:
        return SeerPolicy(resolve(lm, c), lm.tokens)

    runs.warm(
        lambda c: lm.generate(prompts[0], gen_length=g, policy=seer_policy(c)), configs.values()
    )
    keys = ("loop", "detect", "policy", "window", "cpu", "detect_cpu")
    rows = {k: {f: [] for f in keys} for k in configs}
    for q in prompts:
        for key, cfg in configs.items():  # interleaved: the machine's noise hits every signal
            policy = seer_policy(cfg)
            c0 = time.thread_time()
            gen = lm.generate(q, gen_length=g, policy=policy)
            r = rows[key]
            r["cpu"].append(time.thread_time() - c0)
            r["detect_cpu"].append(policy.detect_cpu_seconds)
            r["loop"].append(gen.stats.seconds)
            r["detect"].append(policy.detect_seconds)
            r["policy"].append(gen.stats.detect_seconds)
            r["window"].append(gen.stats.window)
    out = {}
    for key, r in rows.items():
        loop = sum(r["loop"])
        out[key] = {
            "signal": configs[key].signal,
            "requests": len(r["loop"]),
            "loop_ms": 1e3 * statistics.median(r["loop"]),
            "detect_ms": 1e3 * statistics.median(r["detect"]),
            "policy_ms": 1e3 * statistics.median(r["policy"]),
            # per-request shares, median: robust to a descheduled moment on a shared machine
            "detect_share": statistics.median(
                d / t for d, t in zip(r["detect"], r["loop"], strict=True)
            ),
            "policy_share": statistics.median(
                p / t for p, t in zip(r["policy"], r["loop"], strict=True)
            ),
            "detect_share_of_sums": sum(r["detect"]) / loop,
            "generate_cpu_ms": 1e3 * statistics.median(r["cpu"]),
            "detect_cpu_ms": 1e3 * statistics.median(r["detect_cpu"]),
            "detect_cpu_share": sum(r["detect_cpu"]) / sum(r["cpu"]),
            "policy_share_of_sums": sum(r["policy"]) / loop,
            "mean_window": sum(r["window"]) / len(r["window"]),
        }
    return {"gen_length": g, "source": source, "signals": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    runs.add_arguments(ap, n=60, skip=("repeats",), help={"n": "held-out requests per model"})
    ap.add_argument(
        "--models", nargs="+", default=list(MODELS), help="built-in names or model folders"
    )
    args = ap.parse_args()
    session = runs.Session("detect", args)
    results = {name: run_model(name, args.n, args.data, args.seed) for name in args.models}
    head = (
        "model",
        "signal",
        "n",
        "window",
        "loop ms",
        "detect ms",
        "detect %",
        "policy ms",
        "policy %",
        "det % sums",
        "cpu ms",
        "det cpu ms",
        "det cpu %",
    )
    print(
        "{:12s} {:20s} {:>4s} {:>6s} {:>8s} {:>9s} {:>8s} {:>9s} {:>8s} {:>10s} {:>8s} {:>10s} "
        "{:>9s}".format(*head)
    )
    for name, res in results.items():
        for key, r in res["signals"].items():
            label = f"{key} ({r['signal']})"
            print(
                f"{name:12s} {label:20s} {r['requests']:4d} {r['mean_window']:6.1f} "
                f"{r['loop_ms']:8.2f} {r['detect_ms']:9.3f} {r['detect_share']:8.2%} "
                f"{r['policy_ms']:9.3f} {r['policy_share']:8.2%} "
                f"{r['detect_share_of_sums']:10.2%} {r['generate_cpu_ms']:8.2f} "
                f"{r['detect_cpu_ms']:10.3f} {r['detect_cpu_share']:9.2%}"
            )
    session.finish(results, model=",".join(map(str, args.models)))


if __name__ == "__main__":
    main()
