"""Blob references: a byte range of one store object, written ``<key>#<offset>+<length>``.

Why: MemShot packs a session's shots into one object, because on the local S3 server every put
costs ~0.85 ms of server CPU before its bytes are counted (1,563 shots of LoCoMo were 1,835
puts; packed, 544). Each unit row then names its shot by a reference, and ``Store.get_bytes`` /
``exists`` take a reference wherever they take a key, so every reader of shots (OCR, embedders,
answering, viewers) reads packed and unpacked shots alike (``vismem store get`` streams them, a
blob checked by :class:`BlobCheck`); :func:`read_many` reads a session's shots with one request
per pack.

Content-addressed blobs (``blobs/sha256/<hex>.<ext>``: the images an agent observed) verify
themselves: their key IS their digest, so :func:`check_blob` (called by ``Store.get_bytes`` on
every such read) catches a damaged one before its bytes reach a model or a cache.
"""

from __future__ import annotations

import hashlib
import re
from typing import Callable

_REF = re.compile(r"^(?P<key>.+)#(?P<offset>\d+)\+(?P<length>\d+)$")

#: Where content-addressed blobs live in a store: ``<BLOB_ROOT>/<sha256 hex>.<ext>``.
BLOB_ROOT = "blobs/sha256"
_BLOB = re.compile(r"(?:^|/)blobs/sha256/(?P<hex>[0-9a-f]{64})(?:\.[A-Za-z0-9]+)?$")


def blob_digest(key: str) -> str | None:
    """The SHA-256 a content-addressed blob's key names (None for any other key)."""
    m = _BLOB.search(key) if "blobs/sha256/" in key else None
    return m["hex"] if m else None


def check_blob(key: str, data: bytes) -> bytes:
    """``data`` when it is what ``key`` names (any key that is not a blob passes); a damaged blob
    is a ``CacheDamaged`` naming it in one line. Hashing a few hundred KB costs about a ms."""
    check = BlobCheck(key)
    check.update(data)
    check.done()
    return data


class BlobCheck:
    """:func:`check_blob` over a stream: ``update`` with each block as it is read, then ``done``
    (``vismem store get`` copies an object of any size chunk by chunk)."""

    def __init__(self, key: str) -> None:
        self.key, self.want, self.size = key, blob_digest(key), 0
        self._hash = hashlib.sha256() if self.want is not None else None

    def update(self, block: bytes) -> None:
        self.size += len(block)
        if self._hash is not None:
            self._hash.update(block)

    def done(self, tail: str = "") -> None:
        """A ``CacheDamaged`` line (ending with ``tail``) when the bytes are not what the key names."""
        if self._hash is None:
            return
        got = self._hash.hexdigest()
        if got != self.want:
            from vismem.core.cache import CacheDamaged

            raise CacheDamaged(f"damaged blob {self.key}: {self.size} bytes, sha256 {got[:12]}, "
                               f"its key names {self.want[:12]}{tail}")


def make_ref(key: str, offset: int, length: int) -> str:
    """The reference to ``length`` bytes of ``key`` starting at ``offset``."""
    if "#" in key or offset < 0 or length < 0:
        raise ValueError(f"cannot reference {key!r} [{offset}, +{length})")
    return f"{key}#{offset}+{length}"


def parse_ref(ref: str) -> tuple[str, int, int] | None:
    """``(key, offset, length)`` of a reference; None for a plain key."""
    m = _REF.match(ref) if "#" in ref else None
    return (m["key"], int(m["offset"]), int(m["length"])) if m else None


def read_many(get: Callable[[str], bytes], keys: list[str]) -> list[bytes]:
    """The bytes of ``keys`` (plain keys or references) in order, reading the span each object's
    references cover in one ``get`` instead of one per reference (a session's shots are read
    together: one request per pack). ``get`` is ``Store.get_bytes``."""
    refs = [parse_ref(k) for k in keys]
    spans: dict[str, tuple[int, int]] = {}
    for r in filter(None, refs):
        lo, hi = spans.get(r[0], (r[1], r[1] + r[2]))
        spans[r[0]] = (min(lo, r[1]), max(hi, r[1] + r[2]))
    blobs = {key: get(make_ref(key, lo, hi - lo)) for key, (lo, hi) in spans.items()}
    out = []
    for k, r in zip(keys, refs):
        start = r[1] - spans[r[0]][0] if r else 0
        out.append(get(k) if r is None else blobs[r[0]][start:start + r[2]])
    return out


__all__ = ["BLOB_ROOT", "BlobCheck", "blob_digest", "check_blob", "make_ref", "parse_ref", "read_many"]
