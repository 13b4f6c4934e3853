"""A request's prompt made ready for the engine, off the engine's thread.

Tokenizing a long prompt or decoding a large image costs CPU seconds; on the engine's thread it
would stall every request being denoised. So each request is prepared here, in the server's own
thread pool, before its ticket is queued: the text is tokenized (chat template included), the
image read, decoded and run through the model's processor, and the engine receives the finished
`PromptInput` (`Engine.add` then only checks it). What bounds the cost:

- the prompt's length, checked before tokenizing: at most `chars_per_token` characters per
  token of the model's context (a token id prompt: the context itself). Real tokenizers average
  3-5 characters a token, so a prompt over the bound can never fit and gets 400 at once;
- the pixels of one image (`max_image_pixels`, read from its header before any decoding: 413)
  and the pixels being decoded at once over all requests (`PixelBudget`): a request whose image
  would pass the budget waits until earlier ones are done, so eight large images decode two at a
  time instead of holding eight decoded copies. Preparing an image costs ~40 bytes a pixel at
  its peak (the decoded image, its RGB copy, the processor's float arrays), so the defaults
  (16 MP an image, 32 MP at once) keep it near 1.5 GB; after a large image the freed memory is
  handed back to the system (glibc's `malloc_trim`), else the process would keep its peak;
- a time limit per request (`prepare_timeout`) on the whole preparation, budget wait included:
  past it the client gets 503 ``timeout`` with Retry-After (the thread finishes its work and
  gives its pixels back; nothing of it reaches the engine).

Any failure to decode an image (damaged data, a format PIL cannot read, a decoder's own
exception) is a 400 naming image_url, never a 500.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import io
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from seer.errors import SeerError
from seer.serve.config import DEFAULTS
from seer.serve.errors import APIError, bad_request, too_large

if TYPE_CHECKING:
    from seer.lm import DiffusionLM

RETRY_AFTER = 1  # seconds a 503 timeout asks the client to wait


@dataclass(slots=True)
class Limits:
    """What the server accepts and how much preparing a request may cost (the defaults and
    their meaning: `seer.serve.config.ServerConfig`)."""

    image_root: Path | None = None  # image_url may name a file under this folder (resolved)
    max_image_bytes: int = DEFAULTS["max_image_bytes"]  # one image, encoded
    max_image_pixels: int = DEFAULTS["max_image_pixels"]  # one image, decoded
    pixel_budget: int = DEFAULTS["pixel_budget"]  # image pixels decoded at once; more wait
    prepare_timeout: float = DEFAULTS["prepare_timeout"]  # seconds to prepare one request
    chars_per_token: int = DEFAULTS["chars_per_token"]  # prompt characters per context token


@dataclass(slots=True)
class Prompt:
    """What the engine needs of one request, before sampling (from `convert`)."""

    prompt: str | list[int] | list[dict]  # text, token ids, or chat turns (role/content dicts)
    chat: bool  # apply the chat template to a text prompt
    image: str | None  # a data URI, or a file resolved under the image root


class PixelBudget:
    """A count of the image pixels being decoded; `acquire` waits until `n` more fit (an image
    larger than the whole budget waits until nothing else is decoding). Event loop only."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiters: list[asyncio.Future] = []

    async def acquire(self, n: int) -> int:
        n = min(n, self.limit)
        while self.used and self.used + n > self.limit:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                self._waiters.remove(fut)
        self.used += n
        return n

    def release(self, n: int) -> None:
        self.used -= n
        for fut in self._waiters:  # each re-checks what fits
            if not fut.done():
                fut.set_result(None)


