"""HTTP errors with OpenAI-style bodies: `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.responses import JSONResponse

TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "service_unavailable",
}


class APIError(Exception):
    """An error the client gets as an HTTP status and an OpenAI-style body."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        param=None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = headers  # e.g. Retry-After on a 429

    def response(self) -> JSONResponse:
        return JSONResponse(
            body(self.status, self.message, self.code, self.param),
            self.status,
            headers=self.headers,
        )


def body(status: int, message: str, code: str | None = None, param=None) -> dict:
    kind = TYPES.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def bad_request(message: str, param: str | None = None) -> APIError:
    return APIError(400, message, "invalid_request", param)


def too_large(message: str) -> APIError:
    return APIError(413, message, "too_large")


def validation_message(errors: Sequence[Any]) -> tuple[str, str | None]:
    """The one line of a request body pydantic refused, and the field it names: the first
    error, as "field: what is wrong" (the text our validators give, e.g. "steps: must be >= 1,
    got 0", the library's words after the field's name)."""
    first: dict[str, Any] = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    loc = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
    msg = first.get("msg", "invalid request").removeprefix("Value error, ")
    return (f"{loc}: {msg}" if loc else msg), (loc or None)
