"""Progress on stderr for anything that takes more than a couple of seconds (rich).

    for x in progress.track(items, "profiling"): ...        # a bar (total from len() or given)
    with progress.status("loading builtin-vqa"): ...         # a spinner, then "done in 1.2 s"
    with progress.bar("calibrating", total=300) as advance:  # a bar advanced by a callback
        collect(..., progress=advance)

Quiet (nothing printed, no terminal codes) when stderr is not a terminal, or when a front end
switched progress off with `set_enabled(False)` (`seer --quiet`, `SEER_NO_PROGRESS`: the CLI
reads them; the library never reads the environment). One display at a time: a `track`,
`status` or `bar` opened while another one shows stays silent, so library code may call these
freely. rich is imported on first use only (`seer --help` stays fast).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# True / False: forced by a front end; None: show when stderr is a terminal
_enabled: ContextVar[bool | None] = ContextVar("seer_progress_enabled", default=None)
_active: ContextVar[bool] = ContextVar("seer_progress_active", default=False)


def set_enabled(on: bool | None) -> None:
    """Force progress on (True) or off (False); None: show it when stderr is a terminal."""
    _enabled.set(on)


def enabled() -> bool:
    """Whether a new display would show now."""
    if _active.get():
        return False
    on = _enabled.get()
    if on is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    return on


def _console():
    from rich.console import Console

    return Console(file=sys.stderr)


PIPED_WIDTH = 200  # columns of a report written to a pipe or a file (rich's own default: 80)


def console(file=None):
    """A rich Console for a command's tables and reports (on stdout unless `file`): a terminal
    gets its own width; a pipe or a file PIPED_WIDTH columns, so a table is not squeezed to
    rich's 80 (rich re-reads sys.stdout at each print when `file` is None)."""
    from rich.console import Console

    isatty = getattr(file or sys.stdout, "isatty", None)
    return Console(file=file, width=None if isatty and isatty() else PIPED_WIDTH)


@contextmanager
def _showing():
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)


def track(iterable: Iterable, description: str, total: int | None = None) -> Iterator:
    """Yield the items of `iterable` while a progress bar counts them."""
    if not enabled():
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    with bar(description, total) as advance:
        for item in iterable:
            yield item
            advance(1)


@contextmanager
def bar(description: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """A progress bar; the block gets `advance(k=1, info=None)`, which moves it by k items and,
    given `info`, shows that text after the bar (e.g. a rate: "812 tok/s")."""
    if not enabled():
        yield lambda k=1, info=None: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
               TextColumn("{task.fields[info]}")]  # fmt: skip
    with _showing(), Progress(*columns, console=_console()) as p:
        task = p.add_task(description, total=total, info="")

        def advance(k: int = 1, info: str | None = None) -> None:
            p.update(task, advance=k, **({} if info is None else {"info": info}))

        yield advance


@contextmanager
def status(description: str) -> Iterator[None]:
    """A spinner with `description` while the block runs, then one line saying how long it took
    (nothing at all when quiet)."""
    if not enabled():
        yield
        return
    console = _console()
    t0 = time.perf_counter()
    with _showing(), console.status(description):
        yield
    console.print(f"[green]✓[/] {description} [dim]({time.perf_counter() - t0:.1f} s)[/]")
