"""Blob references: a byte range of one store object, written ``<key>#<offset>+<length>``.

Why: MemShot packs a session's shots into one object, because on the local S3 server every put
costs ~0.85 ms of server CPU before its bytes are counted (1,563 shots of LoCoMo were 1,835
puts; packed, 544). Each unit row then names its shot by a reference, and ``Store.get_bytes`` /
``exists`` take a reference wherever they take a key, so every reader of shots (OCR, embedders,
answering, viewers, ``vismem store get``) reads packed and unpacked shots alike; :func:`read_many`
reads a session's shots with one request per pack.
"""

from __future__ import annotations

import re
from typing import Callable

_REF = re.compile(r"^(?P<key>.+)#(?P<offset>\d+)\+(?P<length>\d+)$")


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


__all__ = ["make_ref", "parse_ref", "read_many"]
