"""`seer calibrate`: measure the step-0 signals of a model on the demo tasks' held-out split,
report how well each separates answer from padding, and choose per-model Seer defaults.

`--task text|vqa` picks the held-out requests (`calibrate.TASKS`; default: vqa, image
questions, for a multimodal model, else the text tasks). Writes to `--out`: report.json (AUCs,
the sweep's best settings, the paper's defaults scored), sparsity_aligned.png (mean sparsity
around the true end, per layer), end_prob_aligned.png, and, with `--write`, the chosen settings
to the model's seer.json, which `seer.load` picks up. Keys of an existing seer.json that the
calibration does not set (e.g. a multimodal model's `system_prompt`) are kept.

torch, rich and the library are imported inside the functions: `seer --help` stays fast.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from seer.commands import options

PAPER = dict(signal="sparsity", tensor="down", layer=3, theta=1e-3, direction="rising",
             tau_jump=0.03, gamma=0.6)  # fmt: skip
SEED = 7  # held-out examples of the calibration (the benchmark uses another seed)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure the step-0 signals on the demo tasks' held-out split and choose Seer "
        "defaults",
    )
    p.add_argument("--model", default=None, help="model folder (default: builtin; with --task "
                   "vqa builtin-vqa)")  # fmt: skip
    p.add_argument("--n", type=options.POSITIVE, default=300, help="held-out requests")
    p.add_argument("--out", default="calibration", help="folder for the report and plots")
    p.add_argument("--write", action="store_true", help="store the choice in the model's seer.json")
    p.add_argument("--max-over", type=options.number(float, 0, 1), default=0.0,
                   help="over-truncation allowed (share, 0..1)")  # fmt: skip
    p.add_argument("--task", choices=("text", "vqa"), default=None,
                   help="held-out requests: text prompts or image questions (default: vqa for a "
                   "multimodal model, else text)")  # fmt: skip
    p.set_defaults(func=main)


def main(args) -> int:
    run_calibration(args.model, args.n, args.out, args.write, args.max_over, args.task)
    return 0


def aligned_mean(samples, signal, k: int = 8):
    """Mean of signal(sample) at offsets -k..k from the true end token (NaN-aware)."""
    import torch

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
    from seer.boundary import calibrate as cal
    from seer.boundary.detector import ThresholdRule
    from seer.boundary.truncation import SeerConfig

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


def default_model(task: str | None) -> str:
    """The built-in model for a task: the multimodal one for vqa, else the text one."""
    return "builtin-vqa" if task == "vqa" else "builtin"


def run_calibration(
    model, n: int, out, write: bool, max_over: float, task: str | None = None
) -> dict:
    from rich.console import Console
    from rich.table import Table

    import seer
    from seer import progress
    from seer.boundary import calibrate as cal
    from seer.eval import plots

    console = Console()
    from seer.models.loader import model_folder

    folder = model_folder(model or default_model(task))
    with progress.status(f"loading {model or folder.name}"):
        lm = seer.load(folder)
    task = cal.task_for(lm, task)
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    examples = cal.heldout_examples(task, n, seed=SEED, part="calib")
    with progress.bar(f"step-0 profiles + baseline answers ({task})", len(examples)) as advance:
        samples = cal.collect(lm, examples, g, progress=advance)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    acc = sum(s.correct for s in samples) / len(samples)
    per_family = {
        f: sum(s.correct for s in samples if s.family == f) / sum(s.family == f for s in samples)
        for f in sorted({s.family for s in samples})
    }

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
    # the paper's setting (layer 3: None for models with fewer layers)
    paper = next((s for s in scores if all(s.setting.get(k) == v for k, v in PAPER.items())), None)
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

    table = Table(title=f"{lm.name}: boundary detectors on {len(samples)} held-out {task} requests")
    for col in ("detector", "MAE", "over-trunc", "detected", "mean window"):
        table.add_column(col)
    best_snr = cal.choose([s for s in scores if "rule" not in s.setting], "sparsity", max_over)
    for name, s in (("paper defaults", paper), ("best sparsity (SNR)", best_snr),
                    (f"best sparsity ({best_sp.setting.get('rule', 'snr')})", best_sp),
                    ("best eos_prob", best_eos), ("combined", comb)):  # fmt: skip
        if s is None:
            continue
        table.add_row(
            name, f"{s.mae:.2f}", f"{s.over:.1%}", f"{s.detected:.1%}", f"{s.mean_window:.1f}"
        )
    console.print(table)
    fams = ", ".join(f"{f} {v:.0%}" for f, v in per_family.items())
    console.print(f"baseline exact match: {acc:.1%} ({fams}); end-prob AUC {eos_auc:.3f}")

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
        "task": task,
        "n": len(samples),
        "gen_length": g,
        "baseline_exact_match": acc,
        "baseline_exact_match_per_family": per_family,
        "auc": {"thetas": list(cal.THETAS), **aucs, "end_prob": eos_auc},
        "paper_defaults": None if paper is None else asdict(paper),
        "best_sparsity": asdict(best_sp),
        "best_sparsity_snr": asdict(best_snr),
        "best_eos_prob": asdict(best_eos),
        "combined": asdict(comb),
        "chosen": asdict(chosen),
    }
    (out / "report.json").write_text(json.dumps(report, indent=2))
    if write:
        config = {k: v for k, v in chosen.setting.items() if k != "margin"}
        calibration = {"n": len(samples), "task": task, "split": f"calib part, seed {SEED}",
                       "mae": chosen.mae, "over_truncation": chosen.over,
                       "mean_window": chosen.mean_window}  # fmt: skip
        path = write_defaults(folder, g, config, dict(best_sp.setting), calibration)
        console.print(f"wrote {path}: {config}")
    return report


def write_defaults(folder: Path, g: int, config: dict, sparsity: dict, calibration: dict) -> Path:
    """Store the calibrated defaults in folder/seer.json, keeping the keys it sets nothing for."""
    path = folder / "seer.json"
    meta = json.loads(path.read_text()) if path.is_file() else {}
    meta.update(gen_length=g, config=config, sparsity_config=sparsity, calibration=calibration)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return path
