"""The done-marker cache rule: objects first, then a marker recording their sizes and digests;
a damaged object is named and never read, and a discarded unit is redone."""

from __future__ import annotations

import re

import pytest

from vismem.pipelines.cache import OBJECTS, CacheDamaged, UnitCache, heal, record


def test_commit_then_read_verified(file_store):
    units = UnitCache(file_store, "cache/x")
    summary = units.commit("7/0", {".parquet": b"rows", ".timing.parquet": b"t"}, {"n": 2})
    assert summary == {"n": 2} and units.read_summary("7/0") == {"n": 2}
    marker = file_store.get_json("cache/x/7/0.done.json")
    assert marker[OBJECTS][".parquet"] == record(b"rows") == {"bytes": 4, "sha256": record(b"rows")["sha256"]}
    assert units.read_object("7/0", ".parquet") == b"rows" and units.verify("7/0") == []
    assert [m.group(1) for m in units.done_units(re.compile(r"/(\d+)/0\.done\.json$"))] == ["7"]


@pytest.mark.parametrize("damage", [b"row", b"ROWS", b""])
def test_a_damaged_object_is_named_and_never_read(file_store, damage):
    units = UnitCache(file_store, "cache/x")
    units.commit("1/2", {".parquet": b"rows"}, {"n": 1})
    file_store.put_bytes("cache/x/1/2.parquet", damage)
    with pytest.raises(CacheDamaged, match=r"damaged cache object cache/x/1/2\.parquet: \d+ bytes"):
        units.read_object("1/2", ".parquet")
    (line,) = units.verify("1/2")
    assert "cache/x/1/2.parquet" in line and "\n" not in line


def test_torn_marker_and_missing_object_are_damage(file_store):
    units = UnitCache(file_store, "cache/x")
    units.commit("a", {".bin": b"x"}, {})
    file_store.put_bytes("cache/x/a.done.json", b'{"n": ')
    assert "damaged cache marker cache/x/a.done.json" in units.verify("a")[0]
    units.commit("b", {".bin": b"x"}, {})
    file_store.delete("cache/x/b.bin")
    assert units.verify("b")


def test_heal_discards_only_damaged_units(file_store, caplog):
    units = UnitCache(file_store, "cache/x")
    for u in ("u1", "u2", "u3"):
        units.commit(u, {".bin": u.encode()}, {})
    file_store.put_bytes("cache/x/u2.bin", b"zz")
    import logging

    healed = heal(((units, u) for u in ("u1", "u2", "u3")), logging.getLogger("t"))
    assert len(healed) == 1 and "cache/x/u2.bin" in healed[0]
    assert units.is_done("u1") and units.is_done("u3") and not units.is_done("u2")
    assert "discarded, recomputing" in caplog.text


def test_markers_without_records_are_trusted(file_store):
    units = UnitCache(file_store, "cache/x")
    file_store.put_bytes("cache/x/old.bin", b"legacy")
    file_store.put_json("cache/x/old.done.json", {"n": 1})
    assert units.read_object("old", ".bin") == b"legacy" and units.verify("old") == []


def test_store_verify_names_damaged_units_and_discards_them(tmp_path):
    import subprocess
    import sys

    from vismem.core.store import Store

    store = Store.open(f"file://{tmp_path}/st")
    UnitCache(store, "trajectories/b--1").commit("0/0", {".parquet": b"steps"}, {"n": 1})
    UnitCache(store, "trajectories/b--1").commit("0/1", {".parquet": b"steps"}, {"n": 1})
    UnitCache(store, "probes/b--1/0/arch--k").commit("ex/s1", {".parquet": b"rows"}, {"n": 1})
    store.put_bytes("probes/b--1/0/arch--k/ex/s1.parquet", b"rows but more")
    cmd = [sys.executable, "-m", "vismem", "store", "verify", "--store", f"file://{tmp_path}/st"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "probes/b--1/0/arch--k/ex/s1.parquet" in out.stdout and "3 cached units checked, 1 damaged" in out.stdout
    fixed = subprocess.run(cmd + ["--discard"], capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 1 and "(discarded)" in fixed.stdout
    clean = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0 and "2 cached units checked, 0 damaged" in clean.stdout
