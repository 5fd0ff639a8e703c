"""Copying a store object out to a local file (``vismem store get``), streamed.

An object read out of the store may be of any size (a 2.7 GB dataset file, a run's whole
results), so it is never held in memory: it is read a chunk at a time (:data:`CHUNK`) into a
temporary file beside its destination, and renamed there only when it is whole -- a failure
(the store gone mid-way, a full disk, a damaged blob) leaves the destination as it was and no
temporary file. A content-addressed blob (``blobs/sha256/<hex>``, ``vismem.core.blobref``) is
hashed as it streams and refused when its bytes are not the digest its key names, as
``Store.get_bytes`` refuses it on every other read.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from vismem.core.blobref import BlobCheck, parse_ref
from vismem.core.errors import StoreError, VismemError, no_space
from vismem.core.wholefile import whole_file

__all__ = ["CHUNK", "copy_out", "write_out"]

#: Bytes read from an object at a time: memory stays at about one chunk, whatever its size.
CHUNK = 8 << 20


def copy_out(store: Any, key: str, dest: Path) -> int:
    """Copy ``key`` (an object or a ``blobref`` reference) of ``store`` to the file ``dest``;
    returns its size. ``dest`` appears only whole and checked; on any failure it is untouched."""
    try:
        with whole_file(dest) as out:
            return write_out(store, key, out, tail=f"; nothing was written to {dest}")
    except OSError as err:  # the local side: the store's own failures are StoreErrors by now
        raise no_space(err, dest) or VismemError(f"cannot write {dest}: {err}") from None


def write_out(store: Any, key: str, out: BinaryIO, *, tail: str = "") -> int:
    """Write the bytes of ``key`` to ``out`` a chunk at a time; returns how many. A blob whose
    bytes are not its key's digest is ``CacheDamaged`` (ending with ``tail``) once they are all
    read: a caller that cannot take back what it wrote (a pipe) spools a blob first."""
    check = BlobCheck(key)
    with _opened(store, key) as (body, size):
        while size is None or check.size < size:
            want = CHUNK if size is None else min(CHUNK, size - check.size)
            with _reading(store, key):
                block = body.read(want)
            if not block:
                break
            check.update(block)
            out.write(block)
    if size is not None and check.size != size:
        raise StoreError(f"{store.url(key)}: {check.size:,} of its {size:,} bytes came (it changed, or the "
                         "store cut the read short); run again")
    check.done(tail)
    return check.size


@contextmanager
def _opened(store: Any, key: str) -> Iterator[tuple[Any, int | None]]:
    """``(a readable body, the bytes it must hold)`` for ``key`` (a reference: its byte range).
    A missing object is one line naming it."""
    ref = parse_ref(key)
    plain, offset, length = ref if ref is not None else (key, 0, None)
    with _reading(store, plain):
        try:
            body, size = store.read_stream(plain, offset, length)
        except FileNotFoundError:
            raise VismemError(f"nothing at {store.url(plain)}") from None
    try:
        yield body, size
    finally:
        body.close()


@contextmanager
def _reading(store: Any, key: str) -> Iterator[None]:
    """A read from the store that fails (the endpoint gone, the connection cut) is one line."""
    try:
        yield
    except VismemError:
        raise
    except Exception as err:  # botocore's errors, its timeouts (OSErrors), a read cut short
        fault = store.fault(err, key)
        raise fault or StoreError(f"{store.url(key)} cannot be read: {type(err).__name__}: "
                                  f"{' '.join(str(err).split())[:300]}") from None
