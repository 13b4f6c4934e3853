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

Connections: a client must send its request's head within `read_timeout` seconds of connecting
(`_Protocol`; uvicorn's own timer only runs between requests) and each part of its body within
`read_timeout` of the previous one (`seer.serve.app`: 408), else its connection is closed; at
most `max_connections` connections and requests are held at once (uvicorn's
`limit_concurrency`: past it a new request gets 503). A client that closes its side of the
connection (a half-close looks the same as leaving) is taken as gone: its request is aborted
and the connection closed without a reply.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from seer.errors import SeerError
from seer.serve.config import DEFAULTS

log = logging.getLogger("seer.serve")

CLOSE_GRACE = 10  # seconds the ended requests get to send their 503 or last chunk


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
            log.warning(
                "drain timeout (%g s) passed with %d request(s) running",
                self.drain_timeout,
                len(self.service.live),
            )
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
        raise SeerError(
            f"cannot listen on --host {host}: not an address of this machine nor a "
            f"name it resolves ({why})"
        ) from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind(addr)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise SeerError(
                f"cannot listen on {where}: the port is in use (another server?); "
                "stop it or pick another --port"
            ) from None
        if e.errno == errno.EADDRNOTAVAIL:
            raise SeerError(
                f"cannot listen on --host {host}: it is not an address of this machine"
            ) from None
        if e.errno == errno.EACCES:
            raise SeerError(
                f"cannot listen on {where}: permission denied (ports below 1024 "
                "need privileges); pick another --port"
            ) from None
        raise SeerError(f"cannot listen on {where}: {e.strerror or e}") from None
    return sock


class _Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for a request's head: a connection that has
    not sent one within `read_timeout` seconds of connecting, or of its last response, is closed
    (uvicorn's own keep-alive timer is reset by every byte received, so a client trickling bytes
    would hold its connection for ever). A request's body has its own timeout (`seer.serve.app`)."""

    read_timeout: float = DEFAULTS["read_timeout"]
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete and self._deadline:
            self._deadline.cancel()  # a request is running
            self._deadline = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.read_timeout, self._late)

    def _late(self) -> None:
        self._deadline = None
        if self.cycle is None or self.cycle.response_complete:
            self.timeout_keep_alive_handler()  # closes the connection


def protocol(read_timeout: float) -> type[H11Protocol]:
    """`_Protocol` with its `read_timeout`."""
    return type("SeerH11Protocol", (_Protocol,), {"read_timeout": read_timeout})


def run(
    app,
    sock: socket.socket,
    drain_timeout: float = DEFAULTS["drain_timeout"],
    log_level: str = DEFAULTS["log_level"],
    read_timeout: float = DEFAULTS["read_timeout"],
    max_connections: int = DEFAULTS["max_connections"],
) -> None:
    """Serve `app` on `sock` (from `bind`) until a signal ends it (module docstring)."""
    # loop/http/ws pinned: uvicorn's "auto" would switch to uvloop + httptools (+ websockets)
    # whenever another extra installs them (ray[serve] does); the server runs the same everywhere.
    # The graceful timeout covers only the responses ended by `_end_live` (the drain came first).
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=CLOSE_GRACE,
        loop="asyncio",
        http=protocol(read_timeout),
        ws="none",
        limit_concurrency=max_connections,
    )
    server = DrainingServer(config, app.state.service, drain_timeout)
    server.run(sockets=[sock])
    if not server.started:  # the app's startup failed: uvicorn logged why
        raise SeerError("the server did not start (see the log above)")
