"""OpenAI-shaped response bodies and stream chunks, plus each choice's `seer` object.

`seer` (per choice): `detected` (Seer's L*, or null when Seer was off or found no boundary),
`window` (answer positions denoised after step 0, guard growth included), `gen_length`
(the window asked for, `max_tokens`), `nfe` (forward passes), `grown` (times the guard grew
Seer's window), `hit_window` (the answer reached the end of its window, Seer's or the full one:
no end token inside it, so a longer window might have answered on) and `path` (the engine's
execution path for the row).
"""

from __future__ import annotations

import json
import time
import uuid


def seer_info(result, gen_length: int) -> dict:
    return {
        "detected": result.detected,
        "window": result.window,
        "gen_length": gen_length,
        "nfe": result.nfe,
        "grown": result.grown,
        "hit_window": result.hit_window,
        "path": result.path,
    }


def usage(result) -> dict:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.tokens,
        "total_tokens": result.prompt_tokens + result.tokens,
    }


def finish_reason(result) -> str:
    return "length" if result.finish_reason == "length" else "stop"


class Envelope:
    """The id, creation time and model name shared by a response or all chunks of a stream."""

    def __init__(self, kind: str, model: str) -> None:
        prefix = "chatcmpl" if kind == "chat" else "cmpl"
        self.kind = kind
        self.id = f"{prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model

    def _head(self, obj: str) -> dict:
        return {"id": self.id, "object": obj, "created": self.created, "model": self.model}

    def response(self, text: str, result, gen_length: int) -> dict:
        info = seer_info(result, gen_length)
        reason = finish_reason(result)
        if self.kind == "chat":
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": reason, "seer": info}
            obj = "chat.completion"
        else:
            choice = {
                "index": 0,
                "text": text,
                "finish_reason": reason,
                "logprobs": None,
                "seer": info,
            }
            obj = "text_completion"
        return {**self._head(obj), "choices": [choice], "usage": usage(result)}

    def chunk(self, delta: str | None, result=None, gen_length: int = 0, first=False) -> str:
        """One SSE event: text `delta`, or the closing chunk when `result` is given."""
        reason = None if result is None else finish_reason(result)
        if self.kind == "chat":
            d = {} if delta is None else {"content": delta}
            if first:
                d["role"] = "assistant"
            choice = {"index": 0, "delta": d, "finish_reason": reason}
            obj = "chat.completion.chunk"
        else:
            choice = {"index": 0, "text": delta or "", "finish_reason": reason, "logprobs": None}
            obj = "text_completion"
        if result is not None:
            choice["seer"] = seer_info(result, gen_length)
        return sse({**self._head(obj), "choices": [choice]})

    def usage_chunk(self, result) -> str:
        obj = "chat.completion.chunk" if self.kind == "chat" else "text_completion"
        return sse({**self._head(obj), "choices": [], "usage": usage(result)})


def sse(data: dict | str) -> str:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {payload}\n\n"
