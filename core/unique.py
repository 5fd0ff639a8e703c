"""Ids that must be unique in a dataset: a repeat is an error naming both records.

A loader that keys records by id in a dict replaces an earlier record with a later one without
a word (two LoCoMo conversations with one ``sample_id`` lost one's sessions that way). Each
loader registers every id with :meth:`UniqueIds.add` as it reads; the second record with an id
raises one :class:`~vismem.core.errors.DataError` that names where the first one was.
"""

from __future__ import annotations

from typing import Hashable

from vismem.core.errors import DataError, VismemError

__all__ = ["UniqueIds", "json_loads_unique"]


class UniqueIds:
    """The ids of one kind seen so far in one file (``what``: e.g. ``sample_id``), with where."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._first: dict[Hashable, str] = {}

    def add(self, key: Hashable, where: str, *, prefix: str = "") -> None:
        """Record ``key`` at ``where`` (``prefix``: the file part of the message, not repeated for
        the first record); DataError naming both records when ``key`` was seen before."""
        first = self._first.get(key)
        if first is None:
            self._first[key] = where
            return
        raise DataError(f"{prefix}{where}: duplicate {self.what} {key!r}, also in {first} "
                        "(ids must be unique: one record would silently replace the other)")

    def __contains__(self, key: Hashable) -> bool:
        return key in self._first

    def __len__(self) -> int:
        return len(self._first)


def json_loads_unique(text: str | bytes, source: str, *, error: type[VismemError] = DataError) -> object:
    """``json.loads(text)`` refusing an object that gives one key twice (``json`` keeps the last
    silently): ``error`` (DataError for a data file, ConfigError for a flag) naming ``source``
    and the key. For JSON read whole (LoCoMo, the DMV-Bench catalogue, ``--vlm`` specs);
    ``ValueError`` for malformed JSON passes to the caller."""
    import json

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        out = dict(items)
        if len(out) < len(items):
            keys = [k for k, _ in items]
            twice = next(k for i, k in enumerate(keys) if k in keys[:i])
            raise error(f"{source}: an object gives key {twice!r} twice (one value would silently "
                            "replace the other)")
        return out

    return json.loads(text, object_pairs_hook=pairs)
