"""Turn what a user passes as an image into a checked RGB `PIL.Image`, or a one-line error.

Accepted: a `PIL.Image.Image`; a path (str or `Path`) to an image file; a `data:image/...;base64,`
URI (no URLs: nothing is downloaded); a numpy array or torch tensor of shape (H, W), (H, W, 3),
(H, W, 4) or (3, H, W), uint8 in [0, 255] or float in [0, 1].
Refused, with a `SeerError`: a missing file, a file that is not an image, an empty (0-pixel)
image, an image larger than `MAX_PIXELS` (decompression bombs included), bad array shapes/values.
Whatever a decoder raises on a damaged file (Pillow's plugins raise OSError, ValueError,
TypeError, SyntaxError, struct.error, ...) is a `SeerError` too, so every front end (the CLI's
one line, the server's 400) sees one kind of error for one kind of mistake.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, ImageFile, UnidentifiedImageError

from seer.errors import SeerError

MAX_PIXELS = 64_000_000  # 8000 x 8000: far beyond any tower's need, small enough to decode safely
MAX_SIDE = 32_768  # an extreme aspect ratio (e.g. 1 x 40000) is refused as well


def load_image(image) -> Image.Image:
    """The image as RGB, checked; see the module docstring for what is accepted."""
    if isinstance(image, Image.Image):
        img = image
    elif isinstance(image, (str, Path)):
        img = _from_string(str(image))
    elif isinstance(image, np.ndarray) or type(image).__module__.startswith("torch"):
        img = _from_array(image)
    else:
        raise SeerError(
            f"cannot use a {type(image).__name__} as an image: give a path, a data URI, "
            "a PIL image or an (H, W, 3) array"
        )
    _check_size(img.size)
    try:
        with _strict():
            return img.convert("RGB")
    except Exception as e:  # any decoder failure is the image's fault
        raise SeerError(f"cannot decode the image: {_why(e)}") from None


def _from_string(s: str) -> Image.Image:
    if s.startswith("data:"):
        head, _, data = s.partition(",")
        if not head.startswith("data:image/") or ";base64" not in head:
            raise SeerError("a data URI image must look like data:image/png;base64,...")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise SeerError("the data URI's base64 payload is corrupt") from None
        return _open(io.BytesIO(raw), "the data URI")
    if s.startswith(("http://", "https://")):
        raise SeerError("image URLs are not fetched; download the file and pass its path")
    path = Path(s).expanduser()
    if not path.exists():
        raise SeerError(f"image file {s!r} does not exist")
    if not path.is_file():
        raise SeerError(f"image path {s!r} is not a file")
    if path.stat().st_size == 0:
        raise SeerError(f"image file {s!r} is empty")
    return _open(path, repr(s))


def _open(src, name: str) -> Image.Image:
    try:
        with warnings.catch_warnings(), _strict():  # a damaged header's warnings: the error
            warnings.simplefilter("ignore")  # says it all
            with Image.open(src) as img:
                _check_size(img.size)  # before decoding the pixels
                img.load()
                return img
    except SeerError:
        raise
    except UnidentifiedImageError:
        raise SeerError(f"{name} is not an image PIL can read") from None
    except Image.DecompressionBombError:
        raise SeerError(f"{name} is too large (over {MAX_PIXELS:,} pixels)") from None
    except Exception as e:  # OSError, ValueError, SyntaxError, struct.error, ...
        raise SeerError(f"{name} is a damaged image: {_why(e)}") from None


@contextlib.contextmanager
def _strict():
    """Pillow refuses truncated files while we decode, whatever another library set globally
    (lmms-eval sets `ImageFile.LOAD_TRUNCATED_IMAGES = True` on import: a cut file would then
    decode as a partly grey picture, silently)."""
    before = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = before


def _why(e: Exception) -> str:
    """A decoder's complaint as one short line."""
    arg = e.args[0] if len(e.args) == 1 else None
    raw = arg.decode("latin-1") if isinstance(arg, bytes) else str(e)  # some plugins raise bytes
    text = " ".join(raw.split())[:200]
    return text or type(e).__name__


def _check_size(size: tuple[int, int]) -> None:
    w, h = size
    if w <= 0 or h <= 0:
        raise SeerError(f"the image is empty ({w}x{h} pixels)")
    if w * h > MAX_PIXELS or max(w, h) > MAX_SIDE:
        raise SeerError(
            f"the image is too large ({w}x{h}); the limit is {MAX_PIXELS:,} pixels "
            f"and {MAX_SIDE} per side: resize it first"
        )


def _from_array(a) -> Image.Image:
    if not isinstance(a, np.ndarray):
        a = a.detach().cpu().numpy()
    if a.ndim == 3 and a.shape[0] in (1, 3) and a.shape[-1] not in (1, 3, 4):
        a = np.moveaxis(a, 0, -1)  # (C, H, W) -> (H, W, C)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[-1] not in (3, 4)):
        raise SeerError(f"an image array must be (H, W), (H, W, 3|4) or (3, H, W), not {a.shape}")
    _check_size((a.shape[1], a.shape[0]))
    if a.dtype == np.uint8:
        pass
    elif np.issubdtype(a.dtype, np.floating) or a.dtype == np.bool_:
        a = a.astype(np.float64)
        if not np.isfinite(a).all() or a.min() < 0 or a.max() > 1:
            raise SeerError("a float image array must hold finite values in [0, 1]")
        a = np.round(a * 255).astype(np.uint8)
    else:
        raise SeerError(f"an image array must be uint8 or float, not {a.dtype}")
    return Image.fromarray(np.ascontiguousarray(a))
