"""A word-level tokenizer for the demo tasks, saved in Hugging Face format with LLaDA's names.

Design
------
The demo vocabulary is closed (:func:`synthetic.tasks.all_words`), so one token per word
is the simplest tokenizer that never emits ``<|unk|>``; it also keeps sequences short, which
matters on a CPU. The files written by :func:`build_tokenizer` load with
``transformers.AutoTokenizer.from_pretrained(out_dir)`` as a ``PreTrainedTokenizerFast`` and
mirror LLaDA-8B-Instruct's conventions:

* special tokens ``<|startoftext|>`` (BOS), ``<|endoftext|>`` (EOS *and* padding),
  ``<|mdm_mask|>`` (the diffusion mask), ``<|start_header_id|>``, ``<|end_header_id|>``,
  ``<|eot_id|>`` and ``<|unk|>`` take ids 0..6, in :data:`SPECIAL_TOKENS` order;
* the chat template is LLaDA's (Llama-3 style), so code written against the real model runs
  unchanged on the demo model.

Special tokens are registered as *added* tokens, so they are matched inside raw text before
pre-tokenization. The ``WhitespaceSplit`` pre-tokenizer then splits on any whitespace, which
makes the template's ``"\\n\\n"`` vanish instead of producing an unknown token. Words are
decoded joined by single spaces (no clean-up of spaces before punctuation).

The multimodal demo model's tokenizer (:func:`build_multimodal_tokenizer`) keeps those seven
special tokens and ids, adds LLaVA's image placeholder :data:`IMAGE_TOKEN` as id 7 (an added
special token, so ``"<image>\\nwhat colour ..."`` keeps it whole), and covers the union of the
text tasks' and the VQA words (:mod:`synthetic.vqa`). The defaults of
:func:`build_tokenizer` still write the text model's files byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from seer.models.tokens import IMAGE_TOKEN
from synthetic import vqa
from synthetic.tasks import all_words

BOS_TOKEN = "<|startoftext|>"
EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = EOS_TOKEN
MASK_TOKEN = "<|mdm_mask|>"
START_HEADER_TOKEN = "<|start_header_id|>"
END_HEADER_TOKEN = "<|end_header_id|>"
EOT_TOKEN = "<|eot_id|>"
UNK_TOKEN = "<|unk|>"

SPECIAL_TOKENS: tuple[str, ...] = (
    BOS_TOKEN,
    EOS_TOKEN,
    MASK_TOKEN,
    START_HEADER_TOKEN,
    END_HEADER_TOKEN,
    EOT_TOKEN,
    UNK_TOKEN,
)
"""Special tokens; their ids are their positions (0..6)."""

# IMAGE_TOKEN (LLaVA's image placeholder, `seer.models.tokens`): only the multimodal tokenizer
# has it, as one more special token right after SPECIAL_TOKENS (id 7)

CHAT_ROLES: tuple[str, ...] = ("system", "user", "assistant")
"""Role names that the chat template writes as plain words."""

CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}"
    "{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    " + message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}"
)
"""LLaDA-8B-Instruct's chat template (Llama-3 style headers, BOS before the first message)."""

MODEL_MAX_LENGTH = 512


def vocabulary(
    words: Iterable[str] | None = None, extra_special: Sequence[str] = ()
) -> dict[str, int]:
    """Token -> id: special tokens (then ``extra_special``) first, then the words, sorted.

    ``words`` defaults to the text tasks' words (:func:`synthetic.tasks.all_words`); the
    chat role names are always added.
    """
    specials = (*SPECIAL_TOKENS, *extra_special)
    words = sorted(set(all_words() if words is None else words) | set(CHAT_ROLES))
    tokens = list(specials) + [w for w in words if w not in specials]
    return {tok: i for i, tok in enumerate(tokens)}


def build_backend(
    words: Iterable[str] | None = None, extra_special: Sequence[str] = ()
) -> Tokenizer:
    """The ``tokenizers`` object: word-level model, whitespace splitting, space-joining decoder."""
    specials = (*SPECIAL_TOKENS, *extra_special)
    tok = Tokenizer(models.WordLevel(vocab=vocabulary(words, extra_special), unk_token=UNK_TOKEN))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # WordPiece's decoder joins tokens with spaces; with no "##" tokens it only does that.
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def build_tokenizer(
    out_dir: Path, words: Iterable[str] | None = None, extra_special: Sequence[str] = ()
) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``.

    With the defaults this is the built-in text model's tokenizer (byte for byte); ``words`` and
    ``extra_special`` build others, e.g. :func:`build_multimodal_tokenizer`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    build_backend(words, extra_special).save(str(out_dir / "tokenizer.json"))
    _write_json(out_dir / "tokenizer_config.json", _tokenizer_config(tuple(extra_special)))
    _write_json(out_dir / "special_tokens_map.json", _special_tokens_map(tuple(extra_special)))


def multimodal_words() -> list[str]:
    """The multimodal demo's words: the text tasks' words and the VQA words (sorted union)."""
    return sorted(set(all_words()) | set(vqa.all_words()))


def build_multimodal_tokenizer(out_dir: Path) -> None:
    """The multimodal demo model's tokenizer: the text tokenizer's special tokens (same ids),
    :data:`IMAGE_TOKEN` next, then :func:`multimodal_words`."""
    build_tokenizer(out_dir, words=multimodal_words(), extra_special=(IMAGE_TOKEN,))


def encode_chat(tok: Any, prompt: str) -> list[int]:
    """Ids of a one-turn user chat plus the assistant header (see `seer.models.tokens.chat_ids`)."""
    from seer.models.tokens import chat_ids

    return chat_ids(tok, prompt)


def _special_tokens_map(extra_special: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "unk_token": UNK_TOKEN,
        "mask_token": MASK_TOKEN,
    }
    if extra_special:  # absent by default, so the text tokenizer's files stay unchanged
        out["additional_special_tokens"] = list(extra_special)
    return out


def _tokenizer_config(extra_special: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **_special_tokens_map(extra_special),
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MODEL_MAX_LENGTH,
        "padding_side": "right",
        "add_bos_token": False,
        "add_eos_token": False,
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- the text model v2's tokenizer
PIECE_PATTERN = r" ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]|\s"
"""v2 pieces: a word, one digit or one punctuation mark, each with its leading space if any, or
one whitespace character. Decoding concatenates the pieces, so text round-trips exactly."""


def pieces(text: str) -> list[str]:
    """`text` split as the v2 tokenizer splits it (before the vocabulary lookup)."""
    import re

    return re.findall(PIECE_PATTERN, text)


def build_v2_backend(words: Iterable[str], extra_special: Sequence[str] = ()) -> Tokenizer:
    """Word-level over :data:`PIECE_PATTERN` pieces (`words`: the pieces of the vocabulary;
    `extra_special` after the seven special tokens, e.g. ``<image>`` as id 7)."""
    from tokenizers import Regex

    tok = Tokenizer(models.WordLevel(vocab=vocabulary(words, extra_special), unk_token=UNK_TOKEN))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PIECE_PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    specials = (*SPECIAL_TOKENS, *extra_special)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def build_v2_tokenizer(
    out_dir: Path, words: Iterable[str], extra_special: Sequence[str] = ()
) -> None:
    """Write the v2 tokenizer's three files (the special tokens, ids and chat template of v1)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    build_v2_backend(words, extra_special).save(str(out_dir / "tokenizer.json"))
    _write_json(out_dir / "tokenizer_config.json", _tokenizer_config(tuple(extra_special)))
    _write_json(out_dir / "special_tokens_map.json", _special_tokens_map(tuple(extra_special)))
