"""Resumable, verified HTTP(S) downloads (standard library only).

:func:`download` streams a URL into ``<dest>.part``; a ``.part`` left by an interrupted download
is resumed with an HTTP ``Range`` request (a server that ignores the range and answers 200 gets a
fresh start). Every download is pinned by size: a server announcing more, or sending more, is
cut off at the pinned size (an endless body writes at most ``size`` bytes, never fills the disk).
The finished bytes are checked against the size and the pinned SHA-256 (``None``: unknown) and
only then renamed to ``dest``: a mismatch deletes the ``.part`` and raises one
:class:`~vismem.core.errors.DataError`, so nothing half-written is ever left at ``dest``.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from vismem.core.errors import DataError

__all__ = ["download", "file_sha256"]

_CHUNK = 1 << 20


def file_sha256(path: Path, *, prefix: int | None = None) -> "hashlib._Hash":
    """The running SHA-256 of ``path`` (its first ``prefix`` bytes when given)."""
    h = hashlib.sha256()
    left = prefix
    with open(path, "rb") as f:
        while left is None or left > 0:
            block = f.read(_CHUNK if left is None else min(_CHUNK, left))
            if not block:
                break
            h.update(block)
            if left is not None:
                left -= len(block)
    return h


def _open(url: str, start: int, timeout: float):
    req = urllib.request.Request(url, headers={"User-Agent": "vismem-data-fetch"})
    if start:
        req.add_header("Range", f"bytes={start}-")
    return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - pinned http(s) URLs only


def _too_much(url: str, part: Path, size: int, what: str) -> DataError:
    part.unlink(missing_ok=True)
    return DataError(f"{url}: the server {what} more than the pinned size of {size:,} bytes; "
                     "stopped there, nothing was kept")


def _fetch_into(url: str, part: Path, size: int, timeout: float,
                progress: Callable[[int], None] | None) -> "hashlib._Hash":
    """Append the rest of ``url`` to ``part`` (or rewrite it), never past ``size`` bytes in all;
    returns the hash of all of ``part``."""
    start = part.stat().st_size if part.exists() else 0
    if start > size:  # a stale .part longer than the pin can never be right
        part.unlink()
        start = 0
    try:
        resp = _open(url, start, timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and start:  # the .part already holds everything (or more): check it as it is
            return file_sha256(part)
        raise DataError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise DataError(f"{url}: cannot download ({getattr(err, 'reason', err)})") from None
    with resp:
        resumed = start > 0 and resp.status == 206
        h = file_sha256(part) if resumed else hashlib.sha256()
        done = start if resumed else 0
        length = resp.headers.get("Content-Length")
        expected = done + int(length) if length and length.isdigit() else None
        if expected is not None and expected > size:
            raise _too_much(url, part, size, f"announced {expected:,} bytes,")
        with open(part, "ab" if resumed else "wb") as out:
            while True:
                try:
                    # one byte past the pin is enough to know the body is too long
                    block = resp.read(min(_CHUNK, size - done + 1))
                except OSError as err:
                    raise DataError(f"{url}: download interrupted after {done:,} bytes ({err}); "
                                    "run the same command again to resume") from None
                if not block:
                    break
                if done + len(block) > size:
                    out.close()
                    raise _too_much(url, part, size, "sent")
                out.write(block)
                h.update(block)
                done += len(block)
                if progress:
                    progress(done)
    if expected is not None and done < expected:
        # The connection closed early: keep what arrived, the next attempt asks for the rest.
        raise DataError(f"{url}: download interrupted after {done:,} of {expected:,} bytes; "
                        "run the same command again to resume")
    return h


def download(url: str, dest: str | Path, *, size: int, sha256: str | None = None,
             timeout: float = 60.0, progress: Callable[[int], None] | None = None) -> Path:
    """Download ``url`` to ``dest``, resuming a ``dest.part``; stop at ``size``, verify ``size``
    and ``sha256``.

    Returns ``dest``. Raises :class:`DataError` (one line) on an HTTP error, a body past ``size``
    or a mismatch; after a mismatch neither ``dest`` nor the ``.part`` exists.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"download({url!r}): size must be the pinned byte count, got {size!r}")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    h = _fetch_into(url, part, size, timeout, progress)
    got_size = part.stat().st_size
    problem = ""
    if got_size != size:
        problem = f"size {got_size:,} bytes, expected {size:,}"
    elif sha256 is not None and h.hexdigest() != sha256.lower():
        problem = f"sha256 {h.hexdigest()}, expected {sha256.lower()}"
    if problem:
        part.unlink(missing_ok=True)
        raise DataError(f"{url}: downloaded file does not match its pin ({problem}); nothing was kept")
    os.replace(part, dest)
    return dest
