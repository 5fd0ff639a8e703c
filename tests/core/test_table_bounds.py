"""Issue 38: Parquet tables read back from the store are bounded inputs.

A table past ``$VISMEM_MAX_TABLE_BYTES`` is refused from its size before it is read (``TooLarge``,
one line naming the object and the bound); bytes that are not a whole table -- or a table Polars
would panic on -- are one ``DataError`` line (a cache's ``CacheDamaged``), never a traceback from
inside pyarrow, and a damaged cached table is never used.
"""

from __future__ import annotations

import io

import polars as pl
import pytest

from vismem.core.cache import CacheDamaged, UnitCache
from vismem.core.errors import DataError, StoreError, TooLarge
from vismem.core.parquetbounds import footer_sizes, leaves
from vismem.core.parquetio import decode_table, parquet_bytes
from tests.conftest import forbid_whole_reads

DF = pl.DataFrame({"q": [f"q{i}" for i in range(50)], "hit": [i % 3 == 0 for i in range(50)]})


@pytest.mark.parametrize("where", ["file", "s3"])
def test_a_table_past_the_bound_is_refused_before_it_is_read(where, request, monkeypatch):
    store = request.getfixturevalue(f"{where}_store")
    store.write_table("runs/r/results/t.parquet", DF)
    assert store.read_table("runs/r/results/t.parquet").height == 50
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "100")
    if where == "file":
        forbid_whole_reads(monkeypatch, ".parquet")
    with pytest.raises(TooLarge) as err:
        store.read_table("runs/r/results/t.parquet")
    assert str(err.value).startswith(store.url("runs/r/results/t.parquet") + ": ")
    assert str(err.value).endswith(" bytes, more than the 100 bytes a Parquet table of the store may have "
                                   "($VISMEM_MAX_TABLE_BYTES sets the bound)")
    assert isinstance(err.value, StoreError) and err.value.exit_code == 3 and "\n" not in str(err.value)
    with pytest.raises(TooLarge):  # a prefix of parts: each part is bounded
        store.read_table("runs/r/results")


def test_the_parts_of_a_prefix_are_bounded_together(file_store, monkeypatch):
    for i in range(3):
        file_store.write_table(f"out/part-{i}.parquet", DF)
    one = len(file_store.get_bytes("out/part-0.parquet"))
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", str(int(one * 2.5)))  # each part fits, the three do not
    assert file_store.read_table("out/part-2.parquet").height == 50
    with pytest.raises(TooLarge, match=r"out: its 3 parts hold at least [\d,]+ bytes, more than the"):
        file_store.read_table("out")
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", str(one * 3))
    assert file_store.read_table("out").height == 150


def test_a_footer_declaring_more_than_the_bound_is_refused_before_decoding(monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()  # 2 MB of one repeated string, plain-encoded: zstd makes it a few KB
    pq.write_table(pa.table({"s": ["a" * 1000] * 2000}), buf, compression="zstd", use_dictionary=False)
    data = buf.getvalue()
    assert len(data) < 100_000
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "1000000")
    with pytest.raises(TooLarge, match=r"^t\.parquet: its footer declares, uncompressed, [\d,]+ bytes, more than "
                                       r"the 1,000,000 bytes a Parquet table"):
        decode_table("t.parquet", data)


