"""The multimodal model v2's tokenizer: v2 pieces (exact round trip) with ``<image>`` as id 7.

Pieces follow :data:`PIECE_PATTERN` -- a word, one digit or one punctuation mark, each with its
leading space if any, or one whitespace character -- the pattern of the text model v2's tokenizer,
so decoding concatenates the pieces and text round-trips exactly ("red circle, blue bar" and
"407" come back as written; a number is one token per digit, as it is printed one glyph per
cell). The vocabulary is every piece of :func:`seer.demo.vqa2.all_texts` with and without its
leading space, the digits, the punctuation marks, the whitespace characters and the chat roles;
the special tokens and their ids are the first tokenizer's (:mod:`seer.demo.tokenizer`), then
LLaVA's image placeholder as id 7 (as the v1 multimodal tokenizer has it). The vocabulary is pinned
by a test: the training run of the shipped weights depends on it.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

from seer.demo import vqa2
from seer.demo.tokenizer import (
    SPECIAL_TOKENS,
    UNK_TOKEN,
    _special_tokens_map,
    _tokenizer_config,
    _write_json,
    vocabulary,
)
from seer.models.tokens import IMAGE_TOKEN

PIECE_PATTERN = r" ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]|\s"
"""The text model v2's pieces (its `seer.demo.tokenizer.PIECE_PATTERN`)."""
EXTRA_SPECIAL = (IMAGE_TOKEN,)


def pieces(text: str) -> list[str]:
    """`text` split as the tokenizer splits it (before the vocabulary lookup)."""
    return re.findall(PIECE_PATTERN, text)


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
    """Word-level over :data:`PIECE_PATTERN` pieces, a concatenating decoder."""
    vocab = vocabulary(words(), EXTRA_SPECIAL)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK_TOKEN))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PIECE_PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    specials = (*SPECIAL_TOKENS, *EXTRA_SPECIAL)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def build_tokenizer(out_dir: Path) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    build_backend().save(str(out_dir / "tokenizer.json"))
    _write_json(out_dir / "tokenizer_config.json", _tokenizer_config(EXTRA_SPECIAL))
    _write_json(out_dir / "special_tokens_map.json", _special_tokens_map(EXTRA_SPECIAL))
