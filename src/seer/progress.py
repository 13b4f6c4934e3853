"""Progress on stderr for anything that takes more than a couple of seconds (rich).

    for x in progress.track(items, "profiling"): ...        # a bar (total from len() or given)
    with progress.status("loading builtin-vqa"): ...         # a spinner, then "done in 1.2 s"
    with progress.bar("calibrating", total=300) as advance:  # a bar advanced by a callback
        collect(..., progress=advance)

Off a terminal the library is quiet (nothing printed, no terminal codes), unless a front end
asked for plain lines with `set_lines(seconds)`: the CLI does (every 30 s by default,
`SEER_PROGRESS_EVERY`), so a `seer batch` or `seer bench` logged to a file says how far it got
("batch → out.jsonl: 120/300 (40 %), 2m10s elapsed, ~3m15s left") instead of staying silent for
minutes: a `status(..., first=True)` says what it starts at once, and every display prints a
line every 30 s whether or not an item finished (a heartbeat thread), the time left estimated
from the items done and the share done of those in flight (a batch's rows: their steps). A front end
switches everything off with `set_enabled(False)` (`seer --quiet`,
`SEER_NO_PROGRESS`: the CLI reads them; the library never reads the environment). One display at
a time: a `track`, `status` or `bar` opened while another one shows stays silent, so library code
may call these freely. rich is imported on first use only (`seer --help` stays fast).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import contextmanager
from contextvars import ContextVar

# True / False: forced by a front end; None: show when stderr is a terminal
_enabled: ContextVar[bool | None] = ContextVar("seer_progress_enabled", default=None)
_active: ContextVar[bool] = ContextVar("seer_progress_active", default=False)
# seconds between plain progress lines off a terminal (None: quiet there)
_lines: ContextVar[float | None] = ContextVar("seer_progress_lines", default=None)


def set_enabled(on: bool | None) -> None:
    """Force progress on (True) or off (False); None: show it when stderr is a terminal."""
    _enabled.set(on)


def set_lines(every: float | None) -> None:
    """Off a terminal, print a plain progress line every `every` seconds (None: stay quiet)."""
    _lines.set(every)


def _plain() -> float | None:
    """The interval of plain lines, when a display now would be plain lines; else None."""
    if _active.get() or _enabled.get() is False or enabled():
        return None
    return _lines.get()


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


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
    if total is None and isinstance(iterable, Sized):
        total = len(iterable)
    with bar(description, total) as advance:
        for item in iterable:
            yield item
            advance(1)


@contextmanager
def bar(description: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """A progress bar; the block gets `advance(k=1, info=None, partial=None)`, which moves it by
    k items and, given `info`, shows that text after the bar (e.g. a rate: "812 tok/s");
    `partial`: how many items' worth of the items in flight is done (off a terminal it enters
    the estimate of the time left)."""
    if (every := _plain()) is not None:
        with _showing():
            yield from _line_bar(description, total, every)
        return
    if not enabled():
        yield lambda k=1, info=None, partial=None: None
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

    columns = [
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
    ]
    with _showing(), Progress(*columns, console=_console()) as p:
        task = p.add_task(description, total=total, info="")

        def advance(k: int = 1, info: str | None = None, partial: float | None = None) -> None:
            if info is None:
                p.update(task, advance=k)
            else:
                p.update(task, advance=k, info=info)

        yield advance


def _line_bar(description: str, total: int | None, every: float) -> Iterator[Callable[..., None]]:
    """`bar` off a terminal: a plain line at most every `every` seconds as items finish, and
    at least every `every` seconds whether they do or not (a heartbeat thread), and a last one
    when any was printed before the end. The estimate of
    the time left counts the items done and the share of the items in flight already done
    (`advance(0, partial=x)`: e.g. the steps the rows of a batch have taken), never one item's
    time times the rest."""
    t0 = time.perf_counter()
    done, partial, shown = 0, 0.0, ""
    printed: list[int] = []  # `done` at each line printed
    last = [t0]  # when the last line was printed

    def line() -> str:
        took = time.perf_counter() - t0
        text = f"{description}: {done}" + (f"/{total}" if total else "")
        if total:
            text += f" ({done / total:.0%})"
        text += f", {_clock(took)} elapsed"
        progress = done + min(partial, (total or done + partial) - done)
        if total and 0 < progress < total:
            text += f", ~{_clock(took / progress * (total - progress))} left"
        return text + (f", {shown}" if shown else "")

    def say(due: bool = True) -> None:
        now = time.perf_counter()
        if due and now - last[0] >= every:
            last[0] = now
            printed.append(done)
            print(line(), file=sys.stderr, flush=True)

    def advance(k: int = 1, info: str | None = None, partial: float | None = None) -> None:
        nonlocal done, shown
        done += k
        shown = shown if info is None else info
        set_partial(partial)
        if k:
            say()

    def set_partial(value: float | None) -> None:
        nonlocal partial
        if value is not None:
            partial = max(0.0, value)

    with _ticker(every, say):
        yield advance
    if printed and printed[-1] != done:
        print(line(), file=sys.stderr, flush=True)


@contextmanager
def _ticker(every: float, say: Callable[[], None]) -> Iterator[None]:
    """Call `say()` every `every` seconds (at least every second) from a daemon thread while
    the block runs."""
    import threading

    stop = threading.Event()

    def run() -> None:
        while not stop.wait(max(every, 1.0)):
            say()

    thread = threading.Thread(target=run, name="seer-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def status(description: str, first: bool = False) -> Iterator[None]:
    """A spinner with `description` while the block runs, then one line saying how long it took
    (nothing at all when quiet; off a terminal in line mode, a line every `every` seconds while
    it runs and the time it took when that was a while; with `first`, the description at once:
    a command's first line, e.g. the model it loads and from where)."""
    if (every := _plain()) is not None:
        t0 = time.perf_counter()
        if first:
            print(f"{description} ...", file=sys.stderr, flush=True)

        def say() -> None:
            took = _clock(time.perf_counter() - t0)
            print(f"{description}: {took} elapsed", file=sys.stderr, flush=True)

        with _showing(), _ticker(every, say):
            yield
        took = time.perf_counter() - t0
        if took >= min(every, 5.0):
            print(f"{description}: done in {took:.1f} s", file=sys.stderr, flush=True)
        return
    if not enabled():
        yield
        return
    console = _console()
    t0 = time.perf_counter()
    with _showing(), console.status(description):
        yield
    console.print(f"[green]✓[/] {description} [dim]({time.perf_counter() - t0:.1f} s)[/]")


class _Repeats(logging.Filter):
    """Lets the first record of each repeated kind through and counts the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: dict[str, list] = {}  # kind -> [records, pieces, examples, unk token]

    def filter(self, record: logging.LogRecord) -> bool:
        repeat = getattr(record, "seer_repeat", None)
        if repeat is None:
            return True
        kind, pieces, examples, unk = repeat
        seen = self.kinds.get(kind)
        if seen is None:
            self.kinds[kind] = [1, pieces, list(examples), unk]
            return True
        seen[0] += 1
        seen[1] += pieces
        seen[2] = (seen[2] + [w for w in examples if w not in seen[2]])[:5]
        return False


@contextmanager
def one_line_per_kind(logger: str = "seer.models") -> Iterator[None]:
    """For a run over many rows (a batch, a benchmark, a calibration): a warning the library
    repeats per row (words outside the vocabulary) shows once, and one line at the end says how
    many rows it concerned in all."""
    log, repeats = logging.getLogger(logger), _Repeats()
    log.addFilter(repeats)
    try:
        yield
    finally:
        log.removeFilter(repeats)
        for kind, (rows, pieces, examples, unk) in repeats.kinds.items():
            if rows > 1 and kind == "unknown words":
                shown = ", ".join(repr(w) for w in examples)
                log.warning(
                    f"seer: warning: in all, {rows} prompts held {pieces} piece(s) outside "
                    f"the model's vocabulary, read as {unk} (e.g. {shown})"
                )
