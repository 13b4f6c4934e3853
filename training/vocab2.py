"""The v2 text model's vocabulary: every piece its tasks can produce, closed and deterministic.

Pieces (:data:`training.tokenizer.PIECE_PATTERN`) of: every template and scene sentence
of :mod:`synthetic.lines`, every name with and without a leading space, every letter and
digit with and without one, the punctuation marks, a few common English words (so that other
phrasings of the same requests lose fewer words to the unknown token), the chat roles and the
whitespace characters.
"""

from __future__ import annotations

import string

from synthetic import lines
from synthetic.names import first_names, last_names
from training.tokenizer import pieces

_EXTRA = """a an the of to in on at by for with from and or but not no yes is are was were be
been this that these those it its they them their there here what which who whom whose when where
why how all any each every some one two three four five six seven eight nine ten first last next
new old order list line lines queue people person customer customers service desk staff member
members previous wrong correct right left random randomly position positions index final only
exactly provide give write output result answer please must should need needs ensure different
sequence original fair distribution efficient processing organized alphabetically alphabetical
name names last arrived arrive record following specified inserted insert removed remove
replaced replace reversed reverse sorted sort shuffled shuffle copy copied put keep managing
manage waiting wait has have had person's grid size symbols symbol row rows column columns
digits digit values value fill generate square Latin CSV subgrids compose contains contain
number numbers count"""
EXTRA_WORDS = tuple(_EXTRA.split())


def words() -> list[str]:
    """The sorted pieces of the v2 vocabulary (special tokens excluded)."""
    texts = [
        *lines.SCENES,
        *(t for ts in (*lines.OPS.values(), *lines.PUZZLES.values()) for t in ts),
    ]
    out = {p for t in texts for p in pieces(t.replace("{", " ").replace("}", " "))}
    for w in (
        *first_names(),
        *last_names(),
        *EXTRA_WORDS,
        *(w.capitalize() for w in EXTRA_WORDS),
        *string.ascii_letters,
        *string.digits,
        *string.punctuation,
    ):
        out |= {w, " " + w}
    out |= {" ", "\n", "\t", "user", "assistant", "system"}
    return sorted(out)
