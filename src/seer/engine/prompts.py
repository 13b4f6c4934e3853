"""The input processor's prompt half: what a caller passes as a prompt (text, a chat, token ids,
an id tensor, `PromptInput`s, with images) encoded into `PromptInput`s and checked against the
model, each mistake said in one line.

Every front end encodes here: `Engine.add` (`prompt_inputs`, for every request the library,
`seer batch`, the page and the harness make), the server's preparation threads
(`seer.serve.prepare`), and `DiffusionLM.encode` / `prompt` / `canvas`, which are fronts over
these functions. A whole chat goes through one encoder, `encode_chat`, whatever front end took
it: the library, `seer batch`'s rows and the server's multi-turn chats. Where the front ends
word a refusal differently (a row's id, the server's advice), they pass their wording in
(`one_turn`, `no_template`), so each keeps its message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch

from seer.engine.inputs import Chat, ImageInput, Images, Prompts
from seer.engine.request import ONE_KIND, all_inputs, is_chat, is_ids, rows
from seer.errors import SeerError
from seer.images import load_image
from seer.models import tokens as tokenizing
from seer.models.multimodal import PromptInput

if TYPE_CHECKING:
    from seer.engine.model import EngineModel
    from seer.sampling import SamplingParams

MAX_CHARS_PER_TOKEN = 32  # more characters a token than any tokenizer's average (3-5)
NO_TOKENIZER = "this model was loaded without a tokenizer; pass token ids instead"


def encode(lm: EngineModel, prompt: str, chat: bool = True) -> list[int]:
    """The ids of one text prompt (through the tokenizer's chat template unless `chat=False`
    or the tokenizer has none)."""
    check_text(prompt)
    check_chars(lm, prompt)
    if not prompt.strip():
        raise SeerError("empty prompt: give some text")
    if lm.tokenizer is None:
        raise SeerError(NO_TOKENIZER)
    if chat and getattr(lm.tokenizer, "chat_template", None):
        return tokenizing.chat_ids(lm.tokenizer, prompt)
    return tokenizing.plain_ids(lm.tokenizer, prompt, prompt=True)


def prompt_input(
    lm: EngineModel, text: str, image: ImageInput | None = None, chat: bool = True
) -> PromptInput:
    """One request's prompt: ids (and embeddings, for models that splice images)."""
    check_text(text)
    check_chars(lm, text)
    if image is not None and not lm.multimodal:
        raise SeerError(f"{lm.name or 'this model'} is a text model; it takes no image")
    if lm.processor is None:
        return PromptInput(encode(lm, text, chat))
    if not text.strip():
        raise SeerError("empty prompt: give some text")
    return lm.processor(text, None if image is None else load_image(image), chat)


def prompt_inputs(
    lm: EngineModel,
    prompts: Prompts,
    p: SamplingParams,
    images: Images = None,
    chat: bool = True,
    attention_mask: torch.Tensor | None = None,
) -> list[PromptInput]:
    """The batch's prompts, encoded (images spliced in) and checked against the model."""
    if isinstance(prompts, PromptInput) or all_inputs(prompts):
        if images is not None:
            raise SeerError("a PromptInput already holds its image; give no image=")
        inputs = [prompts] if isinstance(prompts, PromptInput) else list(prompts)
        check(lm, [q.ids for q in inputs], p, any(q.embeds is not None for q in inputs))
        return inputs
    if images is not None or lm.processor is not None:
        texts = [prompts] if isinstance(prompts, str) else prompts
        if isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts):
            imgs = images if isinstance(images, (list, tuple)) else [images] * len(texts)
            if len(imgs) != len(texts):
                raise SeerError(f"{len(imgs)} images for {len(texts)} prompts; give one each")
            pairs = zip(cast("list[str]", texts), imgs, strict=True)
            inputs = [prompt_input(lm, t, im, chat) for t, im in pairs]
            check(lm, [q.ids for q in inputs], p, images=True)
            return inputs
        if images is not None:
            raise SeerError("images go with text prompts; token-id prompts cannot take one")
    ids = prompt_ids(lm, prompts, chat, attention_mask)
    check(lm, ids, p)
    return [PromptInput(q) for q in ids]


