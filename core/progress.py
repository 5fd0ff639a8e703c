"""Progress for long driver-side loops and a run's stages (Ray Data stages show Ray's own bars).

On a terminal: rich bars. Off a terminal (a CI log, ``nohup``, a pipe): plain timestamped lines on
stderr -- a stage's start and finish, and for a tracked loop its count, elapsed time and ETA at
most every :data:`EVERY_S` seconds -- so stdout (the summary, ``--json``) stays clean.
``--no-progress`` or ``VISMEM_PROGRESS=0`` silences both.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

#: Seconds between two progress lines of one tracked loop (off a terminal).
EVERY_S = 15.0
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


def _lines(items: Iterable[T], description: str, total: int | None) -> Iterator[T]:
    t0 = last = time.monotonic()
    n = 0
    note(f"{description}: started" + (f" ({total:,} to do)" if total else ""))
    for item in items:
        yield item
        n += 1
        now = time.monotonic()
        if now - last >= EVERY_S and n != total:
            last = now
            note(status_line(description, n, total, now - t0))
    note(f"{description}: {n:,} done in {_secs(time.monotonic() - t0)}")


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a rich progress bar on stderr, progress lines off a terminal, or
    nothing at all when progress is off."""
    if not enabled():
        if lines_enabled():
            yield from _lines(items, description, total)
        else:
            yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        yield from bar.track(items, total=total, description=description)
