"""Running the app under uvicorn, with a draining SIGTERM and a clean end for what still runs.

The listening socket is bound first (`bind`, before the model loads): a port in use, an address
that is not this machine's or a name that does not resolve is one `SeerError` line (exit 2),
never uvicorn's log.

On SIGTERM the server stops taking requests (503, `/health` too) and waits until the requests
already in the engine are answered (at most `drain_timeout` seconds), then shuts down. Whatever
is still in the engine then (the drain timed out, or SIGINT / a second SIGTERM came) is ended
before uvicorn closes the connections: each request gets an OpenAI-style 503 with code
``shutting_down`` (a stream: a last chunk carrying that error, then ``data: [DONE]``) and the log
one line per request, never a cancelled task's traceback.

Signals and exit codes: SIGTERM drains; SIGINT (Ctrl-C) ends at once (what runs gets the 503);
a second signal while draining ends the drain at once the same way, and a third stops waiting
for the 503s to be sent. A shutdown that ends this way, whatever signal started it, exits 0:
the signal is not re-raised (uvicorn's default would end the process by it, -15, or 130 for
SIGINT). Non-zero means the server did not run: 2 when it could not start (`SeerError`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket

import uvicorn

from seer.errors import SeerError
from seer.serve.config import DEFAULTS

log = logging.getLogger("seer.serve")

CLOSE_GRACE = 10.0  # seconds the ended requests get to send their 503 or last chunk


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, service, drain_timeout: float) -> None:
        super().__init__(config)
        self.service = service
        self.drain_timeout = drain_timeout
        self._drain_task: asyncio.Task | None = None

    def handle_exit(self, sig: int, frame) -> None:
        """See the module docstring. Unlike uvicorn's, the signal is not kept to be re-raised
        after the shutdown."""
        if sig == signal.SIGTERM and not self.service.draining:
            self.service.draining = True
            loop = asyncio.get_event_loop()
            self._drain_task = loop.create_task(self._drain())
            return
        if self.should_exit:
            self.force_exit = True
        self.should_exit = True

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


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (not yet listening), or a `SeerError` saying why not."""
    where = f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise SeerError(f"cannot listen on --host {host}: not an address of this machine nor a "
                        f"name it resolves ({why})") from None  # fmt: skip
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind(addr)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise SeerError(f"cannot listen on {where}: the port is in use (another server?); "
                            "stop it or pick another --port") from None  # fmt: skip
        if e.errno == errno.EADDRNOTAVAIL:
            raise SeerError(f"cannot listen on --host {host}: it is not an address of this "
                            "machine") from None  # fmt: skip
        if e.errno == errno.EACCES:
            raise SeerError(f"cannot listen on {where}: permission denied (ports below 1024 "
                            "need privileges); pick another --port") from None  # fmt: skip
        raise SeerError(f"cannot listen on {where}: {e.strerror or e}") from None
    return sock


def run(app, sock: socket.socket, drain_timeout: float = DEFAULTS["drain_timeout"],
        log_level: str = DEFAULTS["log_level"]) -> None:  # fmt: skip
    """Serve `app` on `sock` (from `bind`) until a signal ends it (module docstring)."""
    # loop/http/ws pinned: uvicorn's "auto" would switch to uvloop + httptools (+ websockets)
    # whenever another extra installs them (ray[serve] does); the server runs the same everywhere.
    # The graceful timeout covers only the responses ended by `_end_live` (the drain came first).
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=CLOSE_GRACE,
        loop="asyncio", http="h11", ws="none",
    )  # fmt: skip
    server = DrainingServer(config, app.state.service, drain_timeout)
    server.run(sockets=[sock])
    if not server.started:  # the app's startup failed: uvicorn logged why
        raise SeerError("the server did not start (see the log above)")
