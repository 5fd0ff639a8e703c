"""The done-marker cache rule: objects first, then a marker recording their sizes and digests;
a damaged object is named and never read, and a discarded unit is redone."""

from __future__ import annotations

import re

import pytest

from vismem.core.cache import OBJECTS, CacheDamaged, UnitCache, heal, record


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


def test_every_cache_kind_heals_a_damaged_object(file_store, caplog):
    # Feature parts, the MemShot answer table and OCR texts: a damaged object is named, never
    # used, and what it held is computed again.
    import logging
    from types import SimpleNamespace

    import polars as pl

    from vismem.memory.dialogue.pixels import cache_key, cached_text, seconds_key, store_cache
    from vismem.pipelines.dmv.features import load_parts, save_part
    from vismem.pipelines.memshot.answercache import cached, save

    fs = SimpleNamespace(kind="caption", key="k1")
    key = save_part(file_store, fs, {"c1": "a red cap", "c2": "a chair"})
    assert load_parts(file_store, fs) == {"c1": "a red cap", "c2": "a chair"}
    file_store.put_bytes(key, file_store.get_bytes(key)[:40])  # truncated
    healed: list[str] = []
    with caplog.at_level(logging.WARNING):
        assert load_parts(file_store, fs, healed) == {}
    assert "damaged cache object " + key in caplog.text and not file_store.exists(key)
    assert len(healed) == 1 and key in healed[0] and "\n" not in healed[0]
    from vismem.pipelines.dmv.replay import describe

    said = describe({"chains": 1, "architectures": ["a"], "features": {"computed": {}, "reused": {}, "healed": 1}})
    assert said.endswith("; 1 damaged feature parts redone")

    ctx = SimpleNamespace(store=file_store, logger=logging.getLogger("t"))
    df = pl.DataFrame({"question_id": ["q1", "q2"], "answer_status": ["ok", "ok"]})
    save(ctx, "runs/r/memshot/answers_raw.parquet", df, schema_version=1)
    assert cached(ctx, "runs/r/memshot/answers_raw.parquet", pl.lit(True)).height == 2
    file_store.put_bytes("runs/r/memshot/answers_raw.parquet", b"PAR1 garbage")
    assert cached(ctx, "runs/r/memshot/answers_raw.parquet", pl.lit(True)) is None

    get, put = store_cache(file_store)
    text_key = cache_key("engine/v1", b"shot bytes")
    put(seconds_key(text_key), b'{"seconds": 0.5, "bytes": 9, "sha256": "'
        + record(b"read text")["sha256"].encode() + b'"}')
    put(text_key, b"read text")
    assert cached_text(get, text_key) == ("read text", 0.5)
    put(text_key, b"")  # emptied
    assert cached_text(get, text_key) is None
    put(text_key, b"read text")
    put(seconds_key(text_key), b'{"seconds": 0.5, "by')  # a torn record: the text cannot be checked
    assert cached_text(get, text_key) is None
    put(seconds_key(text_key), b"0.25")  # a record written before digests: trusted as it is
    put(text_key, b"old text")
    assert cached_text(get, text_key) == ("old text", 0.25)


def test_a_damaged_blob_is_named_when_read_and_never_returned(file_store):
    # A content-addressed blob's key is its digest: every read checks it, so a damaged image never
    # reaches a model (nor a caption cached under the right id).
    import hashlib

    from vismem.core.cache import damaged_blobs

    data = b"\x89PNG an observed page" * 100
    key = f"blobs/sha256/{hashlib.sha256(data).hexdigest()}.png"
    file_store.put_bytes(key, data)
    assert file_store.get_bytes(key) == data and damaged_blobs(file_store, [key]) == {}
    file_store.put_bytes(key, data[:700])  # truncated
    with pytest.raises(CacheDamaged) as err:
        file_store.get_bytes(key)
    line = str(err.value)
    assert line.startswith(f"damaged blob {key}: 700 bytes") and "\n" not in line
    gone = f"blobs/sha256/{'0' * 64}.png"
    assert damaged_blobs(file_store, [key, gone]) == {key: line, gone: f"damaged blob {gone}: missing"}
    file_store.put_bytes("blobs/sha256/not-a-digest.png", b"x")  # only digest-named keys are checked
    assert file_store.get_bytes("blobs/sha256/not-a-digest.png") == b"x"


def test_store_verify_checks_blobs_and_discards_what_showed_them(tmp_path):
    import hashlib
    import io
    import subprocess
    import sys

    import polars as pl

    from vismem.core.store import Store

    store = Store.open(f"file://{tmp_path}/st")
    blobs = [b"image one" * 50, b"image two" * 50]
    keys = [f"blobs/sha256/{hashlib.sha256(b).hexdigest()}.png" for b in blobs]
    for k, b in zip(keys, blobs):
        store.put_bytes(k, b)

    def steps(*shown: str) -> bytes:
        buf = io.BytesIO()
        pl.DataFrame({"step": list(range(len(shown))), "image_key": list(shown)}).write_parquet(buf)
        return buf.getvalue()

    sessions = UnitCache(store, "trajectories/b--1")
    sessions.commit("0/0", {".parquet": steps(keys[0])}, {"n": 1})
    sessions.commit("0/1", {".parquet": steps(keys[0], keys[1])}, {"n": 2})
    sessions.commit("0/2", {".parquet": steps(keys[1])}, {"n": 1})
    UnitCache(store, "probes/b--1/0/arch--k").commit("ex/s2", {".parquet": b"rows"}, {"n": 1})
    store.put_bytes(keys[1], b"random bytes over the image")
    cmd = [sys.executable, "-m", "vismem", "store", "verify", "--store", f"file://{tmp_path}/st"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert f"damaged blob {keys[1]}: 27 bytes" in out.stdout and ", 1 damaged" in out.stdout
    assert store.exists(keys[1]) and sessions.is_done("0/1")  # without --discard nothing goes
    fixed = subprocess.run(cmd + ["--discard"], capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 1 and "with 2 session(s) that showed it and 1 probe units" in fixed.stdout
    assert not store.exists(keys[1]) and store.exists(keys[0])
    assert [sessions.is_done(u) for u in ("0/0", "0/1", "0/2")] == [True, False, False]
    assert not store.exists("probes/b--1/0/arch--k/ex/s2.done.json")
    clean = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0 and ", 0 damaged" in clean.stdout
