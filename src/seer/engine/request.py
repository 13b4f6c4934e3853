"""The input processor, and what goes into the engine and comes out of it.

In: what a caller passes (text, chats, token ids, id tensors, `PromptInput`s, images, `seer=`,
sampling options) becomes immutable `Request`s with concrete options here, and only here:

- `process` (the library's `generate` / `stream`): the prompts split into rows (`rows`,
  `single`), the settings resolved once for all of them;
- `defaults`: the model's sampling defaults with a caller's options over them, the one place
  they are laid (`DiffusionLM.sampling` is it: the front ends that show or store options build
  their params with it);
- `resolve`: one request's settings made concrete, once, at the boundary between a front end
  and the engine: the model's sampling defaults applied under the options given (`sampling`),
  Seer's settings read (seer.json) and fitted to the model (`seer_config`), and every rule
  between options checked (a length-setting policy vs a window policy, the suffix, cfg_scale,
  prefix_lm, ...), each said in one line.

The library, `seer batch`, the server, the page and the harness (through `Engine.generate`)
call it; the engine takes only resolved requests (`Engine.add` refuses another;
`Engine.submit` and `Engine.generate` resolve a request as built, once) and never re-reads a
default. Each row's prompt is encoded and checked at `Engine.add` (`seer.engine.prompts`, the
processor's other half: text, chats, ids and images into `PromptInput`s).

Out: `RequestResult`, the `PartialResult`s a request's `on_block` callback receives while it
runs, the `StepView`s its `on_step` callback receives after each of its denoising steps, and
the `StreamChunk`s `DiffusionLM.stream` makes of the partials, with `Deltas` turning growing
text into pieces.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from seer.boundary.config import SeerConfig
from seer.boundary.detector import BoundaryReport
from seer.engine.inputs import ImageInput, Images, Prompt, Prompts, SeerOption
from seer.errors import SeerError
from seer.models.defaults import OPTIONS, layer
from seer.models.multimodal import PromptInput
from seer.policies import decides
from seer.sampling import LLADA_RULES, SUFFIX_RULE, SamplingParams

if TYPE_CHECKING:
    from seer.boundary.model import SeerModel
    from seer.engine.model import EngineModel


FINISH_REASONS = ("stop", "length", "abort")
log = logging.getLogger("seer.engine")


@dataclass(slots=True)
class GenerationStats:
    """Cost and shape of one request's generation."""

    nfe: int  # forward passes this request took part in (step 0 included)
    seconds: float  # wall time from its step 0 until it finished
    tokens: int  # answer tokens before the first end token
    window: int  # answer positions this row was denoised over (gen_length without Seer)
    gen_length: int  # the window the user asked for
    grown: int = 0  # times the guard grew this row's window
    detect_seconds: float = 0.0  # time its step-0 batch spent detecting the boundary

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def hit_window(self) -> bool:
        """The answer reached the end of its window (Seer's, or the full one): no end token
        inside it, so a longer window might have answered on; `grown` says whether the guard
        grew Seer's window to get there."""
        return self.tokens >= self.window > 0


@dataclass(slots=True)
class PartialResult:
    """A request's answer so far: every semi-autoregressive block up to `block` is final."""

    request_id: int  # the id `Engine.add` returned
    text: str  # decoded answer so far, up to its end token
    token_ids: list[int]  # the final answer ids so far (whole blocks)
    block: int  # index of the last final block (0-based)
    final: bool  # True on the request's last partial (it finished)


@dataclass(slots=True)
class StepView:
    """A request's answer window after one of its denoising steps (for watching it denoise).

    Built only for requests that ask for it (`Request.on_step`): one device-to-host copy of
    the answer rows per tick."""

    request_id: int  # the id `Engine.add` returned
    step: int  # forward passes this request has taken part in (1 after its step 0)
    token_ids: list[int]  # (gen_length,) the canvas: [MASK] where not revealed yet, [EOS] past
    # `window` (positions a window policy cut: never computed after step 0)
    window: int  # answer positions being denoised (Seer's cut after step 0; the guard may grow it)
    gen_length: int  # the window the request asked for
    boundary: BoundaryReport | None  # Seer's step-0 report (from step 0 on), when Seer ran
    final: bool  # True on the request's last step: `token_ids` equals its result's


@dataclass(slots=True, frozen=True)
class Request:
    """One prompt and how to answer it: resolved once (`resolve`), then checked against the
    model by `Engine.add`. Immutable: a changed request is a copy (`dataclasses.replace`)."""

    prompt: Prompt  # text (chat-formatted unless chat=False), a chat, token ids, a PromptInput
    params: SamplingParams | None = None  # None: the model's defaults (`lm.sampling()`)
    seer: SeerOption = None  # None (full window) | True (model defaults) | dict | SeerConfig
    image: ImageInput | None = None  # multimodal models: a path, data URI, PIL image or array
    chat: bool = True  # apply the tokenizer's chat template to a text prompt
    on_block: Callable[[PartialResult], None] | None = None  # called when a block is final
    on_step: Callable[[StepView], None] | None = None  # called after each of its steps
    window: int | None = None  # fixed window after step 0 (oracle truncation); excludes seer
    resolved: bool = False  # set by `resolve`: params concrete, seer a fitted SeerConfig or None


