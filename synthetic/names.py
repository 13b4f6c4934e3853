"""The people of the built-in text model's tasks: the most frequent US Census first and last
names (public domain; `tools/make_names.py` wrote the two files from the 1990 lists)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("data")


@cache
def first_names() -> tuple[str, ...]:
    """629 first names (the 320 most frequent of each sex), in frequency order."""
    return tuple((DATA / "first_names.txt").read_text().split())


@cache
def last_names() -> tuple[str, ...]:
    """The 1,000 most frequent last names, in frequency order."""
    return tuple((DATA / "last_names.txt").read_text().split())