class Preparer:
    """Prepares requests for one model in a pool of threads (see the module docstring)."""

    def __init__(
        self, lm: DiffusionLM, limits: Limits, threads: int = 4, image_threads: int = 2
    ) -> None:
        self.lm = lm
        self.limits = limits
        self.budget = PixelBudget(limits.pixel_budget)
        # two pools: text-only requests never queue behind image decoding
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="seer-prepare")
        self.image_pool = ThreadPoolExecutor(image_threads, thread_name_prefix="seer-image")

    def close(self) -> None:
        for pool in (self.pool, self.image_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    def check_length(self, prompt: Prompt) -> None:
        """400 for a prompt that cannot fit the model's context, before any tokenizing."""
        context = self.lm.max_length
        p = prompt.prompt
        if isinstance(p, list) and p and isinstance(p[0], int):
            if len(p) > context:
                raise bad_request(
                    f"the prompt has {len(p):,} token ids; the model's context is "
                    f"{context:,} tokens",
                    "prompt",
                )
            return
        if isinstance(p, str):
            chars = len(p)
        else:  # chat turns
            chars = sum(len(t["content"]) for t in p if isinstance(t, dict))
        limit = self.limits.chars_per_token * context
        if chars > limit:
            raise bad_request(
                f"the prompt is {chars:,} characters; this server takes at most {limit:,} "
                f"({self.limits.chars_per_token} per token of the model's {context:,}-token "
                "context): shorten it",
                "messages" if prompt.chat or isinstance(p, list) else "prompt",
            )

    async def run(self, fn, *args):
        """`fn(*args)` in the pool, within `prepare_timeout` (a 503 ``timeout`` past it): the
        event loop never runs what costs CPU (parsing, checking, encoding a request)."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.limits.prepare_timeout):
                return await asyncio.shield(_run(loop, self.pool, fn, *args))
        except TimeoutError:
            raise self._timeout() from None

    def _timeout(self) -> APIError:
        return APIError(
            503,
            f"preparing the request (reading its image, tokenizing) took over "
            f"{self.limits.prepare_timeout:g} s; the server is busy: retry",
            "timeout",
            headers={"Retry-After": str(RETRY_AFTER)},
        )

    async def prepare(self, prompt: Prompt, params):
        """The request's `PromptInput`, or an `APIError` (400 / 413 / 503 timeout)."""
        self.check_length(prompt)
        loop = asyncio.get_running_loop()
        limit = self.limits.prepare_timeout
        try:
            async with asyncio.timeout(limit):
                raw, held, pool = None, 0, self.pool
                if prompt.image is not None:
                    pool = self.image_pool
                    opened = _run(loop, pool, self._open_image, prompt.image)
                    raw, pixels = await asyncio.shield(opened)
                    held = await self.budget.acquire(pixels)
                fut = _run(loop, pool, self._encode, prompt, params, raw)
                if held:  # given back when the thread is done, even if the client is not
                    fut.add_done_callback(lambda _: self.budget.release(held))
                return await asyncio.shield(fut)
        except TimeoutError:
            raise self._timeout() from None

    # -- the pool's threads ---------------------------------------------------------------------
    def _open_image(self, source: str) -> tuple[bytes, int]:
        """The image's bytes and pixel count (from its header: no pixels decoded yet)."""
        from PIL import Image

        raw = self._image_bytes(source)
        cap = self.limits.max_image_pixels
        try:
            with Image.open(io.BytesIO(raw)) as img:
                w, h = img.size
        except Image.DecompressionBombError:  # Pillow's own bound, far over ours: its header
            raise too_large(
                f"the image is far over this server's limit of {cap / 1e6:g} "
                "megapixels (--max-image-mp); resize it"
            ) from None
        except Exception as e:  # every decoder's failure is the image's fault
            raise _undecodable(e) from None
        if w * h > cap:
            raise too_large(
                f"the image is {w}x{h} ({w * h / 1e6:.1f} megapixels); this "
                f"server takes at most {cap / 1e6:g} megapixels (--max-image-mp); resize it"
            )
        return raw, w * h

    def _image_bytes(self, source: str) -> bytes:
        cap = self.limits.max_image_bytes
        if source.startswith("data:"):
            head, _, data = source.partition(",")
            if not head.startswith("data:image/") or ";base64" not in head:
                raise bad_request(
                    "a data URI image must look like data:image/png;base64,...", "image_url"
                )
            try:
                return base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise bad_request("the image's base64 payload is corrupt", "image_url") from None
        from seer.serve.security import REFUSED

        try:
            with open(source, "rb") as f:  # resolved under the image root (`security`)
                raw = f.read(cap + 1)
        except OSError:
            raise APIError(400, REFUSED, "invalid_request", "image_url") from None
        if len(raw) > cap:
            raise too_large(f"the image file is over the server's limit of {cap:,} bytes")
        return raw

    def _encode(self, prompt: Prompt, params, raw: bytes | None):
        """The `PromptInput`; `raw`: the image's bytes (decoded here, freed before returning)."""
        try:
            return self._inputs(prompt, params, self._decode(raw) if raw is not None else None)
        finally:
            if raw is not None:
                _trim()

    def _decode(self, raw: bytes):
        from PIL import Image

        from seer.images import load_image

        try:
            return load_image(Image.open(io.BytesIO(raw)))  # decodes the pixels, checks the size
        except SeerError as e:
            raise bad_request(str(e), "image_url") from None
        except Exception as e:  # a decoder's own exception: still the image's fault
            raise _undecodable(e) from None

    def _inputs(self, prompt: Prompt, params, image):
        from seer.engine.prompts import encode_chat, prompt_inputs

        lm = self.lm  # `params`: resolved (`seer.engine.request.resolve`)
        text = prompt.prompt
        try:
            if isinstance(text, list) and text and isinstance(text[0], dict):
                # the turns were checked as they were read (`convert.chat_prompt`)
                text = encode_chat(lm, text, strict=False)
            return prompt_inputs(lm, text, params, image, prompt.chat)[0]
        except SeerError as e:
            msg = str(e)
            raise APIError(413 if "too large" in msg else 400, msg, "invalid_request") from None


def _run(loop, pool, fn, *args) -> asyncio.Future:
    """`fn(*args)` in `pool`; a timed-out caller's result or error is dropped quietly."""
    fut = loop.run_in_executor(pool, fn, *args)
    fut.add_done_callback(lambda f: f.cancelled() or f.exception())
    return fut


def _trim() -> None:
    """Hand freed heap memory back to the system (glibc; elsewhere nothing to do)."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)


def _undecodable(e: Exception) -> APIError:
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    detail = re.sub(r" <[^<>]* at 0x[0-9a-fA-F]+>", "", detail)  # no object reprs for the client
    return bad_request(
        f"the image cannot be decoded (damaged, or not an image): {detail}", "image_url"
    )