class SeerOptionError(SeerError):
    """`resolve` refused the request's Seer settings (the server names its `seer` field)."""


def defaults(lm: EngineModel, **options: Any) -> SamplingParams:
    """The model's defaults with the caller's `options` over them, the one place they are laid
    (`DiffusionLM.sampling` is this): the model's values (its family's official call under its
    generation_config.json, read once by the loader: `lm.defaults`), the options over them (None:
    the default; a new `gen_length` drops the default window's `steps` and `block_length`
    unless given), and the model's unmasking rule where none is given."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise SeerError(
            f"unknown generation option {unknown[0]!r}; choose from {', '.join(OPTIONS)}"
        )
    given = {k: v for k, v in options.items() if v is not None}
    values, _ = layer(dict(lm.defaults.values), {}, given, "caller")
    try:
        p = SamplingParams(**values)
    except TypeError as e:  # e.g. a string where a number goes
        raise SeerError(f"bad generation option: {e}") from None
    return p.with_defaults(lm.default_rule)


def sampling(
    lm: EngineModel, params: SamplingParams | None = None, overrides: dict[str, Any] | None = None
) -> SamplingParams:
    """The request's `SamplingParams`: `params` (None: the model's defaults, `defaults`) with
    `overrides` over them (None values: the default), the model's unmasking rule filled in and
    the rules that depend on it checked (cfg_scale is LLaDA's)."""
    overrides = overrides or {}
    try:
        if params is None:
            p = defaults(lm, **overrides)
        elif overrides:
            p = replace(params, **overrides)
        else:
            p = params
    except TypeError as e:  # an unknown option name
        raise SeerError(f"bad generation option: {e}") from None
    if not isinstance(p, SamplingParams):
        raise SeerError("Request.params must be a SamplingParams (or None for the defaults)")
    p = p.with_defaults(lm.default_rule)
    if p.cfg_scale > 0 and p.remasking not in LLADA_RULES:
        raise SeerError("cfg_scale is only defined for LLaDA's remasking rules")
    return p


def resolve(
    lm: EngineModel,
    request: Request,
    *,
    policy: bool = False,
    seer_on: bool = False,
    **overrides: Any,
) -> Request:
    """`request` resolved for `lm` (see the module docstring): a copy with `params` concrete,
    `seer` a fitted `SeerConfig` (or None: the full window) and `resolved` set, or one
    `SeerError` line. `overrides`: sampling options over `request.params`; `policy`: a window
    policy object will decide the window (`DiffusionLM.generate(policy=...)`); `seer_on`: the
    front end's default when `request.seer` is None (the server's: Seer on, unless the request
    runs DAEDAL or ρ-EOS, which set their own length). A resolved request comes back as it is."""
    if request.resolved and not overrides:
        return request
    p = sampling(lm, request.params, overrides)
    check_cache(lm, p)
    seer = request.seer
    if seer is None:
        seer = seer_on and not p.sets_length
    if request.window is not None:
        if seer:
            raise SeerError("give a request either a fixed window or a Seer config")
        if request.window < 1:
            raise SeerError(f"a fixed window must be >= 1, got {request.window}")
    decided = bool(seer) or request.window is not None or policy
    if decided and p.length_setters:  # a policy that sets the length beside a window policy
        raise SeerError(decides(p.length_setters[0]))
    if p.suffix and (decided or p.cache != "none"):
        raise SeerError(SUFFIX_RULE)
    cfg: SeerConfig | None = None
    if seer and not (request.resolved and isinstance(seer, SeerConfig)):
        try:
            cfg = seer_config(lm, seer)  # seer.json read, the options over it, fitted: once
        except SeerError as e:
            raise SeerOptionError(str(e)) from None
    elif isinstance(seer, SeerConfig):
        cfg = seer
    if cfg is not None and cfg.cut_in_step0 and p.cache == "prefix_lm":
        raise SeerError(
            "Seer's cut_in_step0 cannot run under cache='prefix_lm' (its prompt is "
            "encoded alone, before step 0): turn cut_in_step0 off or pick a cache"
        )
    return replace(request, params=p, seer=cfg, resolved=True)


def seer_config(lm: SeerModel, seer: SeerOption) -> SeerConfig:
    """The Seer settings of a request, validated against `lm`'s model.

    `seer=True` -> the model's calibrated defaults (seer.json's "config"), or on a model without
    them the default for unknown checkpoints (`UNCALIBRATED`, with a one-line notice naming the
    command that calibrates it); a dict overrides single options (None keeps the default);
    a `SeerConfig` is taken as it is. The layer and probe point are checked by `fit`."""
    from seer.boundary.config import UNCALIBRATED
    from seer.boundary.truncation import fit, notice

    if isinstance(seer, SeerConfig):
        return fit(seer, lm.model)
    if seer is not True and not isinstance(seer, dict):
        raise SeerError("seer must be True, a dict of options or a SeerConfig")
    stored = dict(lm.defaults.seer.config)  # seer.json's "config" (typed by the loader)
    if not stored:
        base = SeerConfig.from_dict(UNCALIBRATED)
        notice(
            lm.model,
            f"Seer: {lm.name or 'this model'} is uncalibrated (no seer.json); using the safe "
            f"default for unknown checkpoints (signal {base.signal}, the paper's rule: it seldom "
            "cuts). Calibrate it with: seer calibrate --model DIR --data FILE --write",
        )
    else:
        base = SeerConfig.from_dict(stored, "seer.json option")
    cfg = base if seer is True else base.override(seer)
    return fit(cfg, lm.model)


def process(
    lm: EngineModel,
    prompts: Prompts,
    params: SamplingParams | None = None,
    *,
    seer: SeerOption = None,
    image: Images = None,
    chat: bool = True,
    attention_mask: torch.Tensor | None = None,
    policy: bool = False,
    on_block: Callable[[PartialResult], None] | None = None,
    **overrides: Any,
) -> list[Request]:
    """The resolved `Request`s of what a caller passed (`DiffusionLM.generate` / `stream`): the
    settings resolved once for the batch (`resolve`: `policy`, a window policy object decides
    the window; then Seer is off, rows of one kind sharing their step 0), the prompts split into
    rows (`rows`), one request each. Each row's prompt is encoded and checked where every front
    end's are, at `Engine.add` (`seer.engine.prompts.prompt_inputs`)."""
    seer = None if policy else seer
    template = Request("", params, seer=seer, chat=chat, on_block=on_block)
    one = resolve(lm, template, policy=policy, **overrides)
    return [replace(one, prompt=q, image=im) for q, im in rows(prompts, image, attention_mask)]


def rows(
    prompts: Prompts, images: Images = None, attention_mask: torch.Tensor | None = None
) -> list[tuple[Prompt, ImageInput | None]]:
    """A batch split into its rows, (prompt, image) each, unchecked: one prompt (`single`), a
    list of one kind, or a (B, L) / (L,) id tensor with an optional attention mask (left
    padding). `Engine.add` encodes and checks each row, so a prompt is checked once."""
    out: list[Any]  # the rows' prompts, of one kind (checked at `Engine.add`)
    if isinstance(prompts, torch.Tensor):
        ids = prompts if prompts.dim() == 2 else prompts[None]
        if attention_mask is None:
            out = [row.tolist() for row in ids]
        else:
            am = attention_mask if attention_mask.dim() == 2 else attention_mask[None]
            out = [row[m.bool()].tolist() for row, m in zip(ids, am, strict=True)]
    elif single(prompts):
        out = [prompts]
    elif isinstance(prompts, (list, tuple)) and prompts:
        flat = all(isinstance(t, int) for t in prompts)  # one prompt as a tuple of ids
        out = [list(prompts)] if flat else list(prompts)
        if not _one_kind(out):
            raise SeerError(ONE_KIND)
    else:
        raise SeerError("no prompt given")
    imgs = images if isinstance(images, (list, tuple)) else [images] * len(out)
    if len(imgs) != len(out):
        raise SeerError(f"{len(imgs)} images for {len(out)} prompts; give one each")
    return list(zip(out, imgs, strict=True))


ONE_KIND = (
    "prompts must be a text, a chat (a list of role/content dicts), token ids, or a list of one "
    "kind of them"
)


def single(prompts: object) -> bool:
    """One prompt (text, chat, one id list or 1-D tensor, one PromptInput), not a batch."""
    return (
        isinstance(prompts, str)
        or is_chat(prompts)
        or (isinstance(prompts, torch.Tensor) and prompts.dim() == 1)
        or (isinstance(prompts, list) and bool(prompts) and isinstance(prompts[0], int))
        or isinstance(prompts, PromptInput)
    )


def is_chat(x: object) -> bool:
    """An OpenAI-style chat: a list of role/content dicts."""
    return isinstance(x, (list, tuple)) and bool(x) and all(isinstance(m, dict) for m in x)


def is_ids(q: object) -> bool:
    """One prompt's token ids (ints or 0-d tensors)."""
    return isinstance(q, (list, tuple, torch.Tensor)) and all(_is_id(t) for t in q)


def all_inputs(prompts: object) -> bool:
    """A list of `PromptInput`s (prompts encoded once)."""
    return (
        isinstance(prompts, (list, tuple))
        and bool(prompts)
        and all(isinstance(q, PromptInput) for q in prompts)
    )


def _is_id(t: object) -> bool:
    return isinstance(t, int) or (isinstance(t, torch.Tensor) and t.dim() == 0)


def _one_kind(rows: list[Any]) -> bool:
    """A batch of texts, of chats, of id sequences or of PromptInputs (not a mix)."""
    kinds = (lambda q: isinstance(q, str), is_chat, is_ids, lambda q: isinstance(q, PromptInput))
    return any(all(kind(q) for q in rows) for kind in kinds)


def check_cache(lm: EngineModel, p: SamplingParams) -> None:
    """cache='prefix_lm' is LaViDa's prompt-LM attention (the prompt encoded alone, never
    seeing the answer): a model trained otherwise answers it with nothing or garbage, so any
    other model refuses it (the low-level `DenoisingLoop` still runs it, for tests of layout)."""
    if p.cache != "prefix_lm":
        return
    from seer.models.lavida import LavidaDream, LavidaLLaDA

    if not isinstance(getattr(lm, "model", None), (LavidaLLaDA, LavidaDream)):
        name = getattr(lm, "name", "") or "this model"
        raise SeerError(
            f"cache prefix_lm needs a prompt-LM model (LaViDa), and {name} was not trained "
            "that way (it would answer nothing); use cache none, prefix, dual or dpad"
        )


@dataclass(slots=True)
class RequestResult:
    """The answer to one request and how it was produced: what `Engine.step` returns, and what
    `DiffusionLM.generate` returns (as `seer.Generation`, the same type)."""

    request_id: int  # the id `Engine.add` returned
    text: str  # decoded answer up to its end token
    token_ids: list[int]  # gen_length answer ids (kept tokens, then [EOS])
    tokens: int  # answer tokens before the first end token
    prompt_tokens: int  # prompt length in tokens (image positions included)
    window: int  # answer positions denoised after step 0 (and the guard)
    detected: int | None  # Seer's boundary L* at step 0, or None (no Seer / no boundary)
    nfe: int  # forward passes this request took part in (step 0 included)
    latency: float  # seconds from `add` until the request finished
    first_block_latency: float  # seconds from `add` until its first block was final
    finish_reason: str  # stop (an end token or stop sequence) | length | abort
    path: str  # execution path after step 0: static | varlen | eager ("" if none)
    grown: int = 0  # times the guard grew this row's window
    boundary: BoundaryReport | None = None  # Seer's step-0 report, when Seer ran
    seconds: float = 0.0  # wall time from its step 0 until it finished
    gen_length: int = 0  # the window the request asked for
    detect_seconds: float = 0.0  # time its step-0 batch spent in the window policy

    @property
    def index(self) -> int:
        """The request's id (its position in a fresh engine's `generate` list)."""
        return self.request_id

    @property
    def hit_window(self) -> bool:
        """The answer reached the end of its window (`GenerationStats.hit_window`)."""
        return self.tokens >= self.window > 0

    @property
    def stats(self) -> GenerationStats:
        return GenerationStats(
            self.nfe,
            self.seconds,
            self.tokens,
            self.window,
            self.gen_length,
            self.grown,
            self.detect_seconds,
        )


@dataclass(slots=True)
class StreamChunk:
    """One piece of a streamed answer (`DiffusionLM.stream`): the text of the blocks that became
    final since the previous chunk. The chunks' `text`s concatenate to the answer."""

    text: str  # new answer text since the previous chunk (may be "" while a block is blank)
    answer: str  # the answer so far
    block: int  # index of the last final semi-autoregressive block (0-based; -1 if none)
    result: RequestResult | None = None  # the last chunk only: the whole result (stats, ...)


class Deltas:
    """Turns the growing answer text into deltas whose concatenation is the final answer.

    A prefix's decoding may end in whitespace (stripped from the final answer when nothing
    follows) or in half a multi-byte character; those tails are held back until more text comes.
    """

    def __init__(self) -> None:
        self.sent = ""

    def push(self, text: str) -> str:
        safe = text.rstrip().rstrip("\ufffd").rstrip()
        if not safe.startswith(self.sent) or len(safe) <= len(self.sent):
            return ""
        delta, self.sent = safe[len(self.sent) :], safe
        return delta

    def finish(self, final: str) -> str:
        """The rest of the answer (the full answer was always a continuation of what was sent)."""
        if not final.startswith(self.sent):  # a tokenizer whose prefixes decode unstably
            log.error("streamed text %r is not a prefix of the answer %r", self.sent, final)
            return ""
        delta, self.sent = final[len(self.sent) :], final
        return delta
