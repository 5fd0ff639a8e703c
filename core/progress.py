"""Progress for long driver-side loops and a run's stages (Ray Data stages show Ray's own bars).

On a terminal: rich bars. Off a terminal (a CI log, ``nohup``, a pipe): plain timestamped lines on
stderr -- a stage's start and finish, and for a tracked loop its count, elapsed time and ETA
every :data:`EVERY_S` seconds -- so stdout (the summary, ``--json``) stays clean.
``--no-progress`` or ``VISMEM_PROGRESS=0`` silences both.

Issue 43: every step longer than ~10 s says so while it runs. A tracked loop's line comes every
:data:`EVERY_S` even while no item finishes (a heartbeat: the first item of a Ray job may wait
for actors to load their models); :func:`step` does the same for one long call with no count
(a model load, Ray's start). :func:`watch` records when each line was printed, so a test can
fail a run that was silent longer than a threshold.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

#: Seconds between two progress lines of one tracked loop or step (off a terminal).
EVERY_S = 10.0
#: The clock of progress lines and of :func:`watch` (a test may replace it).
clock: Callable[[], float] = time.monotonic
#: Active :class:`Silence` recorders (see :func:`watch`).
_WATCHERS: list["Silence"] = []
#: The pid of the process that prints progress lines (a run's driver; unset: any process).
DRIVER_VAR = "VISMEM_PROGRESS_PID"


def _on() -> bool:
    return os.environ.get("VISMEM_PROGRESS", "1") == "1"


def enabled() -> bool:
    """Bars are on unless ``--no-progress`` (VISMEM_PROGRESS=0) or output is not a terminal."""
    return _on() and sys.stderr.isatty()


def lines_enabled() -> bool:
    """Progress lines (instead of bars) are on: progress wanted, stderr not a terminal, and this
    process is the run's driver (Ray workers inherit its environment but stay quiet)."""
    driver = os.environ.get(DRIVER_VAR)
    return _on() and not sys.stderr.isatty() and (driver is None or driver == str(os.getpid()))


def for_run(progress: bool) -> Callable[[], None]:
    """Set progress for a run in this process (the driver) and return what restores the caller's
    settings. ``VISMEM_PROGRESS=0`` in the caller's environment silences it as ``progress=False``
    does; Ray workers inherit the variables but print no lines (:data:`DRIVER_VAR`)."""
    saved = {k: os.environ.get(k) for k in ("VISMEM_PROGRESS", DRIVER_VAR)}
    os.environ["VISMEM_PROGRESS"] = "1" if progress and saved["VISMEM_PROGRESS"] != "0" else "0"
    os.environ[DRIVER_VAR] = str(os.getpid())

    def restore() -> None:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    return restore


def note(message: str) -> None:
    """One timestamped progress line on stderr, when :func:`lines_enabled`."""
    if lines_enabled():
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
        for w in list(_WATCHERS):
            w.line(message)


