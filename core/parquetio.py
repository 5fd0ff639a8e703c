"""Parquet tables in and out of the store: written one way, read back bounded and checked.

A table read back from the store is an input like any other: a hostile or damaged object may be
huge, may declare far more data than its own size (a zstd page expands a thousandfold), or may
be bytes no reader should be handed. :func:`decode_table` therefore

* refuses bytes past :data:`vismem.core.bounds.TABLE_BYTES`, and a footer declaring more than
  that uncompressed, before any page is decoded;
* refuses, from the footer alone, more rows than :data:`vismem.core.bounds.TABLE_ROWS` and rows
  that read to more than :data:`TABLE_BYTES` at least (a page of one repeated value holds
  millions of rows in a few bytes, and pyarrow allocates every row's slot: a row-count bomb;
  :func:`vismem.core.parquetbounds.footer_sizes`);
* refuses a table whose columns *decode* past that bound, before their strings are decoded: a
  dictionary-encoded column is small on disk whatever it holds (a few long strings repeated
  millions of times -- a dictionary bomb -- decode to far more than the file, or its footer,
  declares). String and binary columns, top-level or nested, are read as dictionaries (their
  indices are small) one row group at a time, their decoded size is summed from the
  dictionary's value lengths taken by the indices after each, and only then are they decoded;
* decodes with pyarrow, not Polars' own reader: on a damaged table Polars' reader can *panic* (a
  Rust backtrace on stderr, a ``PanicException`` that is no ``Exception``, and the process may
  abort at exit) -- two flipped bytes of a 5 KB table were enough -- where pyarrow answers the
  same bytes with an error;
* validates the result in full (offsets, UTF-8) and checks every field name and metadata entry is
  UTF-8: Polars panics taking over a table whose schema is not (``pl.from_arrow``);
* only then hands the table to Polars (the same dtypes ``pl.read_parquet`` gives).

Any failure is one line naming the object, of the class the caller gives (``DataError``, or a
cache's ``CacheDamaged`` so the unit is discarded and redone) -- never a traceback from inside
pyarrow, never a half-read table.
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Sequence

from vismem.core.bounds import TABLE_BYTES, TABLE_ROWS
from vismem.core.errors import DataError, TooLarge
from vismem.core.parquetbounds import decoded_bytes, footer_sizes, leaves, row_count, text_leaves

__all__ = ["decode_table", "parquet_bytes"]


def parquet_bytes(table: Any, *, schema_version: int | None = None) -> bytes:
    """A Polars DataFrame or Arrow table as the Parquet bytes ``Store.write_table`` stores
    (zstd; ``schema_version`` in the metadata and as a column when given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = table.to_arrow()
    if schema_version is not None:
        if "schema_version" not in table.column_names:
            table = table.append_column("schema_version", pa.array([schema_version] * table.num_rows, pa.int32()))
        meta = dict(table.schema.metadata or {})
        meta[b"vismem.schema_version"] = str(schema_version).encode()
        table = table.replace_schema_metadata(meta)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def decode_table(name: str, data: bytes, *, columns: Sequence[str] | None = None,
                 error: type[DataError] = DataError) -> Any:
    """The Parquet ``data`` of the object ``name`` as a Polars DataFrame (``columns`` only, when
    given); :class:`TooLarge` past :data:`TABLE_BYTES`, ``error`` (one line) when it is not a
    whole table."""
    import polars as pl
    from polars.exceptions import PanicException

    past = TABLE_BYTES.past(len(data))
    if past:
        raise TooLarge(f"{name}: {past}", size=len(data))
    table = _arrow_table(name, data, columns, error)
    try:
        return pl.from_arrow(table)
    except (Exception, PanicException) as err:  # checked above; a reader bug still gets one line
        raise error(f"{name}: not a readable Parquet table ({_why(err)})") from None


def _arrow_table(name: str, data: bytes, columns: Sequence[str] | None, error: type[DataError]) -> Any:
    """The table of ``data``, bounded by its footer and its decoded size and validated, as pyarrow reads it."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        meta = pf.metadata
        declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        names = list(pf.schema_arrow.names) if columns is None else list(columns)
        missing = [c for c in names if c not in pf.schema_arrow.names]
        rows = row_count(meta)
        chosen = [] if missing else leaves(pf, names)
        sizes = footer_sizes(data, meta, chosen)
    except Exception as err:  # noqa: BLE001 - whatever the footer holds, the object is not a table
        raise error(f"{name}: not a Parquet table ({_why(err)})") from None
    for past, what in ((TABLE_BYTES.past(declared), "its footer declares, uncompressed,"),
                       (TABLE_ROWS.past(rows), "its footer declares"),
                       (TABLE_BYTES.past(sizes.floor), f"its {rows:,} rows decode to at least")):
        if past:  # all from the footer and page headers: nothing is allocated yet
            raise TooLarge(f"{name}: {what} {past}", size=len(data))
    if missing:  # pyarrow would return the table without them, silently
        raise error(f"{name}: no column {', '.join(map(repr, missing))} (it has: {', '.join(pf.schema_arrow.names)})")
    try:
        schema = pf.schema_arrow  # the types the table is read into, dictionaries decoded
        want = [schema.field(c).type for c in names]
        # only text that could decode past the bound (by its pages' bytes) is read as dictionaries:
        # an ordinary table is read as pyarrow reads it, at no extra cost
        measured = text_leaves(chosen, sizes.text, TABLE_BYTES.value())
        pf = pq.ParquetFile(io.BytesIO(data), metadata=meta, read_dictionary=measured)
        table = _read_groups(name, pf, names, want, len(data))
        table.validate(full=True)
        _check_names(table.schema)
        return _decode_strings(table, want)
    except TooLarge:
        raise
    except Exception as err:  # noqa: BLE001 - a damaged page, offset or string: one line, not pyarrow's traceback
        raise error(f"{name}: not a readable Parquet table ({_why(err)})") from None


def _read_groups(name: str, pf: Any, names: list[str], want: list[Any], size: int) -> Any:
    """The columns ``names`` of ``pf``, text read as dictionaries, one row group at a time (a
    nested column can be read as dictionaries only so); :class:`TooLarge` as soon as what they
    decode to passes the bound, before the next row group is read and before anything is decoded.
    What they decode to is bounded from sizes alone until that bound passes the limit (the common
    case costs nothing), then summed exactly over every row group read."""
    import pyarrow as pa

    groups, decoded, exact = [], 0, False
    for i in range(pf.metadata.num_row_groups):
        groups.append(pf.read_row_group(i, columns=names))
        decoded += sum(decoded_bytes(col, w, exact=exact) for col, w in zip(groups[-1].columns, want))
        if not exact and TABLE_BYTES.past(decoded):  # the upper bound is past: count exactly from here on
            exact = True
            decoded = sum(decoded_bytes(col, w) for group in groups for col, w in zip(group.columns, want))
        past = TABLE_BYTES.past(decoded)
        if past:
            raise TooLarge(f"{name}: its columns decode to {past}", size=size)
    return pa.concat_tables(groups) if groups else pf.read(columns=names)


def _decode_strings(table: Any, want: list[Any]) -> Any:
    """``table`` with its dictionary-read columns decoded: top-level ones as large strings /
    binaries (64-bit offsets: a row group of more than 2 GiB of text decodes whole; Polars takes
    both widths as the same dtype), nested ones to the type the table declares."""
    import pyarrow as pa

    for i, (col, w) in enumerate(zip(table.columns, want)):
        if col.type == w:
            continue
        if not pa.types.is_dictionary(col.type):  # nested text: the type pyarrow reads it as
            table = table.set_column(i, table.schema.field(i).with_type(w), col.cast(w))
            continue
        to = pa.large_string() if pa.types.is_string(w) or pa.types.is_large_string(w) else pa.large_binary()
        # take, not cast: several times faster on a long column
        col = pa.chunked_array([c.dictionary.cast(to).take(c.indices) for c in col.chunks], to)
        table = table.set_column(i, table.schema.field(i).with_type(to), col)
    return table


def _check_names(schema: Any) -> None:
    """UnicodeError unless every field name (nested ones too) and metadata entry is UTF-8."""
    for key, value in (schema.metadata or {}).items():
        key.decode("utf-8"), value.decode("utf-8")
    for field in _fields(schema):
        field.name.encode("utf-8")  # a name pyarrow decoded with surrogates fails here
        for key, value in (field.metadata or {}).items():
            key.decode("utf-8"), value.decode("utf-8")


def _fields(parent: Any) -> Iterable[Any]:
    """Every field under ``parent`` (a schema or a nested type), depth first."""
    import pyarrow as pa

    for i in range(len(parent) if isinstance(parent, pa.Schema) else parent.num_fields):
        field = parent.field(i)
        yield field
        yield from _fields(field.type)


def _why(err: BaseException) -> str:
    """``Type: first line of the message`` (pyarrow's messages run over several lines)."""
    text = " ".join(str(err).split())[:200]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
