"""Running the app under uvicorn, with a draining SIGTERM and a clean end for what still runs.

On SIGTERM the server stops taking requests (503, `/health` too) and waits until the requests
already in the engine are answered (at most `drain_timeout` seconds), then shuts down. Whatever
is still in the engine then (the drain timed out, or SIGINT / a second SIGTERM came) is ended
before uvicorn closes the connections: each request gets an OpenAI-style 503 with code
``shutting_down`` (a stream: a last chunk carrying that error, then ``data: [DONE]``) and the log
one line per request, never a cancelled task's traceback. A second SIGTERM or SIGINT while
draining skips the rest of the drain (uvicorn's own behaviour).
"""

from __future__ import annotations

import asyncio
import logging
import signal

import uvicorn

log = logging.getLogger("seer.serve")

CLOSE_GRACE = 10.0  # seconds the ended requests get to send their 503 or last chunk


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, service, drain_timeout: float) -> None:
        super().__init__(config)
        self.service = service
        self.drain_timeout = drain_timeout
        self._drain_task: asyncio.Task | None = None

    def handle_exit(self, sig: int, frame) -> None:
        if sig == signal.SIGTERM and not self.service.draining:
            self.service.draining = True
            loop = asyncio.get_event_loop()
            self._drain_task = loop.create_task(self._drain())
            return
        super().handle_exit(sig, frame)

    async def _drain(self) -> None:
        n = len(self.service.live)
        log.warning("SIGTERM: draining %d running request(s), refusing new ones", n)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.drain_timeout
        while self.service.live and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if self.service.live:
            log.warning("drain timeout (%g s) passed with %d request(s) running",
                        self.drain_timeout, len(self.service.live))  # fmt: skip
        self.should_exit = True

    async def shutdown(self, sockets=None) -> None:
        await self._end_live()
        await super().shutdown(sockets)

    async def _end_live(self) -> None:
        """End every request still in the engine with 503 shutting_down and wait (at most
        CLOSE_GRACE) until each handler has sent it."""
        self.service.draining = True  # from now on a new request gets 503 too
        if not self.service.live:
            return
        self.service.worker.shut_down()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_GRACE
        while self.service.live and not self.force_exit and loop.time() < deadline:
            await asyncio.sleep(0.02)


def run(app, host: str, port: int, drain_timeout: float = 60.0, log_level: str = "info") -> None:
    # loop/http/ws pinned: uvicorn's "auto" would switch to uvloop + httptools (+ websockets)
    # whenever another extra installs them (ray[serve] does); the server runs the same everywhere.
    # The graceful timeout covers only the responses ended by `_end_live` (the drain came first).
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=CLOSE_GRACE,
        loop="asyncio", http="h11", ws="none",
    )  # fmt: skip
    server = DrainingServer(config, app.state.service, drain_timeout)
    server.run()
