"""The OpenAI-compatible request bodies, as pydantic models (responses are built in `responses.py`).

Unknown fields are refused (400 naming the field), so a mistyped option of ours (`step` for
`steps`) never passes silently; types are strict (`"seer": "yes"` or `1` is a 400, never read as
true; `"max_tokens": true` or `"8"` is a 400, never read as 1 or 8; a number field takes 1 or
1.5). `max_completion_tokens` (OpenAI's current name) and `max_tokens` (its deprecated one) both
set the answer window; given both, they must agree. OpenAI fields that we accept but cannot
honour differently from their neutral value (`n` > 1, `logprobs`, penalties) are refused with a
message saying so.
Our own options sit beside the OpenAI ones (the OpenAI client sends them via `extra_body`):
`SamplingOptions` is generated from the `SamplingParams` fields that declare `api` (`steps`,
`block_length`, `remasking`, `cache`, `schedule`, `top_k`, `alg_temp`, `cfg_scale`,
`threshold`, `factor`, `early_stop`, `daedal` and its `daedal_*` options, ...), each checked as
the library checks it and said in the same words; `seer` takes Seer's options.

Every field that holds a list or a string is bounded here, once, and each count is
checked before its items are looked at: at most 4 `stop` strings (as OpenAI) of at most
`STOP_CHARS` characters, `MAX_MESSAGES` messages, `MAX_PARTS` content parts a message,
`MAX_PROMPT_IDS` token ids, `NAME_CHARS` characters of `model` / `user`, `MAX_OPTIONS` keys of
`seer` / `stream_options`. Texts are bounded by the body's size (`--max-body-mb`) and by the
prompt-length check made before tokenizing (`seer.serve.prepare`), image URLs by
`--max-image-mb`. The body itself is parsed off the event loop (`seer.serve.app`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from seer.sampling import SamplingParams
from seer.spec import Spec, implied, kind, problem, specs

MAX_STOP = 4  # stop strings (OpenAI's limit)
STOP_CHARS = 256  # characters of one stop string
MAX_MESSAGES = 1024  # messages of one chat
MAX_PARTS = 256  # content parts of one message
MAX_PROMPT_IDS = 1 << 16  # token ids of a /v1/completions prompt (more than any model's context)
NAME_CHARS = 256  # characters of `model`, `user`, an image's `detail`
MAX_OPTIONS = 64  # keys of the `seer` and `stream_options` objects

Name = Annotated[str, Field(max_length=NAME_CHARS)]
Options = Annotated[dict, Field(max_length=MAX_OPTIONS)]


def _at_most(items, most: int, what: str) -> None:
    """A list over its bound is refused before any of its items is looked at."""
    if isinstance(items, list) and len(items) > most:
        raise ValueError(f"at most {most:,} {what}, got {len(items):,}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class ImageURL(_Strict):
    url: str  # a data:image/...;base64 URI, or a local path with --allow-local-images
    detail: Name | None = None  # accepted, ignored: the model's processor decides the resolution


class ImagePart(_Strict):
    type: Literal["image_url"]
    image_url: ImageURL


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]
_PART = TypeAdapter(ContentPart)


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
            if not isinstance(content, str):
                raise ValueError(f"content must be a text or a list of parts, not {_json(content)}")
            return content
        _at_most(content, MAX_PARTS, "content parts in a message")
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
            if "type" not in part:
                raise ValueError(f'content part {i} has no "type" ("text" or "image_url")')
            try:  # the part's own error (the union's would name only its str alternative)
                _PART.validate_python(part)
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"][1:])  # [0]: the part's type tag
                where = f"{where}: " if where else ""
                raise ValueError(f"content part {i}: {where}{err['msg']}") from None
        return content


def _json(value) -> str:
    """A JSON value's JSON type name (null, number, object, ...), as the client wrote it."""
    names = {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        dict: "an object",
    }
    return names.get(type(value), type(value).__name__)


def _valid(spec: Spec):
    """A pydantic validator that says what `problem` says (the library's and the CLI's text)."""

    def check(value):
        tail = problem(spec, value)
        if tail is not None:
            raise ValueError(tail)
        return value

    return AfterValidator(check)


