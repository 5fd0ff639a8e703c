"""Issue 38: a Parquet table is bounded by what its rows decode to, not only by its bytes.

A *row-count bomb* -- a footer declaring tens of millions of rows of one repeated value, a few
hundred KB on disk and in its footer's sizes -- is refused from the footer's counts before pyarrow
allocates a slot per row; a *nested* text column (a list or struct of strings) whose few distinct
long strings repeat over many rows is refused from its decoded size before it is decoded. Both are
checked in a child process whose peak memory must stay small.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vismem.core.errors import TooLarge
from vismem.core.parquetio import decode_table

ROOT = Path(__file__).resolve().parents[2]

#: Peak memory a refused read may add (the bombs below take 100 MB and more read).
SMALL = 32 << 20

_CHILD = """
import json, resource, sys
from vismem.core.errors import TooLarge
from vismem.core.parquetio import decode_table
data = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    decode_table("t.parquet", data)
    message = None
except TooLarge as err:
    message = str(err)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"message": message, "grown": grown * 1024}))
"""


def _refused_in_a_child(tmp_path: Path, data: bytes, bound: int) -> tuple[str, int]:
    """``decode_table``'s TooLarge line for ``data`` under ``bound`` bytes, read in a fresh
    process, and how much that process's peak memory grew reading it."""
    path = tmp_path / "t.parquet"
    path.write_bytes(data)
    env = {"PATH": "/usr/bin:/bin", "VISMEM_MAX_TABLE_BYTES": str(bound), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["message"], "the table was read, not refused"
    return got["message"], got["grown"]


def _row_bomb(rows_per_group: int, groups: int) -> bytes:
    """``groups`` row groups of ``rows_per_group`` zeros (int64): run-length encoded, a few KB a
    row group on disk and in its footer, 8 bytes a row read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    part = pa.table({"n": np.zeros(rows_per_group, np.int64)})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, part.schema, compression="zstd") as writer:
        for _ in range(groups):
            writer.write_table(part)
    return buf.getvalue()


def test_a_row_count_bomb_is_refused_from_its_footer_before_anything_is_allocated(tmp_path, monkeypatch):
    data = _row_bomb(1_000_000, 20)  # 20 M rows: 160 MB read
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert len(data) < 300_000 and declared < 10_000_000  # neither its size nor its footer's sizes tell
    message, grown = _refused_in_a_child(tmp_path, data, 10_000_000)
    assert message == ("t.parquet: its 20,000,000 rows decode to at least 160,000,000 bytes, more than the "
                       "10,000,000 bytes a Parquet table of the store may have ($VISMEM_MAX_TABLE_BYTES sets the bound)")
    assert grown < SMALL
    monkeypatch.setenv("VISMEM_MAX_TABLE_ROWS", "1000000")  # the row count has its own bound, columns or none
    for columns in (None, []):
        with pytest.raises(TooLarge, match=r"^t\.parquet: its footer declares 20,000,000 rows, more than the "
                                           r"1,000,000 rows a Parquet table of the store may have "
                                           r"\(\$VISMEM_MAX_TABLE_ROWS sets the bound\)$"):
            decode_table("t.parquet", data, columns=columns)


def _varint(value: int, width: int) -> bytes:
    """``value`` as a Thrift compact (zigzag) varint of exactly ``width`` bytes."""
    value, out = value << 1, bytearray()
    for i in range(width):
        out.append((value & 0x7F) | (0x80 if i < width - 1 else 0))
        value >>= 7
    assert not value
    return bytes(out)


def test_a_footer_understating_a_list_is_refused_from_its_page_headers(tmp_path):
    """pyarrow reads as many values as a page's header says: a footer altered to count 40,000
    values of a one-row list of 5,000,000 zeros still reads 5,000,000 (40 MB)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 5_000_000
    table = pa.table({"l": pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), pa.array(np.zeros(n, np.int64)))})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    data = bytearray(buf.getvalue())
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.index(_varint(n, 4), footer)  # the column chunk's num_values, the first of the footer's
    data[at:at + 4] = _varint(40_000, 4)
    data = bytes(data)
    assert pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0).num_values == 40_000
    message, grown = _refused_in_a_child(tmp_path, data, 10_000_000)
    assert message.startswith("t.parquet: its 1 rows decode to at least 20,000,000 bytes, more than the 10,000,000")
    assert grown < SMALL


def test_the_page_headers_read_are_bounded(monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vismem.core import parquetpages
    from vismem.core.errors import DataError

    buf = io.BytesIO()  # a list column of many small pages
    pq.write_table(pa.table({"l": [[i, i] for i in range(2_000)]}), buf, data_page_size=100, write_batch_size=10)
    assert decode_table("t", buf.getvalue()).height == 2_000
    monkeypatch.setattr(parquetpages, "MAX_PAGES", 5)
    with pytest.raises(DataError, match=r"^t: not a Parquet table \(ValueError: its list, map and text columns hold "
                                        r"more than 5 pages\)$"):
        decode_table("t", buf.getvalue())


def test_an_ordinary_table_that_fits_is_read(monkeypatch):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()  # a million distinct int64: 8 MB read, and its footer declares about as much
    pq.write_table(pa.table({"n": np.arange(1_000_000)}), buf, row_group_size=300_000, use_dictionary=False)
    meta = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata
    declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert declared < 8_200_000
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "8200000")  # its floor is 8 MB, read it takes 8.125 (validity bits)
    assert decode_table("t", buf.getvalue())["n"].sum() == 499_999_500_000


def _nested_bomb(shape: str, rows: int, width: int, row_group_size: int | None) -> bytes:
    """A ``shape`` ("list" or "struct") column of two distinct strings of ``width`` characters
    over ``rows`` rows, dictionary-encoded: a few KB on disk, ``rows * width`` bytes decoded."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = pa.DictionaryArray.from_arrays(pa.array(np.arange(rows, dtype=np.int32) % 2),
                                          pa.array(["a" * width, "b" * width]))
    if shape == "list":
        col = pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32)), text)
    else:
        col = pa.StructArray.from_arrays([text, pa.array(np.arange(rows))], ["s", "k"])
    buf = io.BytesIO()  # no stored Arrow schema: the strings read back as plain strings
    pq.write_table(pa.table({"n": np.arange(rows), "x": col}), buf, compression="zstd", store_schema=False,
                   row_group_size=row_group_size)
    return buf.getvalue()


@pytest.mark.parametrize("shape", ["list", "struct"])
@pytest.mark.parametrize("row_group_size", [None, 5_000])  # several row groups: pyarrow reads none as dictionaries whole
def test_a_nested_text_bomb_is_refused_from_its_decoded_size(tmp_path, monkeypatch, shape, row_group_size):
    import polars as pl
    import pyarrow.parquet as pq

    data = _nested_bomb(shape, rows=20_000, width=5_000, row_group_size=row_group_size)  # 100 MB decoded
    assert len(data) < 300_000
    message, grown = _refused_in_a_child(tmp_path, data, 10_000_000)
    assert message.startswith("t.parquet: its columns decode to ") and message.endswith(
        " bytes, more than the 10,000,000 bytes a Parquet table of the store may have "
        "($VISMEM_MAX_TABLE_BYTES sets the bound)")
    assert grown < SMALL
    assert decode_table("t", data, columns=["n"]).height == 20_000  # the other column alone fits
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "200000000")  # under a bound it fits: read as pyarrow reads it
    want = pl.from_arrow(pq.read_table(io.BytesIO(data)))
    got = decode_table("t", data)
    assert got.schema == want.schema and got.equals(want)