class Silence:
    """When each progress line was printed (by :data:`clock`), and the longest gap between two."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []

    def line(self, message: str) -> None:
        self.lines.append((clock(), message))

    def longest(self) -> tuple[float, str, str]:
        """``(seconds, the line before the gap, the line after it)``; 0 with fewer than two lines."""
        gaps = [(b[0] - a[0], a[1], b[1]) for a, b in zip(self.lines, self.lines[1:])]
        return max(gaps, default=(0.0, "", ""))


@contextlib.contextmanager
def watch() -> Iterator[Silence]:
    """Record every progress line printed inside the block (tests: the longest silence of a run)."""
    w = Silence()
    _WATCHERS.append(w)
    try:
        yield w
    finally:
        _WATCHERS.remove(w)


def _secs(s: float) -> str:
    s = max(0.0, s)
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(s + 0.5), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def stage_started(name: str, index: int, count: int) -> None:
    """Line: stage ``index`` of ``count`` started."""
    note(f"stage {index}/{count} {name}: started")


def stage_finished(name: str, status: str, wall_s: float, index: int, count: int) -> None:
    """Line: the stage ended with ``status`` after ``wall_s`` seconds."""
    note(f"stage {index}/{count} {name}: {status} in {_secs(wall_s)}")


def status_line(description: str, n: int, total: int | None, elapsed_s: float) -> str:
    """``description: n/total (p %), elapsed, ETA`` (no total: count and elapsed only)."""
    if not total:
        return f"{description}: {n:,} done, {_secs(elapsed_s)} elapsed"
    eta = elapsed_s / n * (total - n) if n else float("nan")
    left = f", ETA {_secs(eta)}" if n else ""
    return f"{description}: {n:,}/{total:,} ({100 * n / total:.0f} %), {_secs(elapsed_s)} elapsed{left}"


class _Heartbeat:
    """A loop's (or a step's) progress lines: its status every :data:`EVERY_S`, from the loop as
    items finish and from a daemon thread while none does (so a slow first item is not silence)."""

    def __init__(self, description: str, total: int | None, counted: bool = True) -> None:
        self.description, self.total, self.counted = description, total, counted
        self.n = 0
        self.t0 = self.last = clock()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True)

    def __enter__(self) -> "_Heartbeat":
        note(f"{self.description}: started" + (f" ({self.total:,} to do)" if self.total else ""))
        self._thread.start()
        return self

    def status(self) -> str:
        elapsed = clock() - self.t0
        if not self.counted:
            return f"{self.description}: {_secs(elapsed)} elapsed"
        return status_line(self.description, self.n, self.total, elapsed)

    def tick(self, every: float | None = None) -> None:
        """Print the status if ``every`` (default :data:`EVERY_S`) seconds passed since the last line."""
        with self._lock:
            now = clock()
            if now - self.last >= (EVERY_S if every is None else every):
                self.last = now
                note(self.status())

    def item_done(self) -> None:
        self.n += 1
        if self.n != self.total:
            self.tick()

    def _beat(self) -> None:
        # A floor under the thread's period: EVERY_S = 0 (a line per item, in tests) must not
        # make the thread print lines of its own between items.
        while not self._done.wait(max(0.01, min(EVERY_S, 1.0))):
            self.tick(max(EVERY_S, 0.05))

    def __exit__(self, kind: Any, *_: Any) -> None:
        self._done.set()
        self._thread.join()
        what = f"{self.n:,} done" if self.counted else ("failed" if kind else "done")
        note(f"{self.description}: {what} in {_secs(clock() - self.t0)}")


def _lines(items: Iterable[T], description: str, total: int | None) -> Iterator[T]:
    with _Heartbeat(description, total) as hb:
        for item in items:
            yield item
            hb.item_done()


#: The rich bar on the terminal now (a console has one live display: nested loops and steps add
#: their rows to it instead of opening a second one, which rich refuses).
_BARS: list[Any] = []


@contextlib.contextmanager
def _bar() -> Iterator[Any]:
    if _BARS:
        yield _BARS[-1]
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=False) as bar:
        _BARS.append(bar)
        try:
            yield bar
        finally:
            _BARS.pop()


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a rich progress bar on stderr (count, elapsed, ETA), progress lines
    off a terminal, or nothing at all when progress is off."""
    if not enabled():
        if lines_enabled():
            yield from _lines(items, description, total)
        else:
            yield from items
        return
    with _bar() as bar:
        nested = bar is not None and len(bar.tasks) > 0
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)
        if nested:  # an inner loop's row goes when it ends; the outer one stays
            bar.remove_task(task)


@contextlib.contextmanager
def step(description: str) -> Iterator[None]:
    """One long call with no count (a model load, Ray's start): a row with its elapsed time on a
    terminal (gone when it ends); off one, its start, a line every :data:`EVERY_S` while it
    runs, and its end."""
    if enabled():
        with _bar() as bar:
            task = bar.add_task(description, total=None)
            try:
                yield
            finally:
                bar.remove_task(task)
    elif lines_enabled():
        with _Heartbeat(description, None, counted=False):
            yield
    else:
        yield
