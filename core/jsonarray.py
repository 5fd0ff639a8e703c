"""Read a file holding one JSON array, one element at a time, in bounded memory.

A multi-gigabyte array (LongMemEval_M is ~2.7 GB) cannot be ``json.load``-ed: the parsed objects
take several times the file's size. :func:`iter_json_array` reads the text in chunks and decodes
each element with the standard decoder's ``raw_decode``, so memory holds one element and the
current chunk. An element larger than the buffer makes the buffer grow (doubling, so a large
element costs O(size) decode attempts' worth of copying only logarithmically often).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from vismem.core.errors import DataError

#: Characters read per refill: large against one LongMemEval_S record (~0.5 MB), small against RAM.
CHUNK_CHARS = 8 << 20
#: Longest one element may be (characters): a LongMemEval_M record is ~5 MB; a file whose
#: "element" never ends (no closing bracket) stops here instead of filling memory.
MAX_ELEMENT_CHARS = 256 << 20
_WS = re.compile(r"[ \t\n\r]*")


class _DuplicateKey(ValueError):
    """An object of an element gives a key twice (``args[0]``)."""


def _unique_pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    # ~4% of the parse time of a LongMemEval file: its bulk is strings, not objects
    out = dict(items)
    if len(out) < len(items):
        keys = [k for k, _ in items]
        raise _DuplicateKey(next(k for i, k in enumerate(keys) if k in keys[:i]))
    return out


class JsonArrayReader:
    """Iterate the elements of the JSON array in ``path`` (``DataError`` on malformed text)."""

    def __init__(self, path: str | Path, *, chunk_chars: int = CHUNK_CHARS,
                 max_element_chars: int | None = None) -> None:
        self.path = Path(path)
        self.chunk_chars = max(16, int(chunk_chars))
        self.max_element_chars = MAX_ELEMENT_CHARS if max_element_chars is None else int(max_element_chars)
        self._dec = json.JSONDecoder(object_pairs_hook=_unique_pairs)

    def __iter__(self) -> Iterator[Any]:
        with open(self.path, encoding="utf-8") as fh:  # FileNotFoundError passes to the caller
            try:
                yield from self._elements(fh)
            except UnicodeDecodeError as err:
                raise DataError(f"{self.path}: not valid UTF-8 text ({err.reason} at byte {err.start} "
                                "of a chunk)") from None

    def _elements(self, fh: Any) -> Iterator[Any]:
        self._fh, self._buf, self._pos, self._eof = fh, "", 0, False
        self._skip_ws()
        if self._peek() != "[":
            got = "an empty file" if self._peek() == "" else f"{self._peek()!r}"
            raise DataError(f"{self.path}: expected a JSON list (starting with '['), got {got}")
        self._pos += 1
        self._skip_ws()
        if self._peek() == "]":
            self._pos += 1
            return self._trailing()
        index = 0
        while True:
            yield self._decode(index)
            index += 1
            self._skip_ws()
            sep = self._peek()
            if sep == "]":
                self._pos += 1
                return self._trailing()
            if sep != ",":
                raise DataError(f"{self.path}: not valid JSON: expected ',' or ']' after array element "
                                f"#{index - 1}, got {sep or 'end of file'!r}")
            self._pos += 1
            self._skip_ws()

    def _trailing(self) -> None:
        self._skip_ws()
        if self._peek() != "":
            raise DataError(f"{self.path}: not valid JSON: extra data after the closing ']'")

    def _fill(self) -> bool:
        """Read one more chunk (dropping consumed text first); False at end of file."""
        if self._eof:
            return False
        if self._pos:
            self._buf, self._pos = self._buf[self._pos:], 0
        # grow with the unconsumed text so one huge element needs few refills
        more = self._fh.read(max(self.chunk_chars, len(self._buf)))
        if not more:
            self._eof = True
            return False
        self._buf += more
        return True

    def _peek(self) -> str:
        while self._pos >= len(self._buf):
            if not self._fill():
                return ""
        return self._buf[self._pos]

    def _skip_ws(self) -> None:
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()
            if self._pos < len(self._buf) or not self._fill():
                return

    def _decode(self, index: int) -> Any:
        while True:
            try:
                obj, end = self._dec.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as err:
                if len(self._buf) - self._pos > self.max_element_chars:
                    raise DataError(f"{self.path}: array element #{index} is longer than {self.max_element_chars:,} "
                                    "characters (the bound of one record), or never ends") from None
                # an element cut by the chunk boundary looks malformed: read on, then judge
                if self._fill():
                    continue
                raise DataError(f"{self.path}: not valid JSON in array element #{index} ({err.msg})") from None
            except RecursionError:
                raise DataError(f"{self.path}: array element #{index} is nested too deep to read") from None
            except _DuplicateKey as dup:
                raise DataError(f"{self.path}: array element #{index}: an object gives key {dup.args[0]!r} twice "
                                "(one value would silently replace the other)") from None
            if end == len(self._buf) and not self._eof and isinstance(obj, (int, float)):
                # a number at the buffer's end may continue in the next chunk
                if self._fill():
                    continue
            self._pos = end
            return obj


def iter_json_array(path: str | Path, *, chunk_chars: int = CHUNK_CHARS,
                    max_element_chars: int | None = None) -> Iterator[Any]:
    """The elements of the JSON array in ``path``, read incrementally (see the module doc);
    ``max_element_chars`` None: :data:`MAX_ELEMENT_CHARS` as it is at the call."""
    return iter(JsonArrayReader(path, chunk_chars=chunk_chars, max_element_chars=max_element_chars))
