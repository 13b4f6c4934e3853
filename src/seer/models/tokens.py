"""Tokenizers: loading one from a model folder, prompts as ids, and the special token ids.

Kept apart from the loader and the architectures so that both (and the prompt processors) can
use it without importing each other. Special ids come from config.json and the tokenizer, never
from literals.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from seer.errors import CheckpointError, SeerError
from seer.sampling import TokenIds


def first_line(e: BaseException, limit: int = 200) -> str:
    """A library exception's message as one short line (for a `SeerError`)."""
    text = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


END_OF_TURN = ("<|eot_id|>", "<|im_end|>")
MASK_NAMES = ("<|mdm_mask|>", "<|mask|>")
IMAGE_TOKEN = "<image>"  # LLaVA's DEFAULT_IMAGE_TOKEN: where a prompt's image goes (LaViDa,
# LLaDA-V, lmms-eval's tasks, the built-in multimodal model); its id is IMAGE_TOKEN_INDEX


def image_marks(text: str, images: int) -> int:
    """The `IMAGE_TOKEN` placeholders of a prompt, checked against the images given with it:
    none (the model's template puts each image where its official prompt does) or one per
    image, where that image goes. Anything else is one line naming both counts."""
    n = text.count(IMAGE_TOKEN)
    if n and n != images:
        given = "no image was given" if not images else f"{images} image(s) were given"
        raise SeerError(
            f"the prompt has {n} {IMAGE_TOKEN} placeholder(s) but {given}: put one "
            f"{IMAGE_TOKEN} per image where it goes, or none"
        )
    return n


@contextlib.contextmanager
def _quiet_transformers():
    """AutoTokenizer reads config.json and warns that it does not know `llada`; hide that."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            hf_logging.set_verbosity(level)


def load_tokenizer(folder: Path):
    from transformers import AutoTokenizer

    files = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
    if not any((folder / f).is_file() for f in files):
        raise CheckpointError(f"{folder} has no tokenizer files (tokenizer.json, ...)")
    try:
        with _quiet_transformers():
            return AutoTokenizer.from_pretrained(
                folder, local_files_only=True, trust_remote_code=False
            )
    except Exception as first:  # e.g. Dream's tokenizer_class names its remote-code class
        if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
            # transformers 5 keeps the name as an alias of Qwen2Tokenizer (its fast tokenizer)
            # that its stubs do not declare
            from transformers import Qwen2TokenizerFast  # type: ignore[attr-defined]

            return Qwen2TokenizerFast.from_pretrained(folder, local_files_only=True)
        if "custom code" in str(first) or "trust_remote_code" in str(first):
            raise CheckpointError(
                f"the tokenizer in {folder} needs the checkpoint's own Python code, which Seer "
                "never runs; add a tokenizer.json (or vocab.json + merges.txt) to the folder"
            ) from None
        raise CheckpointError(
            f"cannot load the tokenizer in {folder}: {first_line(first)}"
        ) from None


@contextlib.contextmanager
def _no_length_warning():
    """Encoding a prompt longer than the tokenizer's `model_max_length` makes transformers log a
    warning; Seer checks the length against the model itself and says so in one line."""
    log = logging.getLogger("transformers.tokenization_utils_base")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def _encoding(where: str):
    """Errors raised while the tokenizer encodes (its files, and a chat template is code, come
    from the checkpoint) as one SeerError line naming what to check."""
    try:
        yield
    except SeerError:
        raise
    except Exception as e:  # jinja2 errors, TypeError from a corrupt tokenizer_config, ...
        raise SeerError(
            f"the tokenizer failed to encode the prompt ({first_line(e)}); check {where}"
        ) from None


log = logging.getLogger("seer.models")


def unknown_words(tokenizer, text: str) -> list[str]:
    """The pieces of `text` the tokenizer reads as its unknown token (none without one)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return []
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        pairs = zip(enc["input_ids"], enc["offset_mapping"], strict=True)
        return [text[a:b] for i, (a, b) in pairs if i == unk and text[a:b] != tokenizer.unk_token]
    except (NotImplementedError, TypeError, ValueError, KeyError):  # a slow tokenizer: no offsets
        return ["?"] * sum(i == unk for i in tokenizer(text, add_special_tokens=False)["input_ids"])


