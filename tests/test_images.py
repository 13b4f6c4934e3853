"""`seer.images.load_image`: what a user may pass as an image, and the errors for the rest."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch
from PIL import Image

from seer.errors import SeerError
from seer.images import MAX_PIXELS, load_image


def _png(w=8, h=6) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 10, 10)).save(buf, format="PNG")
    return buf.getvalue()


def test_accepted_forms_give_the_same_rgb_image(tmp_path):
    (tmp_path / "a.png").write_bytes(_png())
    uri = "data:image/png;base64," + base64.b64encode(_png()).decode()
    arr = np.zeros((6, 8, 3), np.uint8)
    arr[...] = (200, 10, 10)
    forms = [
        tmp_path / "a.png",
        str(tmp_path / "a.png"),
        uri,
        Image.open(io.BytesIO(_png())),
        arr,
        arr.astype(np.float32) / 255,
        torch.from_numpy(arr).permute(2, 0, 1),
        Image.new("RGBA", (8, 6), (200, 10, 10, 128)),
    ]
    for f in forms:
        img = load_image(f)
        assert img.mode == "RGB" and img.size == (8, 6)
        assert img.getpixel((3, 3)) == (200, 10, 10)


@pytest.mark.parametrize(
    "bad, match",
    [
        ("missing.png", "does not exist"),
        ("data:text/plain;base64,aGk=", "data:image"),
        ("data:image/png;base64,@@@", "corrupt"),
        ("https://example.com/x.png", "not fetched"),
        (np.zeros((0, 5, 3), np.uint8), "empty"),
        (np.zeros((4, 4, 2), np.uint8), "must be"),
        (np.full((4, 4, 3), 2.0), r"\[0, 1\]"),
        (np.zeros((4, 4, 3), np.int64), "uint8 or float"),
        (12, "cannot use a int"),
    ],
)
def test_bad_images_raise_one_line_errors(bad, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SeerError, match=match):
        load_image(bad)


def test_files_that_are_not_images(tmp_path):
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "text.png").write_text("hello")
    (tmp_path / "cut.png").write_bytes(_png()[:40])
    with pytest.raises(SeerError, match="is empty"):
        load_image(tmp_path / "empty.png")
    with pytest.raises(SeerError, match="not an image"):
        load_image(tmp_path / "text.png")
    with pytest.raises(SeerError, match="damaged|not an image"):
        load_image(tmp_path / "cut.png")
    with pytest.raises(SeerError, match="not a file"):
        load_image(tmp_path)


def test_huge_images_are_refused_before_decoding(tmp_path):
    side = int(MAX_PIXELS**0.5) + 10
    buf = io.BytesIO()
    Image.new("1", (side, side)).save(buf, format="PNG")  # 1-bit: a small file, many pixels
    (tmp_path / "huge.png").write_bytes(buf.getvalue())
    with pytest.raises(SeerError, match="too large"):
        load_image(tmp_path / "huge.png")