def prompt_ids(
    lm: EngineModel, prompts: Any, chat: bool, attention_mask: torch.Tensor | None
) -> list[list[int]]:  # `prompts`: whatever the caller gave, checked here kind by kind
    """The ids of a batch of text, chat or id prompts (unchecked against the model)."""
    if isinstance(prompts, str):
        prompts = [prompts]
    if isinstance(prompts, torch.Tensor):  # (B, L) or (L,) ids, optional attention mask
        return [cast("list[int]", q) for q, _ in rows(prompts, None, attention_mask)]
    if not prompts:
        raise SeerError("no prompt given")
    if all(isinstance(t, int) for t in prompts):  # one prompt as a flat list of ids
        return [list(prompts)]
    if all(isinstance(q, str) for q in prompts):
        return [encode(lm, q, chat) for q in prompts]
    if is_chat(prompts):  # one OpenAI-style chat
        return [encode_chat(lm, prompts)]
    if all(is_chat(q) for q in prompts):
        return [encode_chat(lm, q) for q in prompts]
    if not all(is_ids(q) for q in prompts):
        raise SeerError(ONE_KIND)
    return [list(map(int, q)) for q in prompts]


def chat_ready(
    lm: EngineModel, *, one_turn: str | None = None, no_template: str | None = None
) -> None:
    """Refuse, in the front end's words, a whole chat that `lm` cannot take: `one_turn` when the
    model answers one user turn (a multimodal model's prompt processor), `no_template` when its
    tokenizer has no chat template (None: not asked; the template's own error then speaks)."""
    if one_turn is not None and lm.processor is not None:
        raise SeerError(one_turn)
    tok = lm.tokenizer
    if no_template is not None and (tok is None or not getattr(tok, "chat_template", None)):
        raise SeerError(no_template)


def encode_chat(
    lm: EngineModel,
    messages: Chat,
    *,
    one_turn: str | None = None,
    no_template: str | None = None,
    strict: bool = True,
) -> list[int]:
    """Ids of an OpenAI-style chat (role/content dicts) and the assistant header: the one chat
    encoder. `one_turn`, `no_template`: the front end's refusals (`chat_ready`); `strict`: each
    message checked to be a role and a valid text (the library's; `seer batch`'s rows and the
    server's turns were checked when they were read)."""
    chat_ready(lm, one_turn=one_turn, no_template=no_template)
    if lm.tokenizer is None:
        raise SeerError(NO_TOKENIZER)
    if strict:
        for m in messages:
            if set(m) - {"role", "content"} or not isinstance(m.get("content"), str):
                raise SeerError("a chat message is a dict of a role and a text content")
            check_text(m["content"])
    return tokenizing.chat_ids(lm.tokenizer, messages)


def check_text(text: object) -> None:
    """A prompt is a str of valid Unicode (no lone surrogates, e.g. undecodable command-line
    bytes that Python kept as surrogate escapes)."""
    if not isinstance(text, str):
        raise SeerError(f"a prompt is text or token ids, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SeerError(
            "the prompt is not valid UTF-8 text (it holds undecodable bytes); decode it first"
        ) from None


def check_chars(lm: EngineModel, text: str) -> None:
    """A text that cannot fit the context whatever the tokenizer (over `MAX_CHARS_PER_TOKEN`
    characters per token of it) is refused before it is tokenized (a 30 MB row would
    otherwise take minutes to be refused)."""
    limit = MAX_CHARS_PER_TOKEN * lm.max_length
    if len(text) > limit:
        raise SeerError(
            f"the prompt is {len(text):,} characters: it cannot fit the "
            f"model's context of {lm.max_length:,} tokens (at most {limit:,} "
            "characters); shorten it"
        )


def check(lm: EngineModel, ids: list[list[int]], p: SamplingParams, images: bool = False) -> None:
    """Prompt ids checked against the model and `p`: not empty, within the context with the
    answer, inside the vocabulary, free of [MASK]; `p`'s banned ids and suffix in the vocabulary."""
    vocab = lm.model.get_input_embeddings().num_embeddings
    if images and not ids:
        raise SeerError("no prompt given")
    for q in ids:
        if not q:
            raise SeerError("empty prompt: give at least one token")
        if len(q) + p.gen_length > lm.max_length:
            raise SeerError(
                f"prompt of {len(q)} tokens{' (image included)' if images else ''} + "
                f"gen_length {p.gen_length} exceeds the model's context of "
                f"{lm.max_length}; shorten the prompt or lower gen_length"
            )
        if min(q) < 0 or max(q) >= vocab:
            raise SeerError(f"prompt token ids must lie in [0, {vocab})")
    if lm.tokens.mask in {t for q in ids for t in q}:
        raise SeerError("the prompt contains the [MASK] token id; remove it")
    for name in ("banned_ids", "suffix"):
        if any(not 0 <= i < vocab for i in getattr(p, name) or ()):
            raise SeerError(f"{name} must hold token ids in [0, {vocab})")