def warn_unknown(tokenizer, text: str, ids: list[int]) -> None:
    """One warning line when the prompt `text` (encoded as `ids`) holds words the tokenizer
    does not know: they reach the model as its unknown token, which the user should know."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None or unk not in ids:
        return
    words = unknown_words(tokenizer, text)
    if words:
        shown = ", ".join(repr(w) for w in words[:5]) + (", ..." if len(words) > 5 else "")
        log.warning(
            f"seer: warning: {len(words)} piece(s) of the prompt are not in the model's "
            f"vocabulary and are read as {tokenizer.unk_token}: {shown}",
            extra={"seer_repeat": ("unknown words", len(words), words[:5], tokenizer.unk_token)},
        )


def plain_ids(tokenizer, text: str, prompt: bool = False) -> list[int]:
    """Ids of `text` without special tokens (prompts without a chat template, stop words);
    `prompt`: warn about words outside the vocabulary (`warn_unknown`)."""
    with _no_length_warning(), _encoding("the tokenizer files"):
        ids = [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
    if prompt:
        warn_unknown(tokenizer, text, ids)
    return ids


def word_ids(tokenizer, text: str) -> list[int]:
    """A stop word or a generation suffix as the official samplers encode it: no special tokens,
    never empty (one `SeerError` line)."""
    ids = plain_ids(tokenizer, text)
    if not ids:
        raise SeerError(f"{text!r} encodes to no tokens")
    return ids


def stop_ids(tokenizer, words) -> tuple[tuple[int, ...], ...]:
    """Stop words as `SamplingParams.stop` takes them: one id sequence per word."""
    return tuple(tuple(word_ids(tokenizer, w)) for w in words)


def chat_ids(tokenizer, prompt: str | list[dict]) -> list[int]:
    """Ids of a chat plus the assistant header, as a flat list of ints. `prompt` is one user
    turn's text, or a whole chat as OpenAI-style `messages` (role/content dicts).

    `apply_chat_template(..., tokenize=True)` returns a list in transformers 4.x and a
    `BatchEncoding` in 5.x (sometimes batched, [1, n]); this always returns `list[int]`.
    """
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    where = "the chat_template in tokenizer_config.json, or pass chat=False (--no-chat)"
    with _no_length_warning(), _encoding(where):
        out = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(out, Mapping) or hasattr(out, "input_ids"):
        out = out["input_ids"]
    if hasattr(out, "tolist"):
        out = out.tolist()
    ids = list(out)
    if ids and isinstance(ids[0], Sequence):  # batched shape [1, n]
        (ids,) = ids
    ids = [int(i) for i in ids]
    texts = [m.get("content") for m in messages if isinstance(m, Mapping)]
    warn_unknown(tokenizer, "\n".join(t for t in texts if isinstance(t, str)), ids)
    return ids


def token_ids(raw: dict, tokenizer, banned_names: tuple[str, ...] = ()) -> TokenIds:
    """Special ids from config.json, completed by the tokenizer's own special tokens;
    `banned_names`: the model's `banned_token_names` (resolved by name in the tokenizer)."""
    vocab = tokenizer.get_vocab() if tokenizer is not None else {}
    mask = raw.get("mask_token_id")
    if mask is None:
        mask = next((vocab[n] for n in MASK_NAMES if n in vocab), None)
    eos = raw.get("eos_token_id")
    if eos is None and tokenizer is not None:
        eos = tokenizer.eos_token_id
    if isinstance(eos, list):
        eos = eos[0]
    if mask is None or eos is None:
        raise CheckpointError("config.json/tokenizer define no mask_token_id or eos_token_id")
    pad = raw.get("pad_token_id")
    if pad is None or pad == mask:
        pad = eos
    eot = next((vocab[n] for n in END_OF_TURN if n in vocab), None)
    bos = raw.get("bos_token_id", getattr(tokenizer, "bos_token_id", None))
    return TokenIds(
        mask=mask, eos=eos, pad=pad, eot=eot, bos=bos, banned=_banned(banned_names, vocab)
    )


def _banned(names: tuple[str, ...], vocab: dict) -> tuple[int, ...]:
    """Ids of the tokens the model's official sampler never proposes, from their names."""
    missing = [n for n in names if n not in vocab]
    if missing:
        raise CheckpointError(f"the tokenizer lacks the special token(s) {missing}")
    return tuple(vocab[n] for n in names)
