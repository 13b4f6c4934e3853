"""`seer profile`: the step-0 sparsity heatmap (layers x answer positions) of one prompt.

It marks the boundary Seer detects with the model's defaults and, unless `--no-generate`, the
true end of the answer (from a full-window baseline generation).
"""

from __future__ import annotations

from pathlib import Path

from seer.boundary.probe import sparsity_profiles
from seer.boundary.truncation import resolve
from seer.eval import plots


def profile_prompt(
    lm,
    prompt: str,
    out: str | Path,
    gen_length: int = 64,
    theta: float | None = None,
    tensor: str | None = None,
    generate: bool = True,
    image=None,
) -> dict:
    cfg = resolve(lm, True)
    theta = cfg.theta if theta is None else theta
    tensor = cfg.tensor if tensor is None else tensor
    canvas = lm.canvas(prompt, _params(gen_length), image)
    sp = sparsity_profiles(
        lm.model,
        canvas.x,
        canvas.prompt_len,
        gen_length,
        theta=theta,
        tensor=tensor,
        prompt_embeds=canvas.prompt_embeds,
    )[:, 0]  # (n_layers, W)
    detected = None
    true_end = None
    answer = None
    if generate:
        base = lm.generate(prompt, gen_length=gen_length, image=image)
        true_end, answer = base.stats.tokens, base.text
    seer_run = lm.generate(prompt, gen_length=gen_length, seer=True, image=image)
    if seer_run.boundary is not None and seer_run.boundary.index is not None:
        detected = seer_run.boundary.index
    title = f"{lm.name}: step-0 sparsity (θ={theta:g}, {tensor}) — {prompt[:60]}"
    path = plots.heatmap(sp.float(), out, title, boundary=detected, true_end=true_end)
    return {
        "png": str(path),
        "detected_index": detected,
        "true_end": true_end,
        "answer": answer,
        "sparsity": sp,
    }


def _params(gen_length: int):
    from seer.config import SamplingParams

    return SamplingParams(gen_length=gen_length)
