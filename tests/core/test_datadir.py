"""Reading an S3 data_dir creates nothing: a missing bucket is one error, not a new bucket."""

from __future__ import annotations

import pytest

from vismem.core import datadir
from vismem.core.errors import ConfigError


def test_a_missing_data_bucket_is_one_error_and_is_not_created(s3_server, tmp_path, monkeypatch):
    import boto3

    monkeypatch.setattr(datadir, "_DONE", {})
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VISMEM_DATA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="bucket 'no-such-data' does not exist"):
        datadir.materialise("s3://no-such-data/data")
    s3 = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name="us-east-1",
                      aws_access_key_id=s3_server.access_key, aws_secret_access_key=s3_server.secret_key)
    assert "no-such-data" not in {b["Name"] for b in s3.list_buckets()["Buckets"]}


# -- issue 38: an s3:// data_dir is bounded, checked from its listing, copied whole or not at all --

@pytest.fixture
def data_bucket(s3_server, s3_store, tmp_path, monkeypatch):
    """``(uri, store)`` of an empty data_dir prefix on the test S3 server, its local copy under tmp_path."""
    monkeypatch.setattr(datadir, "_DONE", {})
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VISMEM_DATA_CACHE", str(tmp_path / "cache"))
    return s3_store.uri + "/data", s3_store.child("data")


def _fetches(monkeypatch) -> list[str]:
    """Keys ``_fetch`` is asked to copy (the bounds are checked before the first)."""
    seen: list[str] = []
    real = datadir._fetch
    monkeypatch.setattr(datadir, "_fetch", lambda store, shown, root, obj: (seen.append(obj.key),
                                                                             real(store, shown, root, obj)))
    return seen


@pytest.mark.parametrize("var, value, message", [
    ("VISMEM_DATA_DIR_MAX_OBJECTS", "2", "{d} holds at least 3 objects, more than the 2 objects an s3:// data_dir "
     "may have ($VISMEM_DATA_DIR_MAX_OBJECTS sets the bound); nothing was copied"),
    ("VISMEM_DATA_DIR_MAX_OBJECT_BYTES", "1000", "{d}: object 'b/big.json' has 4,000 bytes, more than the 1,000 bytes one "
     "object of an s3:// data_dir may have ($VISMEM_DATA_DIR_MAX_OBJECT_BYTES sets the bound); nothing was copied"),
    ("VISMEM_DATA_DIR_MAX_BYTES", "4100", "{d} holds 3 objects of 4,200 bytes, more than the 4,100 bytes an s3:// data_dir "
     "may have ($VISMEM_DATA_DIR_MAX_BYTES sets the bound); nothing was copied"),
])
def test_a_data_dir_past_a_bound_is_one_line_and_nothing_is_copied(data_bucket, monkeypatch, var, value, message):
    uri, store = data_bucket
    for key, size in (("a.json", 100), ("b/big.json", 4000), ("c.json", 100)):
        store.put_bytes(key, b"x" * size)
    seen = _fetches(monkeypatch)
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as err:
        datadir.materialise(uri)
    assert str(err.value) == message.format(d=f"data_dir {uri!r}")
    assert err.value.exit_code == 2 and seen == [] and not datadir.cache_dir(uri).exists()
    monkeypatch.delenv(var)  # within the defaults the same data_dir is copied whole
    local = datadir.materialise(uri)
    assert sorted(seen) == ["a.json", "b/big.json", "c.json"] and (local / "b/big.json").read_bytes() == b"x" * 4000


def test_a_bad_bound_override_is_one_line(data_bucket, monkeypatch):
    uri, store = data_bucket
    store.put_bytes("a.json", b"{}")
    monkeypatch.setenv("VISMEM_DATA_DIR_MAX_BYTES", "lots")
    with pytest.raises(ConfigError, match=r"VISMEM_DATA_DIR_MAX_BYTES='lots' is not an integer \(allowed: 1 to"):
        datadir.materialise(uri)


@pytest.mark.parametrize("keys, why", [
    (["x/../../escape.json"], "has an empty, '.' or '..' part"),
    (["a//b.json"], "has an empty, '.' or '..' part"),
    (["d/.a.json.etag"], "names a hidden .etag or .part file"),
    (["n" * 201 + ".json"], "has a part longer than 200 bytes"),
    (["x", "x/y.json"], "is also the folder of another object"),
])
def test_a_key_that_is_no_file_name_of_the_copy_is_refused(keys, why):
    objects = [datadir._Object(k, "etag", 2) for k in keys]
    with pytest.raises(ConfigError, match=f"^data_dir 's3://b/d': object key .* {why}.*; nothing was copied$"):
        datadir._check("s3://b/d", objects)