def _dictionary_bomb(rows: int, width: int) -> bytes:
    """Two distinct strings of ``width`` characters, repeated over ``rows`` rows, dictionary-
    encoded: a few KB on disk (and in its footer), ``rows * width`` bytes decoded."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    col = pa.DictionaryArray.from_arrays(pa.array(np.arange(rows, dtype=np.int32) % 2),
                                         pa.array(["a" * width, "b" * width]))
    buf = io.BytesIO()  # no stored Arrow schema: the column reads back as plain strings
    pq.write_table(pa.table({"n": np.arange(rows), "s": col}), buf, compression="zstd", store_schema=False)
    return buf.getvalue()


@pytest.mark.parametrize("where", ["bytes", "store"])
def test_a_dictionary_bomb_is_refused_from_its_decoded_size(where, file_store, monkeypatch):
    data = _dictionary_bomb(rows=20_000, width=5_000)  # 100 MB decoded
    assert len(data) < 200_000
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "10000000")
    tail = (r"its columns decode to 100,\d{3},\d{3} bytes, more than the 10,000,000 bytes a Parquet table of the "
            r"store may have \(\$VISMEM_MAX_TABLE_BYTES sets the bound\)$")
    if where == "bytes":
        with pytest.raises(TooLarge, match=r"^t\.parquet: " + tail):
            decode_table("t.parquet", data)
        assert decode_table("t.parquet", data, columns=["n"]).height == 20_000  # the small column alone fits
    else:
        file_store.put_bytes("runs/r/results/t.parquet", data)
        with pytest.raises(TooLarge, match=tail):
            file_store.read_table("runs/r/results/t.parquet")
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "200000000")
    df = decode_table("t.parquet", data)
    assert df.schema == {"n": pl.Int64, "s": pl.String} and df["s"].str.len_bytes().sum() == 100_000_000


def test_tables_read_as_dictionaries_decode_to_what_polars_read_before():
    """Text columns are read as dictionaries and decoded after the bound is checked: the frame is
    the one ``pl.from_arrow(pyarrow's own read)`` gives, dtypes included, for every layout."""
    import decimal

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.table({
        "s": ["a", None, "b"] * 10, "b": pa.array([b"x", b"y", None] * 10),
        "d": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("2.25")] * 10, pa.decimal128(30, 2)),
        "m": pa.array([[("k", "v")], None, []] * 10, pa.map_(pa.string(), pa.string())),
        "l": pa.array([["x", None], None, []] * 10, pa.list_(pa.string())),
        "ll": pa.array([[["x"], []], None, [None]] * 10, pa.large_list(pa.list_(pa.large_string()))),
        "st": pa.array([{"a": "q", "b": 1, "c": ["r"]}, None, {"a": None, "b": 2, "c": None}] * 10),
        "c": pa.array(["x", "y", "x"] * 10).dictionary_encode(), "u": [f"{i:06d}" * 50 for i in range(30)],
        "i": list(range(30)), "i8": pa.array([1, None, -3] * 10, pa.int8()), "bo": [True, None, False] * 10,
        "fx": pa.array([b"abc", None, b"def"] * 10, pa.binary(3)),
        "lb": pa.array([[True], [], None] * 10, pa.list_(pa.bool_())),
        "ts": pa.array([1, None, 3] * 10, pa.timestamp("ns"))})
    files = []
    for kw in ({}, {"use_dictionary": False}, {"row_group_size": 7}, {"store_schema": False},
               {"dictionary_pagesize_limit": 200}):  # the last falls back to plain pages mid-column
        buf = io.BytesIO()
        pq.write_table(t, buf, **kw)
        files.append(buf.getvalue())
    buf = io.BytesIO()
    pq.write_table(t, buf, use_deprecated_int96_timestamps=True, row_group_size=13)
    files.append(buf.getvalue())
    files.append(parquet_bytes(pl.DataFrame({"cat": pl.Series(["a", "b", "a"], dtype=pl.Categorical),
                                             "s": ["x", "y", "z"]}), schema_version=2))
    files.append(parquet_bytes(pa.table({"s": pa.array([], pa.string()), "b": pa.array([], pa.binary())})))
    files.append(parquet_bytes(pl.DataFrame({"v": np.ones((3, 4), np.float32), "n": [[None], [], None],
                                             "e": pl.Series(["a", "b", "a"], dtype=pl.Enum(["a", "b"]))})))
    for data in files:
        read = pq.read_table(io.BytesIO(data))
        want = pl.from_arrow(read)
        got = decode_table("t", data)
        assert got.schema == want.schema and got.equals(want)
        pf = pq.ParquetFile(io.BytesIO(data))  # the footer's floor is one: what pyarrow allocates is no less
        sizes = footer_sizes(data, pf.metadata, leaves(pf, read.column_names))
        assert sizes.floor <= read.get_total_buffer_size()
        text = sum(read[c].nbytes for c in read.column_names if c not in ("i", "i8", "bo", "fx", "lb", "ts", "d", "v", "c", "cat", "e", "n"))
        assert sum(sizes.text.values()) >= text  # and the text's ceiling one
        if "i" in want.columns:
            assert decode_table("t", data, columns=["u", "i", "s"]).equals(want.select("u", "i", "s"))


