"""Issue 38: shot packs, shards and cached tables read back from the store are bounded inputs.

A pack past ``$VISMEM_MAX_PACK_BYTES`` is refused from its size; when its shard recorded another
size it is damage (the session is rendered again), when the shard recorded that size the bound is
at fault (one ``TooLarge`` line). A reference's span is bounded the same way before anything is
allocated. A shard that is past ``MAX_JSON_BYTES``, names another pack, or references bytes
outside its pack is damage; rows of the wrong type are one ``DataError`` line, never pyarrow's.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import polars as pl
import pytest

from vismem.core.blobref import make_ref, read_many
from vismem.core.errors import DataError, TooLarge
from vismem.pipelines.memshot.render import SCHEMA_VERSION, collect_units, pack_key, shard_key
from vismem.pipelines.memshot.shotcache import heal_shards, pack_record, verify_shard
from tests.conftest import forbid_whole_reads

PREFIX = "runs/r/memshot/locomo/v"
PACK = pack_key(PREFIX, "c1", "s1")
SHARD = shard_key(PREFIX, "c1", "s1")
SHOTS = b"A" * 100 + b"B" * 50


def _session(store, *, pack: bytes = SHOTS, rows: list | None = None, recorded: dict | None = None) -> None:
    """A finished session as the render leaves it: its pack, then its shard recording it."""
    store.put_bytes(PACK, pack)
    rows = rows if rows is not None else [
        {"conversation_id": "c1", "session_index": 0, "unit": 0, "key": make_ref(PACK, 0, 100)},
        {"conversation_id": "c1", "session_index": 0, "unit": 1, "key": make_ref(PACK, 100, 50)}]
    store.put_json(SHARD, {"schema_version": SCHEMA_VERSION, "rows": rows,
                           "pack": recorded if recorded is not None else pack_record(PACK, pack)})


def test_a_whole_session_passes(file_store):
    _session(file_store)
    assert verify_shard(file_store, SHARD) is None
    assert collect_units(file_store, PREFIX).num_rows == 2
    assert read_many(file_store.get_bytes, [make_ref(PACK, 100, 50), make_ref(PACK, 0, 100)]) == [b"B" * 50, b"A" * 100]


def test_a_pack_grown_past_the_bound_is_damage_and_the_session_is_rendered_again(file_store, monkeypatch, caplog):
    _session(file_store)
    file_store.put_bytes(PACK, SHOTS + b"\0" * 9850)  # 10,000 bytes where the shard recorded 150
    monkeypatch.setenv("VISMEM_MAX_PACK_BYTES", "1000")
    forbid_whole_reads(monkeypatch, ".pack")
    assert verify_shard(file_store, SHARD) == f"damaged cache object {PACK}: 10,000 bytes, the shard recorded 150 bytes"
    with caplog.at_level(logging.WARNING):
        healed = heal_shards(file_store, [SHARD], logging.getLogger("vismem"))
    assert len(healed) == 1 and not file_store.exists(SHARD)  # rendered again by the next run


def test_a_pack_recorded_past_the_bound_is_the_bounds_fault(file_store, monkeypatch):
    _session(file_store)
    monkeypatch.setenv("VISMEM_MAX_PACK_BYTES", "100")
    forbid_whole_reads(monkeypatch, ".pack")
    with pytest.raises(TooLarge, match=r"\.pack: 150 bytes, more than the 100 bytes a shot pack may have "
                                       r"\(\$VISMEM_MAX_PACK_BYTES sets the bound\)"):
        verify_shard(file_store, SHARD)


@pytest.mark.parametrize("where", ["file", "s3"])
def test_a_reference_past_the_bound_is_refused_before_anything_is_allocated(where, request):
    store = request.getfixturevalue(f"{where}_store")
    store.put_bytes(PACK, SHOTS)
    huge = make_ref(PACK, 0, 10**12)
    with pytest.raises(TooLarge) as err:
        store.get_bytes(huge)
    assert str(err.value) == (f"{store.url(PACK)}: a reference to 1,000,000,000,000 bytes, more than the "
                              "1,073,741,824 bytes a shot pack may have ($VISMEM_MAX_PACK_BYTES sets the bound)")
    with pytest.raises(TooLarge):
        read_many(store.get_bytes, [make_ref(PACK, 0, 10), huge])


@pytest.mark.parametrize("rows, recorded, line", [
    ([{"unit": "zero"}], None, "ArrowInvalid"),
    ([["a list"]], None, "row 0 is not an object"),
    ([{"key": make_ref(PACK, 100, 51)}], None, "row 0 references .*, outside .*s1.pack \\(150 bytes\\)"),
    ([{"key": make_ref(PACK.replace("s1.pack", "s2.pack"), 0, 10)}], None, "row 0 references .*s2.pack"),
    ([], {"key": "runs/other/x.pack", "bytes": 150}, "its pack record names 'runs/other/x.pack', not"),
    ([], {"key": ["not", "a", "key"]}, "its pack record names"),
])
def test_a_shard_pointing_elsewhere_is_damage(file_store, rows, recorded, line):
    _session(file_store, rows=rows, recorded=recorded)
    got = verify_shard(file_store, SHARD)
    assert got is not None and got.startswith(f"damaged cache marker {SHARD}: ")
    import re

    assert re.search(line, got), got


def test_a_shard_past_the_json_bound_is_damage(file_store, monkeypatch):
    from vismem.core import store as store_mod

    _session(file_store)
    monkeypatch.setattr(store_mod, "MAX_JSON_BYTES", 50)
    got = verify_shard(file_store, SHARD)
    assert got is not None and got.startswith(f"damaged cache marker {file_store.url(SHARD)}: ")
    assert "more than the 50 a JSON object of the store may have" in got


@pytest.mark.parametrize("shard, why", [
    (b"{not json", "damaged shard (Expecting property name"),
    (b'{"schema_version": 2, "rows": [{"unit": "zero"}]}', "damaged shard (ArrowInvalid"),
    (b'{"schema_version": 2, "rows": [{"unit": 0}, ["a list"]]}', "damaged shard (row 1 is not an object)"),
    (b'{"schema_version": 2, "rows": 7}', "damaged shard (not a shard)"),
])
def test_collect_units_names_a_damaged_shard_in_one_line(file_store, shard, why):
    assert SCHEMA_VERSION == 2
    file_store.put_bytes(SHARD, shard)
    with pytest.raises(DataError) as err:
        collect_units(file_store, PREFIX)
    assert str(err.value).startswith(f"{file_store.url(SHARD)}: {why}") and "\n" not in str(err.value)
    assert "vismem store verify --discard" in str(err.value)


def test_a_cached_answer_table_recorded_past_the_bound_is_not_silently_recomputed(file_store, monkeypatch):
    from vismem.pipelines.memshot.answercache import cached, save

    ctx = SimpleNamespace(store=file_store, logger=logging.getLogger("t"))
    key = "runs/r/memshot/answers_raw.parquet"
    save(ctx, key, pl.DataFrame({"question_id": ["q1"], "answer_status": ["ok"]}), schema_version=1)
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "100")
    with pytest.raises(TooLarge, match="VISMEM_MAX_TABLE_BYTES"):
        cached(ctx, key, pl.lit(True))
    assert file_store.exists(key)  # kept: the bound, not the table, is at fault


def test_a_damaged_embedding_cache_is_dropped_and_embedded_again(file_store, caplog):
    import numpy as np

    from vismem.pipelines.memshot.retrieve import cached_vectors

    ctx = SimpleNamespace(store=file_store, logger=logging.getLogger("vismem"))
    key = "runs/r/memshot/embeddings/text_embedder.parquet"
    file_store.write_table(key, pl.DataFrame({"item_id": ["a", "b"], "embedding": np.ones((2, 3), np.float32),
                                              "embed_s": [0.1, 0.2]}))
    got = cached_vectors(ctx, key)
    assert sorted(got) == ["a", "b"] and got["a"][0].shape == (3,)
    for damaged in (b"PAR1 torn", None):
        if damaged is None:  # a whole table of other columns
            file_store.write_table(key, pl.DataFrame({"item_id": ["a"]}))
        else:
            file_store.put_bytes(key, damaged)
        with caplog.at_level(logging.WARNING):
            assert cached_vectors(ctx, key) == {}
        assert not file_store.exists(key) and f"damaged cache table {key}" in caplog.text


def test_store_cat_of_a_damaged_or_oversized_table_is_one_line(tmp_path, capsys, monkeypatch):
    from vismem.core.store import Store
    from vismem.pipelines.cli import main

    uri = f"file://{tmp_path}/store"
    store = Store.open(uri)
    store.put_bytes("runs/r/results/bad.parquet", b"PAR1 not a table PAR1")
    assert main(["store", "cat", "runs/r/results/bad.parquet", "--store", uri]) == 4
    err = capsys.readouterr().err
    assert "runs/r/results/bad.parquet: not a Parquet table" in err and err.count("\n") == 1
    store.write_table("runs/r/results/t.parquet", pl.DataFrame({"x": list(range(100))}))
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "100")
    assert main(["store", "cat", "runs/r/results/t.parquet", "--store", uri]) == 3
    err = capsys.readouterr().err
    assert "more than the 100 bytes a Parquet table of the store may have" in err and err.count("\n") == 1
