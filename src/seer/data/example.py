"""`Example`: one dataset row as every data-driven command sees it, and its identity key.

An example is a prompt (or an OpenAI-style chat), an optional image, an optional reference
answer (and, for sources with their own metric, that metric's name and reference) and an id.
Two examples are the same request when their prompt text (or their whole chat) and their image
*bytes* are equal (`example_key`); `seer.data.split` de-duplicates and splits on
that key, so a calibration set and an evaluation set can never share a request.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import PIL.Image

Image: TypeAlias = "str | PIL.Image.Image"  # an absolute path, a `data:image/...;base64,` URI


@dataclass(slots=True)
class Example:
    """One request of a dataset."""

    id: str  # unique within its source (the row's `id`, else its 0-based row index)
    prompt: str  # the user's text; for a chat, the text of its last user turn
    messages: list[dict] | None = None  # the whole OpenAI-style chat, when the row gave one
    image: Image | None = None  # absolute path, data URI or PIL image (see `seer.images`)
    answer: str | None = None  # reference answer, when known
    family: str | None = None  # task family / category, when the source has one (reports)
    reference: object = None  # the source's own reference for `metric` (ParallelBench: str/dict)
    metric: str | None = None  # the scorer `seer.data.score` applies (None: exact match on answer)

    @property
    def key(self) -> str:
        """Identity of the request: hex digest of its text (or chat) and its image bytes."""
        return example_key(self)


def example_key(ex: Example) -> str:
    """sha256 over the prompt text (the canonical JSON of the chat, when there is one) and the
    image's bytes (file bytes, data-URI payload, or PIL mode + size + pixels)."""
    h = hashlib.sha256()
    text = ex.prompt if ex.messages is None else json.dumps(ex.messages, sort_keys=True)
    h.update(b"messages\0" if ex.messages is not None else b"prompt\0")
    h.update(text.encode("utf-8"))
    h.update(b"\0image\0")
    if ex.image is not None:
        h.update(image_bytes(ex.image))
    return h.hexdigest()


def image_bytes(image: Image) -> bytes:
    """The bytes that identify an image: a file's contents, a data URI's decoded payload, or a
    PIL image's mode, size and pixels."""
    if isinstance(image, str) and image.startswith("data:"):
        return base64.b64decode(image.partition(",")[2])
    if isinstance(image, (str, Path)):
        return Path(image).read_bytes()
    mode, size = image.mode, image.size  # PIL.Image.Image
    return f"{mode}:{size[0]}x{size[1]}:".encode() + image.tobytes()