def _bad_schema_metadata() -> bytes:
    """A table whose schema metadata key is not UTF-8: pyarrow reads it, Polars panics taking it over."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"x": [1, 2]}).replace_schema_metadata({b"k\xff\xfe": b"v"}), buf)
    return buf.getvalue()


@pytest.mark.parametrize("name, data, why", [
    ("garbage", b"hello, not a table", "not a Parquet table (ArrowInvalid"),
    ("empty", b"", "not a Parquet table (ArrowInvalid"),
    ("truncated", parquet_bytes(DF)[:-30], "not a Parquet table"),
    ("bad schema", _bad_schema_metadata(), "not a readable Parquet table (UnicodeDecodeError"),
])
def test_bytes_that_are_not_a_whole_table_are_one_data_error(file_store, capfd, name, data, why):
    file_store.put_bytes("t.parquet", data)
    with pytest.raises(DataError) as err:
        file_store.read_table("t.parquet")
    assert str(err.value).startswith(f"{file_store.url('t.parquet')}: {why}") and "\n" not in str(err.value)
    assert err.value.exit_code == 4 and "panicked" not in capfd.readouterr().err


def test_bytes_polars_own_reader_panics_on_are_one_line_or_a_table(capfd):
    # Two bytes of this table flipped made pl.read_parquet panic (and the process abort at exit;
    # so it is not called here). decode_table never hands such bytes to Polars' reader.
    data = bytearray(parquet_bytes(pl.DataFrame({"x": list(range(1000)), "s": [f"abc{i}" for i in range(1000)]})))
    for pos, value in ((2617, 196), (4753, 147)):
        data[pos % len(data)] = value
    try:
        decode_table("t.parquet", bytes(data))
    except DataError as err:
        assert str(err).startswith("t.parquet: not a") and "\n" not in str(err)
    assert "panicked" not in capfd.readouterr().err


def test_a_missing_column_is_named_not_silently_dropped():
    with pytest.raises(DataError, match=r"^t\.parquet: no column 'nope' \(it has: q, hit\)"):
        decode_table("t.parquet", parquet_bytes(DF), columns=["hit", "nope"])
    assert decode_table("t.parquet", parquet_bytes(DF), columns=["hit"]).columns == ["hit"]


def test_a_decoded_table_keeps_the_dtypes_polars_reads():
    import numpy as np

    df = pl.DataFrame({"v": np.ones((3, 4), np.float32), "l": [[1], [2, 3], []],
                       "e": pl.Series(["a", "b", "a"], dtype=pl.Enum(["a", "b"])), "s": [{"k": 1}] * 3})
    data = parquet_bytes(df, schema_version=2)
    assert decode_table("t", data).schema == pl.read_parquet(io.BytesIO(data)).schema


def test_a_cached_table_that_does_not_decode_is_damaged_not_a_traceback(file_store):
    units = UnitCache(file_store, "probes/x")
    units.commit("s/s0", {".parquet": b"not parquet at all"}, {"rows": 1})  # recorded: matches its marker
    with pytest.raises(CacheDamaged, match=r"^damaged cache object probes/x/s/s0\.parquet: not a Parquet table"):
        units.read_table("s/s0", ".parquet")


def test_a_cached_table_past_the_bound_is_damage_unless_recorded_that_large(file_store, monkeypatch):
    units = UnitCache(file_store, "probes/x")
    data = parquet_bytes(DF)
    units.commit("s/s0", {".parquet": data}, {"rows": 50})
    assert units.read_table("s/s0", ".parquet", columns=["q"]).columns == ["q"]
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", str(len(data) + 10))
    file_store.put_bytes("probes/x/s/s0.parquet", data + b"\0" * 100)  # grown past the bound: not what was written
    forbid_whole_reads(monkeypatch, ".parquet")
    with pytest.raises(CacheDamaged, match=rf"damaged cache object probes/x/s/s0\.parquet: {len(data) + 100:,} bytes, "
                                           rf"the done marker recorded {len(data)} bytes"):
        units.read_table("s/s0", ".parquet")
    assert units.verify("s/s0") and "damaged cache object" in units.verify("s/s0")[0]
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "100")  # what was written is past the bound: the bound is at fault
    units.commit("s/s1", {".parquet": data}, {"rows": 50})
    with pytest.raises(TooLarge, match=r"VISMEM_MAX_TABLE_BYTES sets the bound"):
        units.read_table("s/s1", ".parquet")
