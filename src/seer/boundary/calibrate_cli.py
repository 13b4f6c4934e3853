"""`seer calibrate`: measure the step-0 signals of a model on the demo tasks' held-out split,
report how well each separates answer from padding, and choose per-model Seer defaults.

Writes to `--out`: report.json (AUCs, the sweep's best settings, the paper's defaults scored),
sparsity_aligned.png (mean sparsity around the true end, per layer), end_prob_aligned.png, and,
with `--write`, the chosen settings to the model's seer.json, which `seer.load` picks up.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from seer.boundary import calibrate as cal
from seer.boundary.detector import ThresholdRule
from seer.boundary.truncation import SeerConfig
from seer.eval import plots

PAPER = dict(signal="sparsity", tensor="down", layer=3, theta=1e-3, direction="rising",
             tau_jump=0.03, gamma=0.6)  # fmt: skip


def aligned_mean(samples, signal, k: int = 8) -> torch.Tensor:
    """Mean of signal(sample) at offsets -k..k from the true end token (NaN-aware)."""
    acc = torch.zeros(2 * k + 1, dtype=torch.float64)
    cnt = torch.zeros(2 * k + 1, dtype=torch.float64)
    for s in samples:
        v = signal(s).double()
        for o in range(-k, k + 1):
            j = s.true_len + o
            if 0 <= j < v.shape[0]:
                acc[o + k] += v[j]
                cnt[o + k] += 1
    return acc / cnt.clamp(min=1)


def combined_score(samples, sp_setting: dict, eos_setting: dict, g: int, bucket: int):
    ti = ("down", "gate").index(sp_setting["tensor"])
    hi = cal.THETAS.index(sp_setting["theta"])
    rule = SeerConfig.from_dict({k: v for k, v in sp_setting.items() if k != "signal"}).snr
    thr = ThresholdRule(eos_setting["eos_tau"], eos_setting["eos_run"])
    lengths = []
    for s in samples:
        a = rule.find(s.sparsity[ti, sp_setting["layer"], hi])
        b = thr.find(s.end_prob)
        lengths.append(None if a is None or b is None else max(a[0], b[0]) + 1)
    return cal.score(
        {**sp_setting, **eos_setting, "signal": "combined"}, lengths, samples, g, bucket
    )


def run_calibration(model, n: int, out, write: bool, max_over: float) -> dict:
    import seer
    from seer.demo.run import builtin_path
    from seer.demo.tasks import generate_examples

    console = Console()
    folder = Path(model) if model else builtin_path()
    lm = seer.load(folder)
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    examples = generate_examples(n, seed=7, split="heldout")
    with Progress(console=console) as bar:
        task = bar.add_task("step-0 profiles + baseline answers", total=len(examples))
        samples = cal.collect(lm, examples, g, progress=lambda k: bar.advance(task, k))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    acc = sum(s.correct for s in samples) / len(samples)

    n_layers = samples[0].sparsity.shape[1]
    aucs = {
        t: [
            [cal.separation(samples, lambda s, ti=ti, k=k, h=h: s.sparsity[ti, k, h])
             for h in range(len(cal.THETAS))]
            for k in range(n_layers)
        ]
        for ti, t in enumerate(("down", "gate"))
    }  # fmt: skip
    eos_auc = cal.separation(samples, lambda s: s.end_prob)

    scores = cal.sweep(samples, g)
    best_sp = cal.choose(scores, "sparsity", max_over)
    best_eos = cal.choose(scores, "eos_prob", max_over)
    paper = next(s for s in scores if all(s.setting.get(k) == v for k, v in PAPER.items()))
    sp_setting = {k: v for k, v in best_sp.setting.items() if k != "signal"}
    comb = combined_score(
        samples,
        sp_setting,
        {k: best_eos.setting[k] for k in ("eos_tau", "eos_run")},
        g,
        8,
    )
    candidates = [best_sp, best_eos, comb]
    safe = [c for c in candidates if c.over <= max_over and c.detected > 0]
    chosen = (
        min(safe, key=lambda c: c.mean_window) if safe else min(candidates, key=lambda c: c.over)
    )

    table = Table(title=f"{lm.name}: boundary detectors on {len(samples)} held-out prompts")
    for col in ("detector", "MAE", "over-trunc", "detected", "mean window"):
        table.add_column(col)
    best_snr = cal.choose([s for s in scores if "rule" not in s.setting], "sparsity", max_over)
    for name, s in (("paper defaults", paper), ("best sparsity (SNR)", best_snr),
                    (f"best sparsity ({best_sp.setting.get('rule', 'snr')})", best_sp),
                    ("best eos_prob", best_eos), ("combined", comb)):  # fmt: skip
        table.add_row(
            name, f"{s.mae:.2f}", f"{s.over:.1%}", f"{s.detected:.1%}", f"{s.mean_window:.1f}"
        )
    console.print(table)
    console.print(f"baseline exact match: {acc:.1%}; end-prob AUC {eos_auc:.3f}")

    k = 8
    curves = {
        f"layer {layer}": aligned_mean(samples, lambda s, layer=layer: s.sparsity[0, layer, 2], k)
        for layer in range(n_layers)
    }
    plots.aligned(curves, out / "sparsity_aligned.png",
                  f"{lm.name}: step-0 sparsity (down input, θ=1e-3) around the true end",
                  "fraction |a| < 1e-3")  # fmt: skip
    ti = ("down", "gate").index(best_sp.setting["tensor"])
    hi = cal.THETAS.index(best_sp.setting["theta"])
    curves = {
        f"layer {layer}": aligned_mean(samples, lambda s, layer=layer: s.sparsity[ti, layer, hi], k)
        for layer in range(n_layers)
    }
    plots.aligned(curves, out / "sparsity_aligned_best.png",
                  f"step-0 sparsity ({best_sp.setting['tensor']}, θ={best_sp.setting['theta']:g})"
                  " around the true end", "sparsity")  # fmt: skip
    plots.aligned({"P(end token)": aligned_mean(samples, lambda s: s.end_prob, k)},
                  out / "end_prob_aligned.png", "step-0 end-token probability around the true end",
                  "probability")  # fmt: skip

    report = {
        "model": lm.name,
        "n": len(samples),
        "gen_length": g,
        "baseline_exact_match": acc,
        "auc": {"thetas": list(cal.THETAS), **aucs, "end_prob": eos_auc},
        "paper_defaults": asdict(paper),
        "best_sparsity": asdict(best_sp),
        "best_sparsity_snr": asdict(best_snr),
        "best_eos_prob": asdict(best_eos),
        "combined": asdict(comb),
        "chosen": asdict(chosen),
    }
    (out / "report.json").write_text(json.dumps(report, indent=2))
    if write:
        config = {k: v for k, v in chosen.setting.items() if k != "margin"}
        sparsity = dict(best_sp.setting)
        meta = {"gen_length": g, "config": config, "sparsity_config": sparsity, "calibration": {
            "n": len(samples), "split": "heldout seed 7", "mae": chosen.mae,
            "over_truncation": chosen.over, "mean_window": chosen.mean_window}}  # fmt: skip
        (folder / "seer.json").write_text(json.dumps(meta, indent=2) + "\n")
        console.print(f"wrote {folder / 'seer.json'}: {config}")
    return report
