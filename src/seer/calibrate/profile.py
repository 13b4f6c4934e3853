"""`seer profile`: the step-0 sparsity heatmap (layers x answer positions) of one prompt.

It marks the boundary Seer detects with the model's defaults (or the given Seer settings) and,
unless `generate=False`, the true end of the answer (from a full-window baseline generation).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from seer import plots
from seer.boundary.probe import step0
from seer.engine.request import seer_config as resolve

if TYPE_CHECKING:
    from seer.lm import DiffusionLM


def profile_prompt(
    lm: DiffusionLM,
    prompt: str,
    out: str | Path,
    gen_length: int | None = None,
    seer: dict | None = None,
    generate: bool = True,
    image=None,
) -> dict:
    """seer: Seer settings over the model's defaults (probe layer, theta, tensor, detector)."""
    cfg = resolve(lm, seer or True)
    p = sampling(lm, gen_length)
    prof = step0(lm, prompt, params=p, thetas=(cfg.theta,), tensors=(cfg.tensor,), image=image)
    sp = prof.sparsity[0, :, 0, 0]  # (n_layers, W)
    detected = None
    true_end = None
    answer = None
    if generate:
        base = lm.generate(prompt, p, image=image)
        true_end, answer = base.stats.tokens, base.text
    seer_run = lm.generate(prompt, p, seer=cfg, image=image)
    if seer_run.boundary is not None and seer_run.boundary.index is not None:
        detected = seer_run.boundary.index
    title = f"{lm.name}: step-0 sparsity (θ={cfg.theta:g}, {cfg.tensor}) — {prompt[:60]}"
    path = plots.heatmap(sp.float(), out, title, boundary=detected, true_end=true_end)
    return {
        "png": str(path),
        "detected_index": detected,
        "true_end": true_end,
        "answer": answer,
        "sparsity": sp,
    }


def sampling(lm: DiffusionLM, gen_length: int | None = None):
    """The model's default sampling, with `gen_length` when given."""
    return lm.sampling(gen_length=gen_length)
