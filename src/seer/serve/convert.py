"""OpenAI request bodies -> the engine's `Request` (prompt, image, sampling, Seer), resolved
once by `seer.engine.request.resolve` (the library's defaults, rules and messages).

A chat with one user message goes through the same prompt path as `seer generate` and
`DiffusionLM.generate` (the text, its image, the model's chat template), so the answers agree.
Longer chats (system, earlier turns) on text models are rendered with the tokenizer's chat
template (the input processor's chat encoder, `seer.engine.prompts.encode_chat`, called by
`prepare`, off the engine's thread). Images come as `data:` URIs, or paths under
the folder of `--allow-local-images DIR` (`security.local_image`); nothing is ever fetched from
the network. Nothing here tokenizes or decodes: that is `prepare`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seer.engine.prompts import chat_ready
from seer.engine.request import Request, SeerOptionError, resolve
from seer.errors import SeerError
from seer.serve.errors import bad_request, too_large
from seer.serve.prepare import Limits, Prompt
from seer.serve.protocol import ChatRequest, CompletionRequest, ImagePart, SamplingFields
from seer.serve.security import local_image

if TYPE_CHECKING:
    from seer.lm import DiffusionLM


def chat_prompt(lm: DiffusionLM, body: ChatRequest, limits: Limits) -> Prompt:
    messages = body.messages
    images = [
        p
        for m in messages
        if not isinstance(m.content, str)
        for p in m.content
        if isinstance(p, ImagePart)
    ]
    if len(images) > 1:
        raise bad_request("one image per request: this model takes a single image", "messages")
    image = _image_source(images[0].image_url.url, limits) if images else None
    if image is not None and not lm.multimodal:
        raise bad_request(f"{lm.name or 'this model'} is a text model; it takes no image")
    if messages[-1].role != "user":
        raise bad_request("the last message must be the user's", "messages")
    if len(messages) == 1:
        return Prompt(_text(messages[0]), True, image)
    try:  # the input processor's chat encoder, in the server's words (it runs in `prepare`)
        chat_ready(lm, one_turn=ONE_TURN, no_template=NO_TEMPLATE)
    except SeerError as e:
        raise bad_request(str(e), "messages") from None
    turns = [{"role": _role(m.role), "content": _text(m)} for m in messages]
    return Prompt(turns, False, None)  # rendered with the template by `prepare`


# the server's refusals of a whole chat (`seer.engine.prompts.chat_ready`)
ONE_TURN = (
    "this multimodal model answers one user message (with its image); send the question alone"
)
NO_TEMPLATE = "this model has no chat template: send one user message"


def completion_prompt(lm: DiffusionLM, body: CompletionRequest) -> Prompt:
    prompt = body.prompt
    if isinstance(prompt, str) and not prompt.strip():
        raise bad_request("empty prompt: give some text", "prompt")
    if isinstance(prompt, list) and not prompt:
        raise bad_request("empty prompt: give at least one token id", "prompt")
    return Prompt(prompt, False, None)


def request_for(lm: DiffusionLM, body: SamplingFields, seer_on: bool) -> Request:
    """The request's resolved engine `Request`, its prompt still to come (`prepare`): the
    model's defaults under the options given, the stop strings encoded, Seer's settings fitted
    (`seer_on`: the server's default, on unless `--no-seer`; a DAEDAL or rho-EOS request sets
    its own length and leaves it off). Any mistake is a 400."""
    try:
        options = body.options()
        words = body.stop_words()
    except (SeerError, ValueError) as e:
        raise bad_request(str(e)) from None
    if words:
        if lm.tokenizer is None:
            raise bad_request("stop strings need the model's tokenizer", "stop")
        from seer.models.tokens import stop_ids

        try:
            options["stop"] = stop_ids(lm.tokenizer, words)
        except SeerError as e:
            raise bad_request(str(e), "stop") from None
    try:
        # the prompt comes later (`prepare`); `resolve` reads the options alone
        return resolve(lm, Request("", seer=body.seer), seer_on=seer_on, **options)
    except SeerOptionError as e:
        raise bad_request(f"bad seer options: {e}", "seer") from None
    except (SeerError, TypeError, ValueError) as e:
        raise bad_request(str(e)) from None


def _text(message) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(p.text for p in message.content if p.type == "text")


def _role(role: str) -> str:
    return "system" if role == "developer" else role


def _image_source(url: str, limits: Limits) -> str:
    """The image reference, size-checked (the pixels are checked when it is decoded)."""
    if url.startswith("data:"):
        payload = url.partition(",")[2]
        if len(payload) * 3 // 4 > limits.max_image_bytes:
            raise too_large(
                f"the image is over the server's limit of {limits.max_image_bytes:,} "
                "bytes; send a smaller image"
            )
        return url
    if url.startswith(("http://", "https://")):
        raise bad_request("image URLs are not fetched; send the image as a data: URI", "image_url")
    if limits.image_root is None:
        raise bad_request(
            "image_url must be a data:image/...;base64 URI (local paths need the server's "
            "--allow-local-images DIR)",
            "image_url",
        )
    return str(local_image(url, limits.image_root))  # its size is checked as it is read
