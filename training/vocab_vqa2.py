"""The multimodal model v2's tokenizer: v2 pieces (exact round trip) with ``<image>`` as id 7.

Pieces follow :data:`PIECE_PATTERN` -- a word, one digit or one punctuation mark, each with its
leading space if any, or one whitespace character -- the pattern of the text model v2's tokenizer,
so decoding concatenates the pieces and text round-trips exactly ("red circle, blue bar" and
"407" come back as written; a number is one token per digit, as it is printed one glyph per
cell). The vocabulary is every piece of :func:`synthetic.vqa2.all_texts` with and without
its leading space, the digits, the punctuation marks, the whitespace characters and the chat roles;
the special tokens and their ids are the first tokenizer's (:mod:`training.tokenizer`),
then LLaVA's image placeholder as id 7 (as the v1 multimodal tokenizer has it). The vocabulary is
pinned by a test: the training run of the shipped weights depends on it.
"""

from __future__ import annotations

import string
from pathlib import Path

from tokenizers import Tokenizer

from seer.models.tokens import IMAGE_TOKEN
from synthetic import vqa2
from training.tokenizer import (
    PIECE_PATTERN,
    build_v2_backend,
    build_v2_tokenizer,
    pieces,
)

__all__ = ["PIECE_PATTERN", "build_backend", "build_tokenizer", "pieces", "words"]
EXTRA_SPECIAL = (IMAGE_TOKEN,)


def words() -> list[str]:
    """The sorted pieces of the vocabulary (special tokens excluded)."""
    out: set[str] = set()
    for text in vqa2.all_texts():
        for p in pieces(text):
            out |= {p.strip(), " " + p.strip()} if p.strip() else {p}
    for ch in (*string.digits, ",", ".", ":", "?"):
        out |= {ch, " " + ch}
    return sorted(out | {" ", "\n", "\t"})


def build_backend() -> Tokenizer:
    """The v2 tokenizer (:func:`training.tokenizer.build_v2_backend`) over
    :func:`words`."""
    return build_v2_backend(words(), EXTRA_SPECIAL)


def build_tokenizer(out_dir: Path) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    build_v2_tokenizer(out_dir, words(), EXTRA_SPECIAL)
