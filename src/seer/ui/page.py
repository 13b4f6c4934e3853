"""The Gradio page: one prompt (and image), baseline and Seer side by side, step by step.

The page runs nothing itself: each side is one engine `Request` submitted to the server's
engine thread (`seer.serve.worker`), with `on_step` posting the engine's `StepView`s to the
page's event loop; the page renders them (`render.py`) as they come. The baseline runs first,
then Seer, so their clocks do not share the machine. The step-0 profile is the one Seer's
detector saw (`BoundaryReport.profile`, from `seer.boundary`'s probe), drawn by
`seer.plots` with the detected boundary and the baseline's true end.

The prompt and upload go through the server's preparer (`seer.serve.prepare`) as an API
request's do: the same prompt-length bound and image limits (bytes, pixels, decoding in its
threads). Every mistake (empty prompt, a prompt over the bound, an upload that is not an image
or too large, a window of 0, an option out of range) is one line (a `SeerError`), shown in the
page's message area; the server goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from seer.boundary.config import SeerConfig
from seer.engine.request import Request, StepView, seer_config
from seer.engine.request import resolve as resolve_request
from seer.errors import SeerError
from seer.sampling import SamplingParams
from seer.serve.errors import APIError
from seer.serve.prepare import Prompt
from seer.serve.worker import Done, Failed, Ticket
from seer.ui import render
from seer.ui.widgets import widget

if TYPE_CHECKING:
    from seer.lm import DiffusionLM


@dataclass(slots=True)
class Options:
    """What the page's option fields hold (None: the model's default)."""

    gen_length: int | None  # the answer window
    steps: int | None  # denoising steps over the window
    tokens_per_step: int | None  # instead of steps (0 / None: use steps): window / it steps
    block_length: int | None  # semi-AR block
    threshold: float | None  # Fast-dLLM parallel decoding (0 / None: off)
    cache: str  # none | prefix | dual | prefix_lm | dpad
    signal: str  # Seer's signal: sparsity | eos_prob | combined

    def sampling(self, lm: DiffusionLM):
        """The request's `SamplingParams` (the model's defaults under the fields given)."""
        steps = self.steps
        if self.tokens_per_step:
            g = self.gen_length or lm.sampling().gen_length
            k = self.tokens_per_step
            if k < 1 or g % k:
                raise SeerError(f"tokens per step must divide the window ({g}); got {k}")
            steps = g // k
        return lm.sampling(
            gen_length=self.gen_length,
            steps=steps,
            block_length=self.block_length,
            threshold=self.threshold or None,
            cache=self.cache or None,
        )


class Page:
    """The page's state: the model, the server's service (engine thread), token labels."""

    def __init__(self, lm: DiffusionLM, service) -> None:
        self.lm, self.service = lm, service
        self.labels: dict[int, str] = {}
        self.plots = Path(tempfile.mkdtemp(prefix="seer-ui-"))  # the profile PNGs
        self.drawn = 0

    def label(self, ids: list[int]) -> dict[int, str]:
        """Token id -> its text on a chip (decoded once per id)."""
        new = [t for t in set(ids) if t not in self.labels]
        tok, tokens = self.lm.tokenizer, self.lm.tokens
        for t in new:
            if t in tokens.enders:
                text = "EOS" if t == tokens.eos else "EOT"
            elif tok is None:
                text = str(t)
            else:
                text = str(tok.decode([t])).strip() or str(tok.convert_ids_to_tokens(t) or t)
            self.labels[t] = text
        return self.labels

    async def prompt(self, text: str, image: str | None, params):
        """The prompt (and uploaded image) made ready by the server's preparer, as an API
        request's is: the same prompt-length bound, image size and pixel limits, decoding off
        the engine's thread. A prompt or image over them is one `SeerError` line at once."""
        try:
            return await self.service.preparer.prepare(Prompt(text, True, image), params)
        except APIError as e:
            raise SeerError(e.message) from None

    async def side(self, request: Request, every: bool = False):
        """Run one request in the engine; yields its `StepView`s, then its result. Unless
        `every`, views that queued up while the page was busy are skipped but the last."""
        if self.service.draining:
            raise SeerError("the server is shutting down")
        ticket = Ticket(asyncio.get_running_loop())
        request = replace(request, on_step=ticket.post)
        self.service.live.add(ticket)
        try:
            self.service.worker.submit(request, ticket)
            while True:
                events = [await ticket.events.get()]
                while not ticket.events.empty():
                    events.append(ticket.events.get_nowait())
                views = [e for e in events if isinstance(e, StepView)]
                for view in views if every else views[-1:]:
                    yield view
                for event in events:
                    if isinstance(event, Failed):
                        error = event.error
                        if not isinstance(error, SeerError):
                            error = SeerError(f"the engine failed on this request: {error}")
                        raise error
                    if isinstance(event, Done):
                        yield event
                        return
        finally:
            self.service.worker.abort(ticket)  # a closed page: the request stops too
            self.service.live.discard(ticket)

    def profile(self, boundary, true_end: int | None, prompt: str, image) -> str | None:
        """The step-0 profile Seer's detector saw, as a PNG path (None: no profile)."""
        from seer import plots

        if boundary is None or not boundary.profile:
            return None
        end = f", true end {true_end}" if true_end is not None else ""
        row = {
            "label": f"{prompt[:60]}  (L* = {boundary.length}{end})",
            "profile": boundary.profile,
            "boundary": boundary.index,
            "true_end": true_end,
            "image": image,
        }
        self.drawn += 1  # a few files in turn: Gradio copies each to its cache when shown
        out = self.plots / f"profile-{self.drawn % 8}.png"
        return str(plots.profiles([row], out, ylabel=f"step-0 {boundary.signal}"))


