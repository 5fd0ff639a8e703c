"""The one rule of vismem's caches: nothing cached is trusted unless it matches its record.

Five caches follow it: trajectories and probe units (units of :class:`UnitCache`), feature parts
and MemShot's answer and verdict tables (one-object units of it), and the OCR text cache (each
text's size and digest beside it, :func:`record`, checked by ``memory.dialogue.pixels``). The
content-addressed image blobs need no record: their key is their digest
(``vismem.core.blobref.check_blob``, on every read; :func:`damaged_blobs` checks many).

A *unit* of cached work is a few objects plus a done marker. The objects are written first; the
marker last, as the commit point: a unit without one was never finished and is simply redone. The
marker holds the unit's summary and, under ``_objects``, each object's size and SHA-256, so a
reader never trusts a damaged object: :meth:`UnitCache.read_object` verifies it against the
marker, and a mismatch is a :class:`CacheDamaged` naming the object. :meth:`UnitCache.discard`
removes the marker so the unit is recomputed; :meth:`UnitCache.verify` checks a unit without
using it. Markers written before digests were recorded carry no ``_objects`` and are trusted
as they are.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from vismem.core.bounds import TABLE_BYTES
from vismem.core.errors import DataError, TooLarge

if TYPE_CHECKING:
    import logging

    from vismem.core.store import Store

T = TypeVar("T")

#: Marker field holding ``{suffix: {"bytes": n, "sha256": hex}}`` (never part of a summary).
OBJECTS = "_objects"


class CacheDamaged(DataError):
    """A cached object does not match what its done marker recorded (truncated, overwritten)."""


def record(data: bytes) -> dict[str, Any]:
    """What a marker keeps of an object: its size and content digest."""
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def read_recorded(store: "Store", key: str, want: Any, by: str, *, bound: Any = None) -> bytes:
    """The object at ``key``, checked against the record ``want`` (:func:`record`; None: nothing
    recorded, trusted) that ``by`` kept (``"the done marker"``): a size or digest other than
    recorded is :class:`CacheDamaged` naming both. One past ``bound`` is refused from its size:
    damaged when ``by`` recorded another size, else :class:`TooLarge` (the object really is that
    large: the bound, not the cache, is at fault)."""
    try:
        data = store.get_bytes(key, bound=bound)
    except TooLarge as err:
        if not isinstance(want, dict) or want.get("bytes") == err.size:
            raise
        raise CacheDamaged(f"damaged cache object {key}: {err.size:,} bytes, {by} recorded "
                           f"{want.get('bytes')} bytes") from None
    got = record(data) if want is not None else None
    if got is not None and (not isinstance(want, dict) or got != {k: want.get(k) for k in ("bytes", "sha256")}):
        want = want if isinstance(want, dict) else {}
        raise CacheDamaged(f"damaged cache object {key}: {len(data)} bytes, sha256 {got['sha256'][:12]}, "
                           f"{by} recorded {want.get('bytes')} bytes, sha256 {str(want.get('sha256'))[:12]}")
    return data


class UnitCache:
    """Units under ``prefix``: unit ``u`` has objects ``<prefix>/<u><suffix>`` and the marker
    ``<prefix>/<u>.done.json``. Picklable (holds the store and the prefix)."""

    def __init__(self, store: "Store", prefix: str) -> None:
        self.store, self.prefix = store, prefix

    def key(self, unit: str, suffix: str) -> str:
        return f"{self.prefix}/{unit}{suffix}" if self.prefix else f"{unit}{suffix}"

    def done_key(self, unit: str) -> str:
        return self.key(unit, ".done.json")

    def is_done(self, unit: str) -> bool:
        return self.store.exists(self.done_key(unit))

    def done_units(self, pattern: re.Pattern[str]) -> list[re.Match[str]]:
        """Every finished unit whose marker key matches ``pattern`` (one listing)."""
        found = (pattern.search(k) for k in self.store.iter_keys(self.prefix) if k.endswith(".done.json"))
        return [m for m in found if m]

    def commit(self, unit: str, objects: dict[str, bytes], summary: dict[str, Any]) -> dict[str, Any]:
        """Write the unit's objects (``suffix -> bytes``), then its marker; returns the summary."""
        for suffix, data in objects.items():
            kind = "application/vnd.apache.parquet" if suffix.endswith(".parquet") else None
            self.store.put_bytes(self.key(unit, suffix), data, content_type=kind)
        self.store.put_json(self.done_key(unit), {**summary, OBJECTS: {s: record(d) for s, d in objects.items()}})
        return summary

    def _marker(self, unit: str) -> dict[str, Any]:
        key = self.done_key(unit)
        try:
            marker = self.store.get_json(key)
        except ValueError as err:  # a torn or overwritten marker: the unit is not finished
            raise CacheDamaged(f"damaged cache marker {key}: {err}") from None
        if not isinstance(marker, dict):
            raise CacheDamaged(f"damaged cache marker {key}: not a JSON object")
        return marker

    def read_summary(self, unit: str) -> dict[str, Any]:
        """The unit's summary (the marker without its object records)."""
        return {k: v for k, v in self._marker(unit).items() if k != OBJECTS}

    def read_object(self, unit: str, suffix: str) -> bytes:
        """An object of a finished unit, verified against its marker (:class:`CacheDamaged`). A
        Parquet object is at most ``TABLE_BYTES``: one past it is damaged when its marker
        recorded another size, else :class:`TooLarge` -- refused from its size, never read."""
        want = (self._marker(unit).get(OBJECTS) or {}).get(suffix)
        return read_recorded(self.store, self.key(unit, suffix), want, "the done marker",
                             bound=TABLE_BYTES if suffix.endswith(".parquet") else None)

    def read_table(self, unit: str, suffix: str, columns: "list[str] | None" = None) -> Any:
        """A Parquet object of a finished unit as a Polars DataFrame (``columns`` only, when given),
        verified against its marker; bytes that are not a whole table are :class:`CacheDamaged`."""
        from vismem.core.parquetio import decode_table

        data = self.read_object(unit, suffix)
        try:
            return decode_table(self.key(unit, suffix), data, columns=columns, error=CacheDamaged)
        except CacheDamaged as err:
            raise CacheDamaged(f"damaged cache object {err}") from None

    def verify(self, unit: str) -> list[str]:
        """One line per damaged part of a finished unit (empty when it is whole)."""
        try:
            recorded = self._marker(unit).get(OBJECTS) or {}
            for suffix in recorded:
                self.read_object(unit, suffix)
        except (CacheDamaged, FileNotFoundError) as err:
            return [str(err)]
        return []

    def discard(self, unit: str) -> None:
        """Forget a unit (its marker goes; its objects are rewritten when it is redone)."""
        self.store.delete(self.done_key(unit))