# strict: no bool for a number, no "8" for 8 (JSON has numbers); a float field takes an int
_TYPES: dict[type | None, Any] = {
    int: StrictInt,
    float: Annotated[float, Strict()],
    str: str,
    bool: StrictBool,
}
# request field -> SamplingParams field, for every field that declares `api`
API_NAMES = {
    (s.api if isinstance(s.api, str) else f.name): f.name for f, s in specs(SamplingParams) if s.api
}
_SPECS = {f.name: (f, s) for f, s in specs(SamplingParams)}


def _sampling_options() -> type[_Strict]:
    fields: dict[str, Any] = {
        api: (Annotated[_TYPES[kind(f)] | None, _valid(s)], Field(None, description=s.help))
        for api, (f, s) in ((api, _SPECS[name]) for api, name in API_NAMES.items())
    }
    return create_model(
        "SamplingOptions",
        __base__=_Strict,
        __doc__="Seer's sampling options, generated from SamplingParams' fields (`seer.spec`).",
        **fields,
    )


if TYPE_CHECKING:  # the fields are generated from `seer.spec` at import: a checker sees the base
    SamplingOptions = _Strict
else:
    SamplingOptions = _sampling_options()


class SamplingFields(SamplingOptions):
    """The fields both endpoints share: OpenAI's options beside Seer's sampling options
    (`max_tokens` is `gen_length`; the OpenAI client sends the others via `extra_body`)."""

    model: Name
    stop: str | list[str] | None = None
    stream: StrictBool = False
    stream_options: Options | None = None  # {"include_usage": true} adds a usage chunk
    n: StrictInt = 1
    user: Name | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logprobs: StrictBool | None = None
    # None: the server's default (on unless --no-seer, DAEDAL or rho-EOS)
    seer: StrictBool | Options | None = None

    @field_validator("seer", mode="before")
    @classmethod
    def _seer_bound(cls, seer):
        if isinstance(seer, dict) and len(seer) > MAX_OPTIONS:
            raise ValueError(f"at most {MAX_OPTIONS} Seer options, got {len(seer):,}")
        return seer

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_bounds(cls, stop):
        _at_most(stop, MAX_STOP, "stop strings")
        words = stop if isinstance(stop, list) else [stop]
        for w in words:
            if isinstance(w, str) and len(w) > STOP_CHARS:
                raise ValueError(
                    f"a stop string has at most {STOP_CHARS} characters, got {len(w):,}"
                )
        return stop

    @model_validator(mode="after")
    def _options_need_a_stream(self):
        if self.stream_options is not None and not self.stream:
            raise ValueError('stream_options is only allowed with "stream": true')
        return self

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
        """The sampling options given, as SamplingParams fields (None left out: the model's
        default applies); a `daedal_*` option turns DAEDAL on, as `--daedal-*` does
        (`rho_*`: rho-EOS)."""
        given = {name: getattr(self, api) for api, name in API_NAMES.items()}
        return implied(SamplingParams, {k: v for k, v in given.items() if v is not None})


class ChatRequest(SamplingFields):
    messages: list[Message] = Field(min_length=1)
    # OpenAI's current name of max_tokens (deprecated there), checked as gen_length is
    max_completion_tokens: Annotated[StrictInt | None, _valid(_SPECS["gen_length"][1])] = None

    @field_validator("messages", mode="before")
    @classmethod
    def _messages_bound(cls, messages):
        _at_most(messages, MAX_MESSAGES, "messages")
        return messages

    @model_validator(mode="after")
    def _one_length(self):
        new, old = self.max_completion_tokens, self.max_tokens
        if new is not None and old is not None and new != old:
            raise ValueError(
                f"max_completion_tokens ({new}) and max_tokens ({old}) disagree: send "
                "max_completion_tokens alone (max_tokens is its deprecated name)"
            )
        return self

    def options(self) -> dict:
        out = super().options()
        if self.max_completion_tokens is not None:
            out["gen_length"] = self.max_completion_tokens
        return out


class CompletionRequest(SamplingFields):
    prompt: str | list[StrictInt]  # text (no chat template), or token ids

    @field_validator("prompt", mode="before")
    @classmethod
    def _ids_bound(cls, prompt):
        _at_most(prompt, MAX_PROMPT_IDS, "token ids in a prompt")
        return prompt

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
