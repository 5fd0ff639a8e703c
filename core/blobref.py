"""Blob references: a byte range of one store object, written ``<key>#<offset>+<length>``.

Why: MemShot packs a session's shots into one object, because on the local S3 server every put
costs ~0.85 ms of server CPU before its bytes are counted (1,563 shots of LoCoMo were 1,835
puts; packed, 544). Each unit row then names its shot by a reference, and ``Store.get_bytes`` / ``exists`` take
a reference wherever they take a key, so every reader of shots (OCR, embedders, answering,
viewers, ``vismem store get``) reads packed and unpacked shots alike.
"""

from __future__ import annotations

import re

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


__all__ = ["make_ref", "parse_ref"]
