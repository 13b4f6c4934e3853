"""Damaged image files: whatever Pillow's decoders raise, `load_image` says it as one
`SeerError` line (the CLI's one line, the server's 400), from a path and from a data URI."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from seer.errors import SeerError
from seer.images import load_image


def encoded(fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 40, 40)).save(buf, format=fmt)
    return buf.getvalue()


def png_bad_ihdr() -> bytes:  # one bit of the IHDR chunk's length flipped: a ValueError in Pillow
    b = bytearray(encoded("PNG"))
    b[11] ^= 0x01
    return bytes(b)


def ppm_bad_header() -> bytes:  # a maxval token too long: a ValueError in Pillow
    return b"P6\n16 16\n999999999999\n" + encoded("PPM")[15:]


@pytest.mark.parametrize("make", [png_bad_ihdr, ppm_bad_header])
def test_a_damaged_file_is_one_line(make, tmp_path):
    path = tmp_path / "x.img"
    path.write_bytes(make())
    with pytest.raises(SeerError, match="is a damaged image") as e:
        load_image(str(path))
    assert "\n" not in str(e.value)
    uri = "data:image/png;base64," + base64.b64encode(make()).decode()
    with pytest.raises(SeerError, match="the data URI is a damaged image"):
        load_image(uri)


@pytest.mark.parametrize("fmt", ["PNG", "PPM", "BMP", "TIFF", "GIF"])
def test_every_flipped_byte_loads_or_is_one_line(fmt, tmp_path):
    src = encoded(fmt)
    path = tmp_path / "x"
    for i in range(len(src)):
        b = bytearray(src)
        b[i] ^= 0x01 if i % 2 else 0xFF
        path.write_bytes(bytes(b))
        try:
            img = load_image(str(path))
        except SeerError as e:
            assert str(e) and "\n" not in str(e)
        else:
            assert img.mode == "RGB"


def test_a_truncated_file_is_refused_whatever_another_library_set(tmp_path, monkeypatch):
    """lmms-eval sets Pillow's LOAD_TRUNCATED_IMAGES on import; our decoding stays strict."""
    import io

    from PIL import Image, ImageFile

    from seer.errors import SeerError
    from seer.images import load_image

    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 10, 10)).save(buf, format="PNG")
    cut = tmp_path / "cut.png"
    cut.write_bytes(buf.getvalue()[:-40])
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with pytest.raises(SeerError):
        load_image(str(cut))
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True  # put back as it was