def heal(units: Iterable[tuple[UnitCache, str]], log: "logging.Logger") -> list[str]:
    """Verify finished units; discard every damaged one (so it is redone) and return one line per
    unit healed. Each line names the damaged object; the caller reports how many it healed."""
    healed = []
    for cache, unit in units:
        problems = cache.verify(unit)
        if problems:
            log.warning("%s: discarded, recomputing", problems[0])
            cache.discard(unit)
            healed.append(problems[0])
    return healed


def find_damage(items: Iterable[T], problem: Callable[[T], str | None], threads: int = 8) -> list[tuple[T, str]]:
    """``(item, line)`` for every item ``problem`` finds damaged (its one line), checked on
    ``threads`` threads -- the checks read cached objects back, so they overlap their I/O."""
    from concurrent.futures import ThreadPoolExecutor

    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(items)))) as pool:
        return [(item, line) for item, line in zip(items, pool.map(problem, items)) if line]


def damaged_blobs(store: "Store", keys: Iterable[str], threads: int = 8) -> dict[str, str]:
    """``blob key -> one line`` for every content-addressed blob among ``keys`` that is damaged
    (its bytes are not what its key names) or missing; read concurrently, each read verified."""

    def problem(key: str) -> str | None:
        try:
            store.get_bytes(key)  # verifies a blob against its key's digest
        except CacheDamaged as err:
            return str(err)
        except FileNotFoundError:
            return f"damaged blob {key}: missing"
        return None

    return dict(find_damage(dict.fromkeys(keys), problem, threads))


#: Where the done-marker caches live in a store (trajectories, probe units).
CACHE_ROOTS = ("trajectories", "probes")


def verify_store(store: "Store", prefixes: Iterable[str] = CACHE_ROOTS, *,
                 discard: bool = False) -> tuple[int, list[str]]:
    """Check every finished unit under ``prefixes``: ``(units checked, one line per damaged one)``.

    With ``discard``, each damaged unit's marker goes, so the next run redoes it.
    """
    units = UnitCache(store, "")
    checked, problems = 0, []
    for prefix in prefixes:
        for key in store.iter_keys(prefix):
            if not key.endswith(".done.json"):
                continue
            unit = key[: -len(".done.json")]
            checked += 1
            bad = units.verify(unit)
            if bad:
                problems.append(bad[0])
                if discard:
                    units.discard(unit)
    return checked, problems
