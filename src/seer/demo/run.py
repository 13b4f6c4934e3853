"""`seer demo`: a built-in model answers fixed requests with and without Seer.

By default the built-in *multimodal* model (LaViDa-LLaDA layout) answers questions about the
sample images shipped in the package (`assets/images`, held-out examples it never saw in
training); `--text` (or `--model` with a text model) runs the text model on fixed prompts.
Prints a table (image, question, answer, true length, L*, kept window, seconds, speedup, same
answer as without Seer?) and writes a PNG with each image, its step-0 profiles (P(end) and the
calibrated sparsity) and the detected boundary and true end marked. Every window length is
warmed up first, so the timings compare steady states rather than first-call costs. The times
are the denoising loop's; the image encoding (the same with and without Seer) is reported once.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

PROMPTS = (
    "what color is the cup ? the cup is red , the box is blue",
    "how many items : cat dog cow hen",
    "add 4 and 5",
    "spell elephant",
    "copy : red ball green hat blue cup",
    "repeat star 12 times",
    "describe : red ball , blue cube , green shoe , pink hat",
    "describe : red ball , blue cube , green shoe , pink hat , gray box , white key , black bag",
)


def builtin_path(kind: str = "text") -> Path:
    """Folder of a built-in model shipped in the package: "text" or "vqa" (multimodal)."""
    name = {"text": "builtin", "vqa": "builtin-vqa"}[kind]
    return Path(str(resources.files("seer") / "assets" / name))


def sample_images() -> list[dict]:
    """The package's sample images: dicts with file (path), family, question, answer."""
    folder = Path(str(resources.files("seer") / "assets" / "images"))
    samples = json.loads((folder / "samples.json").read_text())
    return [{**s, "file": folder / s["file"]} for s in samples]


def run_demo(
    model: str | Path | None = None,
    out: str | Path = "seer-demo.png",
    repeats: int = 3,
    text: bool = False,
):
    import seer
    from seer.boundary.truncation import SeerConfig, resolve
    from seer.eval import plots

    console = Console()
    lm = seer.load(model or builtin_path("text" if text else "vqa"))
    cfg = resolve(lm, True)
    sp_cfg = SeerConfig.from_dict(lm.meta.get("seer", {}).get("sparsity_config", {}))
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    if lm.multimodal:
        requests = [(s["question"], s["file"]) for s in sample_images()]
    else:
        requests = [(p, None) for p in PROMPTS]
    console.print(f"[bold]{lm.name}[/]: gen_length {g}, Seer {cfg.signal} detector")
    for length in range(cfg.bucket, g + 1, cfg.bucket):  # warm every window shape
        lm.generate(requests[0][0], image=requests[0][1], gen_length=length)
    table = Table(title=f"Seer on {lm.name} (greedy, steps = gen_length)")
    cols = ("image",) if lm.multimodal else ()
    cols += ("prompt", "answer (Seer)", "true len", "L*", "window", "base s", "Seer s")
    for col in cols:
        table.add_column(col, overflow="fold")
    table.add_column("speedup", justify="right")
    table.add_column("same?")
    rows, t_base, t_seer, t_image = [], 0.0, 0.0, 0.0
    for prompt, image in requests:
        if image is not None:
            t0 = time.perf_counter()
            lm.prompt(prompt, image)
            t_image += time.perf_counter() - t0
        runs = [lm.generate(prompt, image=image, gen_length=g) for _ in range(repeats)]
        base = min(runs, key=_secs)
        runs = [lm.generate(prompt, image=image, gen_length=g, seer=True) for _ in range(repeats)]
        fast = min(runs, key=_secs)
        t_base, t_seer = t_base + base.stats.seconds, t_seer + fast.stats.seconds
        same = fast.token_ids == base.token_ids
        b = fast.boundary
        table.add_row(
            *((Path(image).name,) if lm.multimodal else ()),
            prompt,
            fast.text,
            str(base.stats.tokens),
            "-" if b is None or b.length is None else str(b.length),
            f"{fast.stats.window}" + (f" (guard x{fast.stats.grown})" if fast.stats.grown else ""),
            f"{base.stats.seconds:.3f}",
            f"{fast.stats.seconds:.3f}",
            f"{base.stats.seconds / fast.stats.seconds:.1f}x",
            "yes" if same else "[red]NO[/]",
        )
        rows.append(_profile_row(lm, prompt, image, g, sp_cfg, b, base.stats.tokens))
    console.print(table)
    console.print(
        f"total denoising: baseline {t_base:.2f} s, Seer {t_seer:.2f} s, "
        f"speedup {t_base / t_seer:.2f}x"
    )
    if lm.multimodal:
        console.print(
            f"image encoding (tower + projector + splice, same for both): {t_image:.2f} s"
        )
    label = f"sparsity L{sp_cfg.layer} θ={sp_cfg.theta:g}"
    png = plots.profiles(rows, out, ylabel=label)
    console.print(f"profiles with detected boundaries (red) and true ends (dashed): {png}")
    return png


def _profile_row(lm, prompt: str, image, g: int, sp_cfg, boundary, true_end: int) -> dict:
    """Step-0 sparsity (the calibrated sparsity setting) and P(end token) for one request."""
    from seer.boundary.detector import end_probability
    from seer.boundary.probe import SparsityProbe
    from seer.config import SamplingParams

    p = SamplingParams(gen_length=g).with_defaults(lm.default_rule)
    canvas = lm.canvas(prompt, p, image)
    probe = SparsityProbe((sp_cfg.layer,), sp_cfg.theta, sp_cfg.tensor)
    probe.attach(lm.model, canvas.prompt_len, g, 1)
    try:
        logits = lm.loop.forward(canvas, p, 0, g)
    finally:
        probe.detach()
    return {
        "label": f"{prompt[:70]}  (true end {true_end})",
        "image": None if image is None else str(image),
        "profile": probe.profiles[sp_cfg.layer][0].tolist(),
        "second": end_probability(logits, lm.tokens.enders)[0].tolist(),
        "second_label": "P(end)",
        "boundary": None if boundary is None else boundary.index,
        "true_end": true_end,
    }


def _secs(gen) -> float:
    return gen.stats.seconds
