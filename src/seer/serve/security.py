"""Who may call the server, and which files an image_url may name.

`APIKey` is ASGI middleware: with `--api-key`, every path under `/v1/` (and `/metrics` unless
`--public-metrics`) needs "Authorization: Bearer KEY", checked on the raw header bytes before
the body is read or parsed, so a caller without the key learns nothing about the API (a bad
body gets 401, not 400). `/health` stays open for liveness probes and says only whether the
server takes requests. The key is compared in constant time as UTF-8 bytes, so any header,
non-ASCII included, is a 401 at worst.

`local_image` resolves an image_url path under the folder given to `--allow-local-images DIR`
(symlinks followed) and refuses anything that ends outside it (`..`, an absolute path, a link
out of the folder) or is not a file, with ONE message whatever the reason, so the answer never
tells whether a file exists outside the folder.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from seer.serve.errors import APIError

UNAUTHORIZED = "invalid API key: send 'Authorization: Bearer <key>'"
REFUSED = (
    "image_url is not an image file under the server's image folder: give a path relative to "
    "it, or send the image as a data: URI"
)


class APIKey:
    """401 for a request to a protected path without the key (see the module docstring)."""

    def __init__(
        self,
        app,
        key: str,
        public_metrics: bool = False,
        refused: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.key = key.encode("utf-8")
        self.public_metrics = public_metrics
        self.refused = refused  # called with the path of each refused request (metrics)

    def protects(self, path: str) -> bool:
        return path.startswith("/v1/") or (path == "/metrics" and not self.public_metrics)

    def allows(self, headers: list[tuple[bytes, bytes]]) -> bool:
        given = next((v for k, v in headers if k.lower() == b"authorization"), b"")
        scheme, _, token = given.strip().partition(b" ")
        return scheme.lower() == b"bearer" and secrets.compare_digest(token.strip(), self.key)

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and self.protects(path) and not self.allows(scope["headers"]):
            if self.refused is not None:
                self.refused(path)
            response = APIError(401, UNAUTHORIZED, "invalid_api_key").response()
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def image_root(folder: str | Path) -> Path:
    """`--allow-local-images DIR`, resolved; a `SeerError` when it is not a folder."""
    from seer.errors import SeerError

    root = Path(folder).expanduser()
    if not root.is_dir():
        raise SeerError(f"--allow-local-images: {str(folder)!r} is not a folder")
    return root.resolve()


def local_image(url: str, root: Path) -> Path:
    """The file `url` names under `root` (relative to it, or absolute inside it), resolved;
    `APIError` 400 with `REFUSED` for anything else."""
    name = url.removeprefix("file://")
    try:
        path = (root / name).resolve(strict=True)
        inside = path.is_relative_to(root) and path.is_file()
    except (OSError, RuntimeError, ValueError):  # missing, a link loop, a NUL in the name
        inside = False
    if not inside:
        raise APIError(400, REFUSED, "invalid_request", "image_url")
    return path
