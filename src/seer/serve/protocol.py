"""The OpenAI-compatible request bodies, as pydantic models (responses are built in `responses.py`).

Unknown fields are refused (400 naming the field), so a mistyped option of ours (`step` for
`steps`) never passes silently; booleans are strict (`"seer": "yes"` or `1` is a 400, never
read as true). OpenAI fields that we accept but cannot honour differently from
their neutral value (`n` > 1, `logprobs`, penalties) are refused with a message saying so.
Our own options (`steps`, `block_length`, `remasking`, `cache`, `schedule`, `top_k`, `alg_temp`,
`cfg_scale`, `threshold`, `factor`, `early_stop`, `daedal` and its `daedal_*` options, `seer`)
sit beside the OpenAI ones; the OpenAI client sends them via `extra_body`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from seer.config import DAEDAL_FLOATS, DAEDAL_INTS


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class ImageURL(_Strict):
    url: str  # a data:image/...;base64 URI, or a local path with --allow-local-images
    detail: str | None = None  # accepted, ignored: the model's processor decides the resolution


class ImagePart(_Strict):
    type: Literal["image_url"]
    image_url: ImageURL


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")  # clients add name, tool_call_id, ...

    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[ContentPart]

    @field_validator("content", mode="before")
    @classmethod
    def _parts(cls, content):
        """A part that is not an object (a bare string or URL) or an image_url that is not
        {"url": ...} gets a message showing the shape (pydantic's union error would name
        only the first alternative: "content.str: Input should be a valid string")."""
        if not isinstance(content, list):
            return content
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise ValueError(
                    f"content part {i} is a {type(part).__name__}; each part is an object: "
                    '{"type": "text", "text": "..."} or {"type": "image_url", "image_url": '
                    '{"url": "data:image/png;base64,..."}}'
                )
            if part.get("type") == "image_url" and not isinstance(part.get("image_url"), dict):
                raise ValueError(
                    f"content part {i}: image_url must be an object "
                    '{"url": "data:image/png;base64,..."}, not '
                    f"{type(part.get('image_url')).__name__}"
                )
        return content


class SamplingFields(_Strict):
    """The fields both endpoints share: OpenAI's sampling options and Seer's own."""

    model: str
    max_tokens: int | None = Field(None, ge=1)  # the answer window (gen_length)
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: StrictBool = False
    stream_options: dict | None = None  # {"include_usage": true} adds a usage chunk
    n: int = 1
    user: str | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logprobs: StrictBool | None = None
    # Seer's options (OpenAI client: extra_body={...})
    steps: int | None = Field(None, ge=1)
    block_length: int | None = Field(None, ge=1)
    remasking: str | None = None
    cache: str | None = None
    schedule: str | None = None
    top_k: int | None = Field(None, ge=1)
    alg_temp: float | None = None
    cfg_scale: float | None = Field(None, ge=0)
    threshold: float | None = None  # Fast-dLLM parallel decoding (confidence threshold)
    factor: float | None = None  # Fast-dLLM factor-based parallel decoding
    dpad_window: int | None = Field(None, ge=0)  # cache="dpad": DPad's scratchpad
    early_stop: StrictBool | None = None  # dInfer: end once a filled block holds the end token
    # DAEDAL (seer.diffusion.daedal): max_tokens is its cap; the server's Seer default is off
    # for such a request (both set the length)
    daedal: StrictBool | None = None
    daedal_initial: int | None = Field(None, ge=1)
    daedal_block: int | None = Field(None, ge=1)
    daedal_expand: int | None = Field(None, ge=1)
    daedal_eos_tokens: int | None = Field(None, ge=1)
    daedal_high: float | None = Field(None, ge=0, le=1)
    daedal_low: float | None = Field(None, ge=0, le=1)
    daedal_eos: float | None = Field(None, ge=0, le=1)
    daedal_expand_eos: float | None = Field(None, ge=0, le=1)
    seer: StrictBool | dict | None = None  # None: the server's default (on unless --no-seer/DAEDAL)

    @field_validator("n")
    @classmethod
    def _one_choice(cls, n: int) -> int:
        if n != 1:
            raise ValueError("n must be 1 (send the request again for another answer)")
        return n

    @field_validator("presence_penalty", "frequency_penalty")
    @classmethod
    def _no_penalty(cls, v: float | None) -> float | None:
        if v:
            raise ValueError("penalties are not defined for diffusion sampling; leave them at 0")
        return v

    @field_validator("logprobs")
    @classmethod
    def _no_logprobs(cls, v: bool | None) -> bool | None:
        if v:
            raise ValueError("logprobs are not available")
        return v

    def stop_words(self) -> list[str]:
        if self.stop is None:
            return []
        words = [self.stop] if isinstance(self.stop, str) else list(self.stop)
        if any(not w for w in words):
            raise ValueError("stop strings must not be empty")
        return words

    def options(self) -> dict:
        """The sampling options given (None left out: the model's default applies)."""
        names = ("temperature", "top_p", "seed", "steps", "block_length", "remasking", "cache")
        names += ("schedule", "top_k", "alg_temp", "cfg_scale", "threshold", "factor")
        names += ("early_stop", "dpad_window", "daedal", *DAEDAL_INTS, *DAEDAL_FLOATS)
        out = {k: getattr(self, k) for k in names if getattr(self, k) is not None}
        if any(k.startswith("daedal_") for k in out):  # as `--daedal-*`: any option turns it on
            if out.get("daedal") is False:
                raise ValueError("daedal_* options were given with daedal false: drop one")
            out["daedal"] = True
        if self.max_tokens is not None:
            out["gen_length"] = self.max_tokens
        return out


class ChatRequest(SamplingFields):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)  # the newer name of max_tokens

    def options(self) -> dict:
        out = super().options()
        if self.max_completion_tokens is not None:
            out.setdefault("gen_length", self.max_completion_tokens)
        return out


class CompletionRequest(SamplingFields):
    prompt: str | list[int]  # text (no chat template), or token ids
    echo: StrictBool | None = None
    suffix: str | None = None

    @field_validator("echo")
    @classmethod
    def _no_echo(cls, v: bool | None) -> bool | None:
        if v:
            raise ValueError("echo is not supported")
        return v

    @field_validator("suffix")
    @classmethod
    def _no_suffix(cls, v: str | None) -> str | None:
        if v:
            raise ValueError("suffix is not supported")
        return v