def test_a_key_the_copy_keeps_for_itself_is_refused_before_any_copy(data_bucket, monkeypatch):
    uri, store = data_bucket
    store.put_bytes("a.json", b"{}")
    store.put_bytes("d/.a.json.etag", b"forged")  # would overwrite the ETag the copy records for d/a.json
    seen = _fetches(monkeypatch)
    with pytest.raises(ConfigError, match="object key 'd/.a.json.etag' names a hidden .etag or .part file"):
        datadir.materialise(uri)
    assert seen == [] and not datadir.cache_dir(uri).exists()


def test_too_little_room_for_the_copy_is_one_line_before_any_copy(data_bucket, monkeypatch):
    from collections import namedtuple

    uri, store = data_bucket
    store.put_bytes("a.json", b"x" * 5000)
    seen = _fetches(monkeypatch)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(datadir.shutil, "disk_usage", lambda p: usage(10_000, 9_000, 1_000))
    with pytest.raises(ConfigError, match=r"5,000 bytes to copy, 1,000 free under .*VISMEM_DATA_CACHE"):
        datadir.materialise(uri)
    assert seen == []


def test_an_object_that_changes_while_it_is_copied_leaves_nothing_half_written(data_bucket, monkeypatch):
    uri, store = data_bucket
    store.put_bytes("a.json", b"x" * 1000)
    real = datadir._listing

    def stale(uri_, shown, most):  # the listing said 100 bytes; the object holds 1,000
        st, objs = real(uri_, shown, most)
        return st, [o._replace(size=100) for o in objs]

    monkeypatch.setattr(datadir, "_listing", stale)
    with pytest.raises(ConfigError, match=r"object 'a.json' changed while it was copied \(more than 100 bytes, "
                                          r"listed 100\); run again"):
        datadir.materialise(uri)
    root = datadir.cache_dir(uri)
    assert not (root / "a.json").exists() and not [p for p in root.rglob("*") if p.is_file()]


def test_objects_are_streamed_to_disk_not_read_whole(data_bucket, monkeypatch):
    uri, store = data_bucket
    payload = bytes(range(256)) * 1000  # 256,000 bytes, read in 64 KiB chunks
    store.put_bytes("big.bin", payload)
    monkeypatch.setattr(datadir, "_CHUNK", 64 << 10)
    monkeypatch.setattr(type(store), "get_bytes", lambda *a, **k: pytest.fail("read whole into memory"))
    local = datadir.materialise(uri)
    assert (local / "big.bin").read_bytes() == payload and (local / ".big.bin.etag").read_text()


def test_the_local_copy_follows_the_listing_and_never_reaches_outside_its_folder(data_bucket, tmp_path, monkeypatch):
    """Issue 38: a file of the local copy the bucket no longer lists (an object removed, a
    temporary file of a killed copy) is deleted when the data_dir is copied again; only the copy's
    own folder is touched, and a link in it is removed, never followed."""
    uri, store = data_bucket
    for key in ("a.json", "b/c.json", "d.json", "x/y.json"):
        store.put_bytes(key, key.encode())
    root = datadir.materialise(uri)
    assert (root / "b/c.json").read_bytes() == b"b/c.json"
    for key in ("b/c.json", "d.json", "x/y.json"):
        store.delete(key)
    store.put_bytes("x", b"x is a file now")  # where the copy still has a folder
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the copy's")
    (root / "link-dir").symlink_to(outside, target_is_directory=True)
    (root / "link-file").symlink_to(outside / "keep.txt")
    (root / ".a.json.k2j4.part").write_bytes(b"half")  # a copy killed mid-way
    (root / "b/.c.json.q1.part").write_bytes(b"half")
    monkeypatch.setattr(datadir, "_DONE", {})
    seen = _fetches(monkeypatch)
    assert datadir.materialise(uri) == root
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    assert files == [".a.json.etag", ".x.etag", "a.json", "x"] and seen == ["x"]
    assert (root / "x").read_bytes() == b"x is a file now"
    assert (outside / "keep.txt").read_text() == "not the copy's"  # the links' targets are untouched
    assert sorted(p.name for p in root.parent.iterdir()) == [f".{root.name}.lock", root.name]
