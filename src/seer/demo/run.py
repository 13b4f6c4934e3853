"""`seer demo`: the built-in model answers fixed prompts with and without Seer.

Prints a table (prompt, answer, true length, L*, kept window, seconds, speedup, same answer?)
and writes a PNG of the step-0 profiles at the detection layer with the detected boundaries and
the true ends marked. Every window length is warmed up first, so the timings compare steady
states rather than first-call costs.
"""

from __future__ import annotations

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


def builtin_path() -> Path:
    """Folder of the built-in model shipped in the package."""
    return Path(str(resources.files("seer") / "assets" / "builtin"))


def run_demo(model: str | Path | None = None, out: str | Path = "seer-demo.png", repeats: int = 3):
    import seer
    from seer.boundary.truncation import SeerConfig, resolve
    from seer.eval import plots

    console = Console()
    lm = seer.load(model or builtin_path())
    cfg = resolve(lm, True)
    sp_cfg = SeerConfig.from_dict(lm.meta.get("seer", {}).get("sparsity_config", {}))
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    console.print(f"[bold]{lm.name}[/]: gen_length {g}, Seer {cfg.signal} detector")
    for length in range(cfg.bucket, g + 1, cfg.bucket):  # warm every window shape
        lm.generate(PROMPTS[0], gen_length=length)
    table = Table(title="Seer on the built-in model (greedy, steps = gen_length)")
    for col in ("prompt", "answer (Seer)", "true len", "L*", "window", "base s", "Seer s"):
        table.add_column(col, overflow="fold")
    table.add_column("speedup", justify="right")
    table.add_column("same?")
    rows, t_base, t_seer = [], 0.0, 0.0
    for prompt in PROMPTS:
        base = min((lm.generate(prompt, gen_length=g) for _ in range(repeats)), key=_secs)
        fast = min(
            (lm.generate(prompt, gen_length=g, seer=True) for _ in range(repeats)), key=_secs
        )
        t_base, t_seer = t_base + base.stats.seconds, t_seer + fast.stats.seconds
        same = fast.token_ids == base.token_ids
        b = fast.boundary
        table.add_row(
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
        rows.append(_profile_row(lm, prompt, g, sp_cfg, b, base.stats.tokens))
    console.print(table)
    console.print(
        f"total: baseline {t_base:.2f} s, Seer {t_seer:.2f} s, speedup {t_base / t_seer:.2f}x"
    )
    label = f"sparsity L{sp_cfg.layer} θ={sp_cfg.theta:g}"
    png = plots.profiles(rows, out, ylabel=label)
    console.print(f"profiles with detected boundaries (red) and true ends (dashed): {png}")
    return png


def _profile_row(lm, prompt: str, g: int, sp_cfg, boundary, true_end: int) -> dict:
    """Step-0 sparsity (the calibrated sparsity setting) and P(end token) for one prompt."""
    from seer.boundary.detector import end_probability
    from seer.boundary.probe import SparsityProbe
    from seer.config import SamplingParams
    from seer.diffusion.loop import make_canvas

    canvas = make_canvas([lm.encode(prompt)], g, lm.tokens, lm.device)
    probe = SparsityProbe((sp_cfg.layer,), sp_cfg.theta, sp_cfg.tensor)
    probe.attach(lm.model, canvas.prompt_len, g, 1)
    try:
        logits = lm.loop.forward(canvas, SamplingParams(gen_length=g), 0, g)
    finally:
        probe.detach()
    return {
        "label": f"{prompt[:70]}  (true end {true_end})",
        "profile": probe.profiles[sp_cfg.layer][0].tolist(),
        "second": end_probability(logits, lm.tokens.enders)[0].tolist(),
        "second_label": "P(end)",
        "boundary": None if boundary is None else boundary.index,
        "true_end": true_end,
    }


def _secs(gen) -> float:
    return gen.stats.seconds
