"""Figures: step-0 sparsity heatmaps and profiles with detected boundaries and true ends.

matplotlib with the Agg backend (no screen needed); every function writes one PNG and returns
its path.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402


def heatmap(
    sparsity: torch.Tensor,
    out: str | Path,
    title: str = "",
    boundary: int | None = None,
    true_end: int | None = None,
    tokens: list[str] | None = None,
) -> Path:
    """sparsity: (n_layers, W) -> layers x positions heatmap (the paper's Figure 12 layout)."""
    n_layers, w = sparsity.shape
    fig, ax = plt.subplots(figsize=(max(6, w * 0.16), max(2.5, n_layers * 0.35 + 1)))
    im = ax.imshow(sparsity.numpy(), aspect="auto", cmap="viridis", origin="lower")
    fig.colorbar(im, ax=ax, label="fraction |a| < θ")
    ax.set_xlabel("answer position")
    ax.set_ylabel("layer")
    _marks(ax, boundary, true_end)
    if tokens is not None and w <= 96:
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=6)
    ax.set_title(title, fontsize=9)
    return _save(fig, out)


def profiles(rows: list[dict], out: str | Path, ylabel: str = "step-0 sparsity") -> Path:
    """rows: dicts with 'label', 'profile' (W,), optional 'boundary', 'true_end', 'second'
    (W,) with 'second_label': another signal, drawn on a right-hand axis, and 'image' (a path),
    shown left of its row."""
    n = len(rows)
    images = any(r.get("image") for r in rows)
    fig, axes = plt.subplots(
        n,
        2 if images else 1,
        figsize=(9.5 if images else 8, 1.6 * n + 0.6),
        squeeze=False,
        gridspec_kw={"width_ratios": [1, 6]} if images else None,
    )
    if images:
        for ax, row in zip(axes[:, 0], rows, strict=True):
            ax.axis("off")
            if row.get("image"):
                from PIL import Image

                ax.imshow(Image.open(row["image"]).convert("RGB"))
        axes = axes[:, 1:]
    for ax in axes[1:, 0]:
        ax.sharex(axes[0, 0])
    for ax, row in zip(axes[:, 0], rows, strict=True):
        ax.plot(row["profile"], marker=".", lw=1, label=ylabel)
        if row.get("second") is not None:
            ax2 = ax.twinx()
            ax2.plot(row["second"], color="tab:green", lw=1, alpha=0.8, label=row["second_label"])
            ax2.set_ylim(-0.05, 1.05)
            ax2.set_ylabel(row["second_label"], fontsize=7, color="tab:green")
        _marks(ax, row.get("boundary"), row.get("true_end"))
        ax.set_title(row["label"], fontsize=8, loc="left")
        ax.set_ylabel(ylabel, fontsize=7)
    axes[-1, 0].set_xlabel("answer position")
    axes[0, 0].legend(loc="upper left", fontsize=7)
    return _save(fig, out)


def aligned(curves: dict[str, torch.Tensor], out: str | Path, title: str, ylabel: str) -> Path:
    """curves: label -> (2K+1,) mean signal at offsets -K..K from the true end (offset 0)."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for label, c in curves.items():
        k = (c.shape[0] - 1) // 2
        ax.plot(range(-k, k + 1), c.numpy(), marker=".", lw=1, label=label)
    ax.axvline(0, color="k", ls="--", lw=0.8, label="end token")
    ax.set_xlabel("position relative to the true end token")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out)


def _marks(ax, boundary: int | None, true_end: int | None) -> None:
    if boundary is not None:
        ax.axvline(boundary, color="red", ls="-", lw=3, alpha=0.5, label="detected (L* - 1)")
    if true_end is not None:  # drawn on top: the two often coincide
        color = "white" if ax.images else "k"
        ax.axvline(true_end, color=color, ls="--", lw=1.2, label="true end token", zorder=5)


def _save(fig, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
