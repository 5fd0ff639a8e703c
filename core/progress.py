"""Rich progress bars for long driver-side loops (Ray Data stages show Ray's own bars)."""

from __future__ import annotations

import os
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def enabled() -> bool:
    """Bars are on unless ``--no-progress`` (VISMEM_PROGRESS=0) or output is not a terminal."""
    import sys

    return os.environ.get("VISMEM_PROGRESS", "1") == "1" and sys.stderr.isatty()


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a rich progress bar on stderr (a plain iterator when disabled)."""
    if not enabled():
        yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        yield from bar.track(items, total=total, description=description)