def build(lm: DiffusionLM, service) -> gr.Blocks:
    """The page's `gr.Blocks` for `lm`, running requests on `service`'s engine thread."""
    page = Page(lm, service)
    d = lm.sampling()
    seer_default = seer_config(lm, True)
    example, example_image = _example(lm)
    with gr.Blocks(title=f"Seer · {lm.name}", analytics_enabled=False) as blocks:
        gr.Markdown(
            f"## Seer: watch **{lm.name or 'the model'}** denoise, with and without Seer\n"
            "Seer reads at step 0 where the answer will end, cuts the window there and never "
            "computes the [EOS] padding after it. The baseline denoises the full window."
        )
        with gr.Row():
            with gr.Column(scale=3):
                prompt = gr.Textbox(label="Prompt", value=example, lines=2, elem_id="seer-prompt")
                image = gr.File(
                    label="Image (multimodal models)",
                    type="filepath",
                    value=example_image,
                    visible=lm.multimodal,
                    elem_id="seer-image",
                )
                with gr.Row():
                    run_base = gr.Checkbox(value=True, label="run the baseline")
                    run_seer = gr.Checkbox(value=True, label="run Seer", elem_id="seer-on")
                go = gr.Button("Run", variant="primary", elem_id="seer-run")
            with gr.Column(scale=2), gr.Accordion("Decoding options (the model's defaults)"):
                with gr.Row():  # each from its option's spec, showing the model's default
                    gen_length = widget(
                        SamplingParams, "gen_length", d.gen_length, elem_id="seer-window"
                    )
                    steps = widget(SamplingParams, "steps", d.total_steps, elem_id="seer-steps")
                    per_step = gr.Number(0, label="or tokens per step (0: steps)", precision=0)
                with gr.Row():
                    block = widget(SamplingParams, "block_length", d.block)
                    threshold = widget(
                        SamplingParams, "threshold", d.threshold or 0, label="threshold (0: off)"
                    )
                with gr.Row():
                    cache = widget(SamplingParams, "cache", d.cache)
                    signal = widget(SeerConfig, "signal", seer_default.signal)
                    delay = gr.Slider(
                        0, 0.5, value=0.0, step=0.05, label="display pause per step (s)"
                    )
        message = gr.HTML("", elem_id="seer-message")
        gr.HTML(render.LEGEND)
        with gr.Row(equal_height=False):
            with gr.Column():
                base_canvas = gr.HTML("", elem_id="seer-base-canvas")
                base_stats = gr.Markdown("", elem_id="seer-base-stats")
            with gr.Column():
                seer_canvas = gr.HTML("", elem_id="seer-seer-canvas")
                seer_stats = gr.Markdown("", elem_id="seer-seer-stats")
        verdict = gr.Markdown("", elem_id="seer-compare")
        plot = gr.Image(
            label="Step-0 profile: the signal Seer's detector read, its boundary "
            "(red) and the true end (dashed)",
            type="filepath",
            interactive=False,
            elem_id="seer-profile",
        )
        outputs = [message, base_canvas, base_stats, seer_canvas, seer_stats, verdict, plot]

        async def run(text, upload, g, n, k, b, t, c, sig, on_base, on_seer, pause):
            yield {o: "" for o in outputs[:-1]} | {plot: None}
            try:
                opts = Options(_int(g), _int(n), _int(k), _int(b), t, c, sig)
                p = opts.sampling(lm)
                if not (on_base or on_seer):
                    raise SeerError("tick at least one of: run the baseline, run Seer")
                sides = [("baseline", None, base_canvas, base_stats)] * bool(on_base)
                if on_seer:
                    sides.append(("Seer", {"signal": opts.signal}, seer_canvas, seer_stats))
                # each side resolved once, as the server resolves a request (rules, Seer fit)
                reqs = {
                    name: resolve_request(lm, Request(None, p, seer=seer))
                    for name, seer, _, _ in sides
                }
                done, end = {}, None
                params = next(iter(reqs.values())).params  # both sides share them
                ready = await page.prompt(text, upload, params)  # checked and prepared once
                for name, seer, canvas, numbers in sides:
                    before, drawn = None, False
                    req = replace(reqs[name], prompt=ready)
                    async for ev in page.side(req, every=pause > 0):
                        if isinstance(ev, Done):
                            done[name] = ev.result
                            yield {numbers: render.stats(ev.result)}
                            continue
                        page.label(ev.token_ids)
                        html = render.canvas(ev, before, page.labels, lm.tokens, name)
                        update = {canvas: html}
                        if seer and not drawn and ev.boundary is not None:
                            drawn = True
                            png = await asyncio.to_thread(
                                page.profile, ev.boundary, end, text, upload
                            )
                            update[plot] = png
                        yield update
                        before = ev.token_ids
                        if pause:
                            await asyncio.sleep(pause)
                    if name == "baseline":
                        r = done[name]
                        end = r.stats.tokens if r.stats.tokens < r.gen_length else None
                if len(done) == 2:
                    yield {verdict: render.compare(done["baseline"], done["Seer"])}
            except SeerError as e:
                text = str(e)
                if upload:  # the upload's name, not where the server keeps it
                    text = text.replace(str(upload), Path(upload).name)
                yield {message: render.message(text)}

        inputs = [
            prompt,
            image,
            gen_length,
            steps,
            per_step,
            block,
            threshold,
            cache,
            signal,
            run_base,
            run_seer,
            delay,
        ]
        go.click(run, inputs, outputs, concurrency_limit=4)
        prompt.submit(run, inputs, outputs, concurrency_limit=4)
    return blocks


def theme():
    """Gradio's default theme with the system's fonts (the page fetches nothing)."""
    return gr.themes.Default(
        font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"]
    )


def _int(value) -> int | None:
    """A Number field: None when blank; a whole number as int."""
    if value is None or value == "":
        return None
    if float(value) != int(value):
        raise SeerError(f"expected a whole number, got {value}")
    return int(value)


def _example(lm: DiffusionLM) -> tuple[str, str | None]:
    """A prompt (and image) the shipped models answer, pre-filled; empty for other models."""
    from seer.models.loader import model_folder
    from seer.sampling import BUILTIN_MODELS

    with contextlib.suppress(Exception):
        for name in BUILTIN_MODELS:
            if Path(lm.name or "-").name == model_folder(name).name:
                from seer.demo import sample_images, text_requests

                if lm.multimodal:
                    s = sample_images(name)[0]
                    return s["question"], str(s["file"])
                return text_requests(name)[0].prompt, None
    return "", None


__all__ = ["Options", "Page", "build"]
