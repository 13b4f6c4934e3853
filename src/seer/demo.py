"""`seer demo`: a built-in model answers fixed requests with and without Seer.

By default the built-in *multimodal* model (LaViDa-LLaDA layout) answers questions about the
sample images shipped in the package (`assets/images`: held-out requests of its own task, one
per family from a one-token answer to a long one, `draw_samples`; a model folder may carry its
own in `images/`, as ``builtin-vqa-v1`` does); `--text` (or `--model` with a text model) runs
the text model on held-out requests of its own task, one per family (`text_requests`).
Shows progress from its first second (loading, warm-up, each phase; on a terminal), then prints
a table that fits 80 columns (request, answer, true length, L*, kept window, seconds, speedup,
the same answer as without Seer?, the reference answer?) and writes a PNG with each image, its
step-0 profiles (P(end) and the calibrated sparsity) and the detected boundary and true end
marked; the legend names the signal that set the boundary. Every window length is
warmed up first (one denoising step at each), so the timings compare steady states rather than
first-call costs. Each timing is the fastest of up to `repeats` runs: the baseline runs again
only while its runs have taken under `MIN_SECONDS` (a full 128 window runs once), and Seer runs
as many times as the baseline did, so neither side gets more tries. The times are the denoising
loop's; the image encoding (the same with and without Seer) is reported once.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from textwrap import shorten
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

if TYPE_CHECKING:
    from seer.data import Example
    from seer.lm import DiffusionLM

# the text model's demo families, one-token answers to long ones (`synthetic.lines`)
TEXT_FAMILIES = ("count", "who", "copy", "reverse", "shuffle", "sum", "sudoku", "long_copy")


def text_requests(model) -> list:
    """Held-out requests of a text model's own task (`seer.data.builtin.source_for`: the v2 tasks
    for a model that is not built in): the first of each of TEXT_FAMILIES, or of every family of
    a task without them (``builtin-v1``), at most eight."""
    from seer.data import builtin_examples
    from seer.data.builtin import source_for

    firsts: dict[str | None, Example] = {}
    for ex in builtin_examples(source_for(model, False), 60, part="eval"):
        firsts.setdefault(ex.family, ex)
    families = TEXT_FAMILIES if set(TEXT_FAMILIES) <= set(firsts) else list(firsts)
    return [firsts[f] for f in families][:8]


MIN_SECONDS = 0.5  # a timing is repeated (up to `repeats` runs) until its runs took this long
# the families of the package's sample images (`draw_samples`), one-token answers to long ones
IMAGE_FAMILIES = ("colour", "count", "number", "read", "chart", "table", "list", "describe")


def sample_images(model=None) -> list[dict]:
    """Sample images: dicts with file (path), family, question, answer, and for the v2 task the
    family's metric and reference (`seer.data.score`). The package's (`assets/images`), or those
    the folder of `model` carries in `images/` (``builtin-vqa-v1``: its own task's six, the
    package's until the VQA model v2 shipped)."""
    folder = Path(str(resources.files("seer") / "assets" / "images"))
    if model is not None:
        from seer.models.loader import model_folder

        own = Path(model_folder(model)) / "images"
        folder = own if (own / "samples.json").is_file() else folder
    samples = json.loads((folder / "samples.json").read_text())
    return [{**s, "file": folder / s["file"]} for s in samples]


def draw_samples(folder, source: str = "builtin-vqa", families=IMAGE_FAMILIES) -> list[Path]:
    """Write sample images into `folder` (`tools/draw_samples.py` draws the package's): the
    first request of each of `families` on the evaluation side of `source`'s held-out requests
    (`seer.data.builtin`: never trained on, never calibrated on), as ``NN_family.png`` and
    ``samples.json`` (file, family, question, prompt, answer, metric, reference). The files a
    previous ``samples.json`` listed are removed first."""
    from seer.data import builtin_examples
    from seer.errors import SeerError
    from seer.models.tokens import IMAGE_TOKEN

    firsts: dict[str | None, Example] = {}
    for ex in builtin_examples(source, 100, part="eval"):
        firsts.setdefault(ex.family, ex)
    missing = [f for f in families if f not in firsts]
    if missing:  # checked before anything is removed
        raise SeerError(f"{source} has no held-out {', '.join(missing)} request to draw")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    listing = folder / "samples.json"
    if listing.is_file():
        for s in json.loads(listing.read_text()):
            (folder / s["file"]).unlink(missing_ok=True)
    paths, records = [], []
    for i, family in enumerate(families):
        ex = firsts[family]
        path = folder / f"{i:02d}_{family}.png"
        assert ex.image is not None and not isinstance(ex.image, str)  # the task draws PIL images
        ex.image.save(path, optimize=True)
        paths.append(path)
        records.append(
            {
                "file": path.name,
                "family": family,
                "question": ex.prompt,
                "prompt": f"{IMAGE_TOKEN}\n{ex.prompt}",
                "answer": ex.answer,
                "metric": ex.metric,
                "reference": ex.reference,
            }
        )
    listing.write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return paths


LEGEND = (
    "end: the baseline's answer length (tokens); L*: Seer's boundary; win: the window kept; "
    "speed: baseline s / Seer s; =base: Seer's answer equals the baseline's; =ref: Seer's "
    "answer equals the reference answer"
)


def run_demo(
    model: str | Path | None = None,
    out: str | Path = "seer-demo.png",
    repeats: int = 3,
    text: bool = False,
):
    import seer
    from seer import progress

    console = progress.console()
    name = model or ("builtin" if text else "builtin-vqa")
    from seer.sampling import BUILTIN_MODELS, builtin_folder

    where = builtin_folder(str(name)) if str(name) in BUILTIN_MODELS else None
    with progress.status(f"loading {name}" + (f" from {where}" if where else ""), first=True):
        lm = seer.load(name)
        from seer import plots
        from seer.boundary.config import SeerConfig
        from seer.engine.request import seer_config

    cfg = seer_config(lm, True)
    sp_cfg = seer_config(
        lm, SeerConfig.from_dict(lm.meta.get("seer", {}).get("sparsity_config", {}))
    )
    g = lm.sampling().gen_length  # the model's default window
    if lm.multimodal:  # (label, prompt, image, reference: its answer, or an Example to score)
        requests = [
            (s["question"], s["question"], s["file"], _reference(s)) for s in sample_images(name)
        ]
    else:  # a chat's prompt is its ids (the in-context turn too); the reference is its Example
        from seer.batch import encoder

        encode = encoder(lm)
        requests = [(ex.prompt, encode(lm, ex), None, ex) for ex in text_requests(name)]
    console.print(f"[bold]{lm.name}[/]: gen_length {g}, Seer {cfg.signal} detector")
    lengths = range(cfg.bucket, g + 1, cfg.bucket)
    for length in progress.track(lengths, "warming up every window length"):
        blocks = -(-length // (lm.sampling(gen_length=length).block_length or length))
        lm.generate(requests[0][1], image=requests[0][2], gen_length=length, steps=blocks)
    wide = console.width >= 100
    table = Table(
        title=f"Seer on {lm.name} (greedy, steps = gen_length)",
        box=box.SIMPLE_HEAD,
        caption=LEGEND,
        caption_justify="left",
    )
    table.add_column("request", ratio=1, overflow="fold")
    table.add_column("answer (Seer)", ratio=1, overflow="fold")
    numbers = ("end", "L*", "win") + (("base s",) if wide else ()) + ("Seer s", "speed")
    for col in (*numbers, "=base", "=ref"):
        table.add_column(col, justify="right", no_wrap=True)
    rows, t_base, t_seer, t_image = [], 0.0, 0.0, 0.0
    for label, prompt, image, reference in progress.track(
        requests, "baseline and Seer, each request"
    ):
        if image is not None:
            t0 = time.perf_counter()
            lm.prompt(prompt, image)
            t_image += time.perf_counter() - t0
        base, runs = _fastest(lm, prompt, image, g, None, repeats)
        fast, _ = _fastest(lm, prompt, image, g, True, runs, until=None)  # as many runs
        t_base, t_seer = t_base + base.stats.seconds, t_seer + fast.stats.seconds
        b = fast.boundary
        window = f"{fast.stats.window}" + (f"↑{fast.stats.grown}" if fast.stats.grown else "")
        times = (f"{base.stats.seconds:.3f}",) if wide else ()
        table.add_row(
            f"{Path(image).stem}\n{label}" if image is not None else shorten(label, 120),
            fast.text,
            str(base.stats.tokens),
            "-" if b is None or b.length is None else str(b.length),
            window,
            *times,
            f"{fast.stats.seconds:.3f}",
            f"{base.stats.seconds / fast.stats.seconds:.1f}x",
            _yes(fast.token_ids == base.token_ids),
            _yes(_right(fast.text, reference)),
        )
        rows.append((label, prompt, image, b, base.stats.tokens))
    profiles = [
        _profile_row(lm, label, prompt, image, g, sp_cfg, b, end)
        for label, prompt, image, b, end in progress.track(rows, "step-0 profiles for the figure")
    ]
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
    with progress.status("drawing the figure"):
        png = plots.profiles(profiles, out, ylabel=label, detector=_detector(cfg))
    console.print(f"profiles with detected boundaries (red) and true ends (dashed): {png}")
    return png


def _detector(cfg) -> dict:
    """What sets the red line, for the figure's legend: the signal and its threshold."""
    if cfg.signal == "eos_prob":
        return {
            "signal": "second",
            "threshold": cfg.eos_tau,
            "label": f"P(end) ≥ {cfg.eos_tau:g} for {cfg.eos_run} positions",
        }
    if cfg.signal == "sparsity":
        return {"signal": "profile", "threshold": None, "label": f"sparsity {cfg.rule} rule"}
    return {"signal": "both", "threshold": cfg.eos_tau, "label": "sparsity and P(end)"}


def _reference(sample: dict):
    """A sample's reference: its answer, or an Example scored by its family's metric."""
    if sample.get("metric") is None:
        return sample["answer"]
    from seer.data import Example

    return Example(
        sample["file"].stem,
        sample["question"],
        answer=sample["answer"],
        metric=sample["metric"],
        reference=sample["reference"],
    )


def _right(text: str, reference) -> bool:
    """The answer is right: its family's check for an Example, else the reference's words."""
    if isinstance(reference, str):
        return " ".join(text.split()) == reference
    from seer.data import score

    return score(reference, text) == 1.0


def _yes(ok: bool) -> str:
    return "yes" if ok else "[red]NO[/]"


def _profile_row(
    lm: DiffusionLM, label: str, prompt, image, g: int, sp_cfg, boundary, true_end: int
) -> dict:
    """Step-0 sparsity (the calibrated sparsity setting) and P(end token) for one request."""
    from seer.boundary.probe import step0

    prof = step0(
        lm,
        prompt,
        g,
        layers=(sp_cfg.layer,),
        thetas=(sp_cfg.theta,),
        tensors=(sp_cfg.tensor,),
        image=image,
    )
    return {
        "label": f"{shorten(label, 70)}  (true end {true_end})",
        "image": None if image is None else str(image),
        "profile": prof.sparsity[0, 0, 0, 0].tolist(),
        "second": prof.end_prob[0].tolist(),
        "second_label": "P(end)",
        "boundary": None if boundary is None else boundary.index,
        "true_end": true_end,
    }


def _fastest(
    lm: DiffusionLM, prompt, image, g: int, seer, repeats: int, until: float | None = MIN_SECONDS
):
    """(the fastest of up to `repeats` generations, how many ran): they stop once they took
    `until` seconds (None: all `repeats` run), so Seer's timing is the fastest of as many runs
    as the baseline's."""
    best, spent, runs = None, 0.0, 0
    for _ in range(max(1, repeats)):
        gen = lm.generate(prompt, image=image, gen_length=g, seer=seer)
        spent, runs = spent + gen.stats.seconds, runs + 1
        best = gen if best is None or gen.stats.seconds < best.stats.seconds else best
        if until is not None and spent >= until:
            break
    return best, runs
