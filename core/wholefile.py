"""A local file that appears only whole: written to a temporary file beside its place and renamed
there when the writer finishes; on any failure the place is left as it was and no temporary file
stays (a ``file://`` store's objects, ``vismem store get``, the node-local copy of an ``s3://``
data_dir)."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

__all__ = ["whole_file"]


@contextmanager
def whole_file(dest: Path, mode: str = "wb", *, suffix: str = ".part") -> Iterator[IO]:
    """An open temporary file (``mode``; named ``.<name>.<random><suffix>``) beside ``dest``,
    renamed to ``dest`` when the block ends without an exception and removed when it raises."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, mode) as out:
            yield out
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
