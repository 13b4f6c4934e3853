"""What goes into the engine (`Request`) and what comes out (`RequestResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from seer.boundary.detector import BoundaryReport
from seer.config import SamplingParams


@dataclass(slots=True)
class Request:
    """One prompt and how to answer it."""

    prompt: str | list[int]  # text (chat-formatted unless chat=False) or token ids
    params: SamplingParams = field(default_factory=SamplingParams)  # this request's sampling
    seer: object = None  # None (full window) | True (model defaults) | dict | SeerConfig
    window: int | None = None  # fixed window after step 0 (oracle truncation); excludes seer
    chat: bool = True  # apply the tokenizer's chat template to a text prompt
    image: object = None  # multimodal models: a path, data URI, PIL image or array (text prompt)


@dataclass(slots=True)
class RequestResult:
    """The answer to one request and how it was produced."""

    index: int  # position of the request in the list given to `Engine.generate`
    text: str  # decoded answer up to its end token
    token_ids: list[int]  # gen_length answer ids (kept tokens, then [EOS])
    tokens: int  # answer tokens before the first end token
    window: int  # answer positions denoised after step 0 (and the guard)
    path: str  # execution path after step 0: static | varlen | eager
    nfe: int  # forward passes over this row's group (step 0 included)
    latency: float  # seconds from `generate()` until this request's group finished
    grown: int = 0  # times the guard grew this row's window
    boundary: BoundaryReport | None = None  # Seer's step-0 report, when Seer ran
