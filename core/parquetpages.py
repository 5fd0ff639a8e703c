"""How many values a Parquet column chunk's pages hold, by the pages' own headers.

pyarrow decodes as many values as each data page's header says, whatever the footer counts: a
list column whose footer was altered to count 40,000 values of a one-row list of 2,000,000 reads
all 2,000,000 (run-length pages hold them in a few bytes). :func:`chunk_pages` reads the chunk's
page headers (Thrift compact protocol, a few dozen bytes each; the pages themselves are skipped)
so that ``core/parquetbounds.footer_sizes`` can count what will be decoded, not what the footer
says, and bound what a text column can decode to from the bytes its pages hold.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_PAGES", "chunk_pages"]

#: PageHeader fields (parquet.thrift): the page's type, its uncompressed and compressed sizes,
#: and the headers of each kind whose first field is the page's value count.
_TYPE, _UNCOMPRESSED, _COMPRESSED, _DATA, _DATA_V2 = 1, 2, 3, 5, 8
#: Page types that hold values (DATA_PAGE, DATA_PAGE_V2).
_DATA_PAGES = {0, 3}
#: Page headers read for one table, at most: each takes microseconds here, and a hostile chunk
#: of 10-byte pages would hold millions. pyarrow writes a page per MiB or 20,000 rows: a 4 GiB
#: table holds a few thousand a column.
MAX_PAGES = 100_000


def chunk_pages(data: bytes, chunk: Any, pages: list[int]) -> tuple[int, int]:
    """``(values, bytes)``: the values the data pages of the column chunk ``chunk`` (a
    ``ColumnChunkMetaData``) of the file ``data`` declare, and the bytes all its pages hold
    decompressed (pyarrow refuses a page that decompresses to another size than its header's);
    ValueError when its pages do not lie whole inside the file, or when ``pages[0]`` (the headers
    read so far for the table, counted on) passes :data:`MAX_PAGES`."""
    # the first page: the dictionary's when there is one (a chunk of no data page, as an empty
    # table's, has a data page offset of 0)
    starts = [chunk.data_page_offset] + ([chunk.dictionary_page_offset] if chunk.has_dictionary_page else [])
    start = min((at for at in starts if at > 0), default=0)
    end = start + chunk.total_compressed_size
    if start < 4 or end > len(data):
        raise ValueError(f"column chunk at {start} of {chunk.total_compressed_size} bytes lies outside the file")
    values = held = 0
    pos = start
    while pos < end:
        pages[0] += 1
        if pages[0] > MAX_PAGES:
            raise ValueError(f"its list, map and text columns hold more than {MAX_PAGES:,} pages")
        kind, full, size, count, pos = _page_header(data, pos)
        if size < 0 or full < 0:
            raise ValueError(f"page at {pos} declares {min(size, full)} bytes")
        values += count if kind in _DATA_PAGES else 0
        held += max(full, size)  # an uncompressed page is read by its compressed size
        pos += size
    return values, held


def _page_header(data: bytes, pos: int) -> tuple[int, int, int, int, int]:
    """``(type, uncompressed size, compressed size, value count, end)`` of the PageHeader at ``pos``."""
    kind = full = size = count = field = 0
    while True:
        field, typ, pos = _field_head(data, pos, field)
        if typ == 0:
            return kind, full, size, count, pos
        if typ == 5 and field == _TYPE:
            kind, pos = _int(data, pos)
        elif typ == 5 and field == _UNCOMPRESSED:
            full, pos = _int(data, pos)
        elif typ == 5 and field == _COMPRESSED:
            size, pos = _int(data, pos)
        elif typ == 12 and field in (_DATA, _DATA_V2):
            count, pos = _first_i32(data, pos)
        else:
            pos = _skip(data, pos, typ)


def _first_i32(data: bytes, pos: int) -> tuple[int, int]:
    """Field 1 (an i32: the value count) of the struct at ``pos``, and the struct's end."""
    count = field = 0
    while True:
        field, typ, pos = _field_head(data, pos, field)
        if typ == 0:
            return count, pos
        if typ == 5 and field == 1:
            count, pos = _int(data, pos)
        else:
            pos = _skip(data, pos, typ)


def _field_head(data: bytes, pos: int, last: int) -> tuple[int, int, int]:
    """``(field id, compact type, end)`` of the field header at ``pos`` (type 0: the struct's end)."""
    head = data[pos]
    if head == 0:
        return last, 0, pos + 1
    if head >> 4:  # a delta from the last field id
        return last + (head >> 4), head & 0x0F, pos + 1
    field, pos = _int(data, pos + 1)
    return field, head & 0x0F, pos


def _skip(data: bytes, pos: int, typ: int) -> int:
    """The end of a value of compact type ``typ`` at ``pos``."""
    if typ in (1, 2):  # a boolean field: its value is in the field header
        return pos
    if typ == 3:
        return pos + 1
    if typ in (4, 5, 6):
        return _varint(data, pos)[1]
    if typ == 7:
        return pos + 8
    if typ == 8:
        length, pos = _varint(data, pos)
        return pos + length
    if typ in (9, 10):  # list, set
        head = data[pos]
        count, pos = (head >> 4, pos + 1) if head >> 4 != 15 else _varint(data, pos + 1)
        for _ in range(count):  # a boolean element is one byte
            pos = pos + 1 if head & 0x0F in (1, 2) else _skip(data, pos, head & 0x0F)
        return pos
    if typ == 11:  # map
        count, pos = _varint(data, pos)
        if count:
            kinds, pos = data[pos], pos + 1
            for _ in range(count):
                pos = _skip(data, _skip(data, pos, kinds >> 4), kinds & 0x0F)
        return pos
    if typ == 12:  # struct
        field = 0
        while True:
            field, inner, pos = _field_head(data, pos, field)
            if inner == 0:
                return pos
            pos = _skip(data, pos, inner)
    raise ValueError(f"unknown Thrift type {typ} at {pos}")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and its end (at most 10 bytes)."""
    value = shift = 0
    for end in range(pos, min(pos + 10, len(data))):
        byte = data[end]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, end + 1
        shift += 7
    raise ValueError(f"a varint at {pos} runs past its 10 bytes or the file")


def _int(data: bytes, pos: int) -> tuple[int, int]:
    """The signed (zigzag varint) integer at ``pos`` and its end."""
    value, pos = _varint(data, pos)
    return (value >> 1) ^ -(value & 1), pos
