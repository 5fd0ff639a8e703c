"""Reading shots from pixels: the per-batch work of the OCR job, with a content-addressed cache.

A *pixel reader* is an embedder that turns each shot into text before embedding it
(``vismem.serve.embedders.ocr``: ``read_images`` → ``embed_ocr_texts``). OCR is the expensive half
(~0.7 s a shot on one core), and the text depends only on the shot's bytes and the reader's
``ocr_key``, so each text is cached in the store at ``ocr/<ocr_key>/<sha256 of the PNG>.txt``:
shared by every run, variant and conversation that draws the same pixels (a re-run, or a second
run with other retrieval settings, reads nothing twice).

:func:`read_batch` is what one worker does with one batch (one session's shots, in order, so
the reader's line cache pays off on the repeated turn-pairs of overlapping shots); the Ray job
that shards it lives in :mod:`vismem.pipelines.memshot.ocr`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from vismem.core.cache import record

if TYPE_CHECKING:
    from vismem.core.store import Store

#: Store prefix of the OCR text cache (at the store root: shared across runs).
CACHE_ROOT = "ocr"

log = logging.getLogger("vismem.ocr")


def content_hash(data: bytes) -> str:
    """SHA-256 hex digest of a shot's encoded bytes (the cache key's content part)."""
    return hashlib.sha256(data).hexdigest()


def cache_key(ocr_key: str, data: bytes) -> str:
    """Where the text of the shot ``data`` read by the engine ``ocr_key`` is cached."""
    return f"{CACHE_ROOT}/{ocr_key.strip('/')}/{content_hash(data)}.txt"


def key_hash(text_key: str) -> str:
    """The shot's content hash a :func:`cache_key` ends with (no second hashing of the shot)."""
    return text_key.rsplit("/", 1)[-1][: -len(".txt")]


def seconds_key(text_key: str) -> str:
    """Where the seconds the first reading took are kept, beside the text (``.s``: JSON with the
    seconds and the text's size and SHA-256, :func:`vismem.core.cache.record`; a bare float in
    caches written before)."""
    return text_key[:-4] + ".s"


def cached_text(get: Callable[[str], bytes | None], text_key: str, *, quiet: bool = False) -> tuple[str, float] | None:
    """``(text, seconds)`` of a cached shot, or None when it is not cached -- or its text does not
    match the size and digest recorded beside it (an emptied or overwritten text is read again,
    never used; the log names it unless ``quiet``: a look-ahead whose reader logs it again)."""
    hit = _cached(get, text_key, quiet)
    return hit if isinstance(hit, tuple) else None


def _cached(get: Callable[[str], bytes | None], text_key: str, quiet: bool = False) -> tuple[str, float] | bool:
    """:func:`cached_text`, but a miss says whether a damaged text was there (True) or none (False)."""
    raw = get(text_key)
    if raw is None:
        return False
    side = get(seconds_key(text_key))
    try:
        meta = json.loads(side) if side else {}
    except ValueError:  # a torn record: the text beside it cannot be checked, so it is read again
        if not quiet:
            log.warning("damaged cache object %s: not JSON: reading the shot again", seconds_key(text_key))
        return True
    if not isinstance(meta, dict):  # a bare float: written before texts were recorded
        return raw.decode("utf-8"), float(meta)
    want = {k: meta[k] for k in ("bytes", "sha256") if k in meta}
    if want and record(raw) != want:
        if not quiet:
            log.warning("damaged cache object %s: %d bytes, the record beside it says %s: reading the shot again",
                        text_key, len(raw), want.get("bytes"))
        return True
    return raw.decode("utf-8"), float(meta.get("seconds", 0.0))


@dataclass(frozen=True, slots=True)
class ShotText:
    """The text read from one shot, the seconds reading it took (when it was first read, so a
    cached shot still counts its construction time), whether it came from the cache, and whether
    it replaced a damaged cached text (``healed``: the stage counts them)."""

    text: str
    seconds: float
    cached: bool
    sha256: str
    healed: bool = False


def read_batch(reader: Any, images: Sequence[bytes], *, get: Callable[[str], bytes | None],
               put: Callable[[str, bytes], None]) -> list[ShotText]:
    """Texts of ``images`` read by ``reader`` (``read_images`` + ``ocr_key``), cache first.

    ``get(key)`` returns the cached bytes or None; ``put(key, bytes)`` stores a new text. Only
    the shots missing from the cache are read, in their given order and in one call, so a
    session's shots reach the reader consecutively. Each read shot is charged an equal share of
    the call's wall time, kept beside its text (:func:`seconds_key`) so that a later run that
    finds it cached reports the same construction time.
    """
    keys = [cache_key(reader.ocr_key, img) for img in images]
    found: list[str | None] = []
    secs = [0.0] * len(images)
    damaged = set()
    for i, k in enumerate(keys):
        hit = _cached(get, k)
        found.append(hit[0] if isinstance(hit, tuple) else None)
        if isinstance(hit, tuple):
            secs[i] = hit[1]
        elif hit:
            damaged.add(i)
    todo = [i for i, t in enumerate(found) if t is None]
    if todo:
        t0 = time.perf_counter()
        texts = reader.read_images([images[i] for i in todo])
        share = (time.perf_counter() - t0) / len(todo)
        for i, text in zip(todo, texts):
            found[i] = text
            secs[i] = share
            data = text.encode("utf-8")
            # The record first: the text, written last, marks the shot done.
            put(seconds_key(keys[i]), json.dumps({"seconds": share, **record(data)}).encode())
            put(keys[i], data)
    new = set(todo)
    return [ShotText(str(found[i]), secs[i], i not in new, key_hash(keys[i]), i in damaged)
            for i in range(len(images))]


def store_cache(store: Store) -> tuple[Callable[[str], bytes | None], Callable[[str, bytes], None]]:
    """``(get, put)`` over an object store for :func:`read_batch` (a missing key reads None)."""

    def get(key: str) -> bytes | None:
        try:
            return store.get_bytes(key)
        except FileNotFoundError:
            return None

    def put(key: str, data: bytes) -> None:
        store.put_bytes(key, data, content_type="text/plain; charset=utf-8")

    return get, put


__all__ = ["CACHE_ROOT", "ShotText", "cache_key", "cached_text", "content_hash", "key_hash", "read_batch", "seconds_key",
           "store_cache"]
