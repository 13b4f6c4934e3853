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

from seer.errors import SeerError  # noqa: E402


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


def profiles(
    rows: list[dict], out: str | Path, ylabel: str = "step-0 sparsity", detector: dict | None = None
) -> Path:
    """rows: dicts with 'label', 'profile' (W,), optional 'boundary', 'true_end', 'second'
    (W,) with 'second_label': another signal, drawn on a right-hand axis, and 'image' (a path),
    shown left of its row. detector: which curve set the boundary ('signal': profile | second |
    both), its 'label' for the legend and an optional 'threshold' on the second axis.

    One legend for the whole figure, above the first row (never over the data)."""
    n = len(rows)
    images = any(r.get("image") for r in rows)
    fig, axes = plt.subplots(
        n,
        2 if images else 1,
        figsize=(10 if images else 8.5, 1.7 * n + 1.1),
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
    det = detector or {}
    sets = det.get("signal")
    handles: dict = {}
    for ax, row in zip(axes[:, 0], rows, strict=True):
        label = ylabel + (f" (sets the red line: {det['label']})" if sets == "profile" else "")
        (h,) = ax.plot(row["profile"], marker=".", ms=3, lw=1, color="tab:blue", label=label)
        handles.setdefault(label, h)
        if row.get("second") is not None:
            ax2 = ax.twinx()
            second = row["second_label"]
            if sets in ("second", "both"):
                second += f" (sets the red line: {det['label']})"
            (h,) = ax2.plot(row["second"], color="tab:green", lw=1.6, label=second)
            handles.setdefault(second, h)
            if det.get("threshold") is not None:
                h = ax2.axhline(
                    det["threshold"],
                    color="tab:green",
                    ls=":",
                    lw=1,
                    label=f"{row['second_label']} threshold",
                )
                handles.setdefault(h.get_label(), h)
            ax2.set_ylim(-0.05, 1.05)
            ax2.set_ylabel(row["second_label"], fontsize=8, color="tab:green")
        for h in _marks(ax, row.get("boundary"), row.get("true_end")):
            handles.setdefault(h.get_label(), h)
        ax.set_title(row["label"], fontsize=9, loc="left")
        ax.set_ylabel(ylabel, fontsize=8, color="tab:blue")
    axes[-1, 0].set_xlabel("answer position")
    fig.legend(
        handles.values(),
        handles.keys(),
        loc="upper center",
        ncol=2,
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
    top = 1 - (0.1 + 0.2 * ((len(handles) + 1) // 2)) / fig.get_size_inches()[1]
    return _save(fig, out, rect=(0, 0, 1, top))


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


def _marks(ax, boundary: int | None, true_end: int | None) -> list:
    """The detected boundary (red) and the true end (dashed); returns the lines drawn."""
    lines = []
    if boundary is not None:
        lines.append(
            ax.axvline(
                boundary, color="red", ls="-", lw=3, alpha=0.5, label="Seer's boundary (L* - 1)"
            )
        )
    if true_end is not None:  # drawn on top: the two often coincide
        color = "white" if ax.images else "k"
        lines.append(
            ax.axvline(true_end, color=color, ls="--", lw=1.2, label="true end token", zorder=5)
        )
    return lines


def figure_path(out: str | Path) -> tuple[Path, str]:
    """(the file a figure is written to, its format): `out` as given, a PNG when it has no
    extension (``heat`` -> ``heat.png``, as matplotlib would name it) unless it exists and is
    not a regular file (``/dev/stdout``, ``/dev/full``: written there, never beside it); an
    extension matplotlib cannot write is a `SeerError`."""
    out = Path(out)
    if not out.suffix:
        device = out.exists() and not out.is_file()
        return (out if device else out.with_name(out.name + ".png")), "png"
    kind = out.suffix[1:].lower()
    from matplotlib.backend_bases import FigureCanvasBase

    if kind not in FigureCanvasBase.get_supported_filetypes():
        raise SeerError(
            f"cannot write the figure {out}: .{kind} is not an image format "
            "matplotlib writes; use .png, .pdf or .svg"
        )
    return out, kind


def _save(fig, out: str | Path, rect=None) -> Path:
    """Write `fig`; returns the path written (`figure_path`)."""
    try:
        out, kind = figure_path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout(rect=rect)
        fig.savefig(out, dpi=110, format=kind)
    except OSError as e:
        raise SeerError(f"cannot write the figure {out}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
    return out
