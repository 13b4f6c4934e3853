"""Running the app under uvicorn, with a draining SIGTERM.

On SIGTERM the server stops taking requests (503, `/health` too) and waits until the requests
already in the engine are answered (at most `drain_timeout` seconds), then uvicorn shuts down as
usual: it closes the listening socket and lets open responses finish. A second SIGTERM, or
SIGINT, shuts down at once (uvicorn's own behaviour).
"""

from __future__ import annotations

import asyncio
import logging
import signal

import uvicorn

log = logging.getLogger("seer.serve")


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
        self.should_exit = True


def run(app, host: str, port: int, drain_timeout: float = 60.0, log_level: str = "info") -> None:
    # loop/http/ws pinned: uvicorn's "auto" would switch to uvloop + httptools (+ websockets)
    # whenever another extra installs them (ray[serve] does); the server runs the same everywhere
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=drain_timeout,
        loop="asyncio", http="h11", ws="none",
    )  # fmt: skip
    server = DrainingServer(config, app.state.service, drain_timeout)
    server.run()
