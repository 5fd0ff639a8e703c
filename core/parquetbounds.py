"""What a Parquet table's footer commits a reader to, and what its text decodes to.

:mod:`vismem.core.parquetio` reads a table only after these say it fits. A footer's
``total_byte_size`` is whatever the writer wrote, and says nothing of what a page *decodes* to: a
run-length or dictionary-encoded page of one repeated value holds millions of rows in a few
bytes, and pyarrow allocates a slot for every row (4 bytes of dictionary index, 8 of an int64)
before anything can be checked -- a *row-count bomb*. :func:`footer_sizes` gives the least a read
of the chosen columns allocates, from the counts the reader itself goes by (the footer's rows;
for a list or map, the values its pages' headers declare: :mod:`vismem.core.parquetpages`);
:func:`text_leaves` names the string and binary leaves, top-level or nested, to be read as
dictionaries, and :func:`decoded_bytes` sums what such a read column decodes to without decoding
it (a dictionary bomb: a few long strings repeated millions of times).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from vismem.core.parquetpages import chunk_pages

__all__ = ["Leaf", "Sizes", "decoded_bytes", "footer_sizes", "leaves", "row_count", "text_leaves"]

#: Bits a value of each physical type takes, at least, once read: a boolean is bit-packed; a
#: BYTE_ARRAY value is a 4-byte offset or dictionary index (less only for a dictionary the file's
#: Arrow schema declares with narrower indices: see ``_value_bits``). INT96 is read as timestamp[ns].
_BITS = {"BOOLEAN": 1, "INT32": 32, "FLOAT": 32, "INT64": 64, "DOUBLE": 64, "INT96": 64, "BYTE_ARRAY": 32}
#: INT32 columns Arrow reads narrower than 4 bytes.
_NARROW = {"INT_8": 8, "UINT_8": 8, "INT_16": 16, "UINT_16": 16}
#: Converted types of BYTE_ARRAY leaves Arrow reads as strings or binaries (a decimal is not one).
_TEXT = {"NONE", "UTF8", "JSON", "BSON", "ENUM"}


def row_count(meta: Any) -> int:
    """Rows the footer ``meta`` declares: the file's count or its row groups' (what is read), the larger."""
    return max(meta.num_rows, sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups)))


class Leaf(NamedTuple):
    """A leaf column of the footer, as the bounds need it."""

    index: int  #: its place among the file's leaves (``RowGroupMetaData.column``)
    top: str  #: the top-level column it is under
    path: str  #: its dotted path (what ``read_dictionary`` takes)
    bits: int  #: bits one of its values takes read, at least
    repeated: bool  #: under a list or map
    text: bool  #: a string or binary leaf to be read as dictionaries


def leaves(pf: Any, names: Sequence[str]) -> list[Leaf]:
    """Every leaf under the top-level columns ``names`` of the file ``pf``."""
    chosen = set(names)
    schema, arrow = pf.schema, pf.schema_arrow
    declared = {name: _declares_dictionary(arrow.field(name).type) for name in chosen}
    out = []
    # column_paths are lists of names, not dotted strings: a top-level name may hold a dot
    for j, path in enumerate(pf.reader.column_paths):
        if path[0] in chosen:
            col = schema.column(j)
            kind, converted = col.physical_type, col.converted_type
            out.append(Leaf(j, path[0], col.path, _value_bits(kind, converted, col.length, declared[path[0]]),
                            col.max_repetition_level > 0,
                            kind == "BYTE_ARRAY" and converted in _TEXT and not declared[path[0]]))
    return out


def _value_bits(kind: str, converted: str, length: int, dictionary: bool) -> int:
    """Bits one value of a leaf of physical type ``kind`` takes read, at least (``dictionary``:
    its top-level column declares one)."""
    if kind == "FIXED_LEN_BYTE_ARRAY":
        return 8 * max(length, 1)
    if kind == "INT32":
        return _NARROW.get(converted, 32)
    if kind == "BYTE_ARRAY" and dictionary:  # a declared dictionary may index with int8
        return 8
    return _BITS.get(kind, 1)


def _declares_dictionary(arrow_type: Any) -> bool:
    """Whether ``arrow_type`` (a top-level field's) holds a dictionary: the file's Arrow schema
    declares it (a Categorical, an Enum), and it is read -- and kept -- as one."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return True
    return any(_declares_dictionary(arrow_type.field(k).type) for k in range(arrow_type.num_fields))


class Sizes(NamedTuple):
    """What the footer and page headers of a table say a read of some of its columns takes."""

    floor: int  #: bytes the read allocates at least (:func:`footer_sizes`)
    text: dict[str, int]  #: bytes each text leaf (by path) decodes to at most


def footer_sizes(data: bytes, meta: Any, chosen: Sequence[Leaf]) -> Sizes:
    """What a read of the leaves ``chosen`` of the file ``data`` (footer ``meta``) takes.

    ``floor``: each row gives a leaf that is not repeated one slot; each value (level) of a
    repeated leaf -- in a list or map -- is a slot of it or a list offset (4 bytes or more), so its
    values take at least the smaller of the two each. Leaves of one list share its offsets: per
    top-level column the repeated leaves count as the largest of them. Validity bits are not
    counted (Arrow leaves them out of a column without nulls). A leaf that is not repeated is read
    row by row, as many rows as the footer counts; a repeated one as many values as its pages'
    headers count, whatever the footer says (:func:`vismem.core.parquetpages.chunk_pages`).

    ``text``: a text value is no longer than all its chunk's pages hold decompressed (a dictionary,
    a plain page, delta suffixes: its bytes are there), so a text leaf decodes to at most its
    values times those bytes, plus an 8-byte offset each. Far under the bound -- any ordinary
    table -- it need not be read as dictionaries to be measured (:func:`text_leaves`)."""
    total = 0
    text = {leaf.path: 0 for leaf in chosen if leaf.text}
    pages = [0]
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        repeated: dict[str, int] = {}
        for leaf in chosen:
            chunk = group.column(leaf.index)
            values = max(chunk.num_values, group.num_rows)
            if leaf.repeated or leaf.text:
                counted, held = chunk_pages(data, chunk, pages)
                values = max(values, counted)
                if leaf.text:
                    text[leaf.path] += values * (held + 8)
            if leaf.repeated:
                repeated[leaf.top] = max(repeated.get(leaf.top, 0), values * min(leaf.bits, 32))
            else:
                total += values * leaf.bits
        total += sum(repeated.values())
    return Sizes((total + 7) // 8, text)


def text_leaves(chosen: Sequence[Leaf], ceilings: dict[str, int], room: int) -> list[str]:
    """Dotted paths of the string and binary leaves of ``chosen`` to read as dictionaries, nested
    ones included: none while the ``ceilings`` of all (:func:`footer_sizes`) fit in ``room``;
    else top-level ones first (pyarrow reads those as dictionaries at little cost, a nested one at
    about twice a plain read's), largest first, until the others' fit. (A leaf the table declares
    as dictionaries already is read as such.) A whole file cannot read a nested one as
    dictionaries -- "Nested data conversions not implemented for chunked array outputs" -- one
    row group at a time can."""
    left = sum(ceilings.values())
    out = []
    for leaf in sorted((leaf for leaf in chosen if leaf.text), key=lambda leaf: (leaf.path != leaf.top, -ceilings[leaf.path])):
        if left <= room:
            break
        out.append(leaf.path)
        left -= ceilings[leaf.path]
    return out


def decoded_bytes(col: Any, want: Any, *, exact: bool = True) -> int:
    """Bytes the column ``col``, read with dictionaries where its type is ``want`` without, takes
    decoded: its size as read, plus for every dictionary in it the length of each value its
    indices take and an 8-byte offset each (summed on lengths: nothing is decoded). Not
    ``exact``: an upper bound from sizes alone -- every index taken as the whole dictionary --
    that costs no computing (a small table is far under the bound either way)."""
    if col.type == want:
        return col.nbytes
    return col.nbytes + sum(_dictionary_bytes(chunk, exact) for chunk in col.chunks)


def _dictionary_bytes(arr: Any, exact: bool) -> int:
    """What the dictionaries in ``arr`` (at any depth) decode to (or at most, not ``exact``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = arr.type
    if pa.types.is_dictionary(kind):
        if not exact:
            return len(arr) * (arr.dictionary.nbytes + 8)
        taken = pc.take(pc.binary_length(arr.dictionary), arr.indices)
        return int(pc.sum(taken).as_py() or 0) + 8 * len(arr)
    if pa.types.is_struct(kind):
        return sum(_dictionary_bytes(arr.field(k), exact) for k in range(kind.num_fields))
    if isinstance(arr, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray)):  # a map is a list
        return _dictionary_bytes(arr.values, exact)
    return 0
