"""`EngineWorker`: the one thread that drives the step-level engine for the asyncio server.

The engine is single-threaded. The worker thread owns it: before every `step()` it drains a
thread-safe queue of commands (add / abort / stop) that the event loop posts, then runs one
step and hands what happened back to the event loop with `loop.call_soon_threadsafe`:

    event loop                       worker thread
    submit(request) ── ("add") ──▶   engine.add(request) ──▶ Added(id) | Failed(error)
    abort(ticket)   ── ("abort") ─▶  engine.abort(id)
                                     engine.step() ──▶ Block(partial) ... Done(result)

Each request has a `Ticket` whose asyncio queue receives its events in order. A request that
fails validation gets `Failed` and is never in the engine; a request whose client went away is
aborted in the engine and its ticket receives nothing more. When idle the thread blocks on the
command queue (no polling). `shut_down()` ends every request in the engine with `ShuttingDown`
(one log line each) and fails any request added after it the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from dataclasses import dataclass

from seer.errors import SeerError

log = logging.getLogger("seer.serve")


class ShuttingDown(SeerError):
    """The server shut down before the request was answered (HTTP 503, code shutting_down)."""


@dataclass(slots=True)
class Added:
    request_id: int  # the engine's id for the request


@dataclass(slots=True)
class Block:
    partial: object  # the engine's PartialResult: a semi-AR block became final


@dataclass(slots=True)
class Done:
    result: object  # the engine's RequestResult


@dataclass(slots=True)
class Failed:
    error: Exception  # SeerError / QueueFull at add(), or an engine bug during step()


class Ticket:
    """One request's mailbox on the event loop (filled from the worker thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: asyncio.Queue = asyncio.Queue()
        self.request_id: int | None = None  # set by the worker thread once added
        self.finished = False  # Done or Failed was posted

    def post(self, event) -> None:
        """Called from the worker thread."""
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self.loop.call_soon_threadsafe(self.events.put_nowait, event)

    def on_block(self, partial) -> None:
        self.post(Block(partial))


class EngineWorker:
    """Runs `engine` in its own thread; see the module docstring."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._live: dict[int, Ticket] = {}  # engine id -> ticket, worker thread only
        self._closing = False  # after shut_down(): every request fails (worker thread only)
        self._thread = threading.Thread(target=self._run, name="seer-engine", daemon=True)

    @property
    def pending(self) -> int:
        """Commands posted and not yet taken by the engine thread (for metrics)."""
        return self._commands.qsize()

    # -- event-loop side ------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def submit(self, request, ticket: Ticket) -> None:
        """Queue `request` (whose on_block should be `ticket.on_block`) for the engine."""
        self._put(("add", request, ticket))

    def abort(self, ticket: Ticket) -> None:
        if not ticket.finished:
            self._put(("abort", ticket))

    def shut_down(self) -> None:
        """End every request (running, waiting, and any submitted later) with `ShuttingDown`."""
        self._put(("shutdown",))

    def stop(self, timeout: float = 10.0) -> None:
        """Abort whatever runs and end the thread."""
        if self._thread.is_alive():
            self._put(("stop",))
            self._thread.join(timeout)

    def _put(self, command: tuple) -> None:
        self._commands.put(command)

    # -- worker thread --------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            idle = not self.engine.has_unfinished()
            commands = [self._commands.get()] if idle else []
            while True:
                try:
                    commands.append(self._commands.get_nowait())
                except queue.Empty:
                    break
            for command in commands:
                if command[0] == "stop":
                    self._abort_all()
                    return
                if command[0] == "shutdown":
                    self._closing = True
                    self._abort_all()
                    continue
                self._handle(command)
            if self.engine.has_unfinished():
                self._step()

    def _handle(self, command: tuple) -> None:
        if command[0] == "add":
            _, request, ticket = command
            if self._closing:
                ticket.finished = True
                ticket.post(Failed(ShuttingDown("the server is shutting down")))
                return
            try:
                rid = self.engine.add(request)
            except SeerError as e:  # QueueFull is a SeerError too
                ticket.finished = True
                ticket.post(Failed(e))
                return
            except Exception as e:  # a bug in validation: the request fails, the server lives
                log.exception("engine.add failed")
                ticket.finished = True
                ticket.post(Failed(e))
                return
            ticket.request_id = rid
            self._live[rid] = ticket
            ticket.post(Added(rid))
        elif command[0] == "abort":
            ticket = command[1]
            rid = ticket.request_id
            if rid is not None and self._live.pop(rid, None) is not None:
                self.engine.abort(rid)

    def _step(self) -> None:
        try:
            done = self.engine.step()
        except Exception as e:  # an engine bug: fail what was running, keep serving
            log.exception("engine.step failed")
            for rid, ticket in list(self._live.items()):
                self.engine.abort(rid)
                ticket.finished = True
                ticket.post(Failed(e))
            self._live.clear()
            return
        for result in done:
            found = self._live.pop(result.request_id, None)
            if found is not None:
                found.finished = True
                found.post(Done(result))

    def _abort_all(self) -> None:
        for rid, ticket in list(self._live.items()):
            self.engine.abort(rid)
            ticket.finished = True
            log.warning("request %d ended by the shutdown (503 shutting_down)", rid)
            ticket.post(Failed(ShuttingDown("the server is shutting down")))
        self._live.clear()
