"""The trainer's held-out whole-answer check over training steps: the control model's run against
`builtin`'s, one plot.

The text trainer (`training.builtin_v2`) writes `eval step N: {"<family>": share, ..., "all":
share}` into its run's train.log (95 held-out requests, 5 per family, one token per step, the
whole answer right). `builtin`'s first run folder, and its train.log, were lost; its checks are
the ones its model card lists (docs/builtin-v2/MODEL_CARD.md, "Held-out score during training"),
kept in `--reference` (a JSON file: {"label": ..., "source": ..., "checks": {step: share}}).

    python tools/control_curve.py checkpoints/builtin-v2-control/train.log \\
        --reference docs/results/control/builtin-checks.json --out docs/results/control/checks.png

Prints one line per check (the control's, with the families it answers), and writes the plot.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

EVAL = re.compile(r"^eval step (\d+): (\{.*\})$")


def checks(log: Path) -> dict[int, dict[str, float]]:
    """The run's whole-answer checks by step (a step checked twice keeps the last; a line
    that is not a check with its "all" share is skipped)."""
    out = {}
    for line in log.read_text().splitlines():
        if m := EVAL.match(line.strip()):
            try:
                c = json.loads(m[2])
            except ValueError:
                continue
            if isinstance(c, dict) and isinstance(c.get("all"), int | float):
                out[int(m[1])] = c
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path, help="the control run's train.log")
    ap.add_argument("--reference", type=Path, required=True, help="builtin's checks (JSON)")
    ap.add_argument("--out", type=Path, required=True, help="the plot (PNG)")
    args = ap.parse_args(argv)
    for p in (args.log, args.reference):
        if not p.is_file():
            print(f"control_curve: no file {p}", file=sys.stderr)
            return 2
    try:
        ref = json.loads(args.reference.read_text())
        label = str(ref["label"])
        ref_checks = dict(sorted((int(k), float(v)) for k, v in ref["checks"].items()))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        print(
            f"control_curve: {args.reference}: not a checks file ({{label, source, checks: "
            f"{{step: share}}}}): {type(e).__name__}: {e}",
            file=sys.stderr,
        )
        return 2
    ours = checks(args.log)
    if not ours:
        print(f"control_curve: {args.log} has no 'eval step' lines", file=sys.stderr)
        return 2
    for step, c in ours.items():
        answered = ", ".join(f"{k} {v:.0%}" for k, v in c.items() if k != "all" and v > 0)
        print(f"control step {step:>6}: {c['all']:6.1%}  ({answered or 'none'})")
    for step, share in ref_checks.items():
        print(f"{label} step {step:>6}: {share:6.1%}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(list(ours), [100 * c["all"] for c in ours.values()], "o-", ms=3, label="control")
    ax.plot(list(ref_checks), [100 * v for v in ref_checks.values()], "s-", ms=4, label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("whole answers right, % (the trainer's held-out check)")
    ax.set_title(f"Full windows (control) against {label}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
