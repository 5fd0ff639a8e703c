"""The object store on file:// and on a real weed S3 server: blobs, tables, atomicity, listing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import polars as pl
import pytest

from vismem.core.errors import StoreError
from vismem.core.store import Store


@pytest.fixture(params=["file", "s3"])
def store(request, file_store, s3_server):
    if request.param == "file":
        return file_store
    return Store.open(f"s3://vismem-test/store-{request.node.callspec.id}-{os.getpid()}-{request.node.name[:20]}",
                      endpoint_url=s3_server.endpoint_url, access_key=s3_server.access_key,
                      secret_key=s3_server.secret_key)


def test_blob_round_trip_listing_and_exists(store):
    assert not store.exists("a/b/c.bin")
    store.put_bytes("a/b/c.bin", b"\x00\x01payload")
    store.put_json("a/meta.json", {"k": [1, 2]})
    store.put_bytes("z.txt", b"z")
    assert store.exists("a/b/c.bin")
    assert store.get_bytes("a/b/c.bin") == b"\x00\x01payload"
    assert store.get_json("a/meta.json") == {"k": [1, 2]}
    assert store.list("a") == ["a/b/c.bin", "a/meta.json"]
    assert store.list() == ["a/b/c.bin", "a/meta.json", "z.txt"]
    with pytest.raises(FileNotFoundError, match="nope"):
        store.get_bytes("a/nope")
    store.delete("z.txt")
    assert not store.exists("z.txt")


def test_keys_cannot_escape_the_root(store):
    for key in ("../x", "a/../../x", "", "a//b"):
        with pytest.raises(StoreError):
            store.put_bytes(key, b"x")


def test_atomic_overwrite_readers_never_see_torn_objects(store):
    big_a, big_b = b"A" * 3_000_000, b"B" * 3_000_000
    store.put_bytes("obj", big_a)
    seen: set[bytes] = set()
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            data = store.get_bytes("obj")
            seen.add(data[:1] + data[-1:] + str(len(data)).encode())

    t = threading.Thread(target=reader)
    t.start()
    for i in range(6):
        store.put_bytes("obj", big_b if i % 2 == 0 else big_a)
    stop.set()
    t.join()
    assert seen <= {b"AA3000000", b"BB3000000"}
    if not store.is_s3:  # no temp files left behind
        assert store.list() == ["obj"]


def test_table_round_trip_with_schema_version(store):
    df = pl.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    store.write_table("t/one.parquet", df, schema_version=3)
    back = store.read_table("t/one.parquet")
    assert back["x"].to_list() == [1, 2, 3]
    assert back["schema_version"].unique().to_list() == [3]


def test_every_table_reader_of_the_store_is_bounded(file_store, monkeypatch):
    """Issue 38: the store reads a table only through read_table (bounded, checked); the lazy
    Polars scan it once had read whatever Polars asked for, past any bound, and is gone."""
    from vismem.core.errors import TooLarge

    readers = sorted(m for m in dir(Store) if not m.startswith("_") and ("table" in m or "scan" in m))
    assert readers == ["read_table", "write_table"]
    file_store.write_table("t/one.parquet", pl.DataFrame({"x": [1, 2, 3]}))
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "100")
    with pytest.raises(TooLarge):
        file_store.read_table("t")


def test_ray_data_writes_the_store_reads(store, ray_local):
    import ray

    ds = ray.data.range(1000, override_num_blocks=4).map(lambda r: {"id": r["id"], "sq": r["id"] ** 2})
    ds.write_parquet(store.arrow_path("ray_out"), filesystem=store.arrow_filesystem())
    parts = [k for k in store.list("ray_out") if k.endswith(".parquet")]
    assert len(parts) >= 1
    total = store.read_table("ray_out").select(pl.len(), pl.col("sq").sum())
    assert total.row(0) == (1000, sum(i * i for i in range(1000)))
    # and back through Ray Data
    assert ray.data.read_parquet(store.arrow_path("ray_out"), filesystem=store.arrow_filesystem()).count() == 1000


def test_resumption_check_skips_finished_shards(store):
    done = []

    def run_shards(n):
        for i in range(n):
            key = f"shards/{i:03d}.done"
            if store.exists(key):
                continue
            done.append(i)
            store.put_bytes(key, b"ok")

    run_shards(3)
    run_shards(5)
    assert done == [0, 1, 2, 3, 4]


def test_blob_references_read_byte_ranges(store):
    from vismem.core.blobref import make_ref, parse_ref

    parts = [b"\x89PNG first", b"", b"second shot", bytes(range(256)) * 40]
    store.put_bytes("pack/s1.pack", b"".join(parts))
    refs, off = [], 0
    for p in parts:
        refs.append(make_ref("pack/s1.pack", off, len(p)))
        off += len(p)
    assert [store.get_bytes(r) for r in refs] == parts
    assert all(store.exists(r) for r in refs) and not store.exists(make_ref("pack/none.pack", 0, 3))
    assert parse_ref(refs[2]) == ("pack/s1.pack", len(parts[0]), len(parts[2]))
    assert parse_ref("plain/key#not-a-range") is None  # only #<offset>+<length> is a reference
    with pytest.raises(FileNotFoundError, match="none.pack"):
        store.get_bytes(make_ref("pack/none.pack", 0, 3))
    with pytest.raises(StoreError, match="holds 4 of the 10 bytes"):  # a range past the end is an error
        store.get_bytes(make_ref("pack/s1.pack", off - 4, 10))
    with pytest.raises(ValueError):
        make_ref("a#b", 0, 1)


def test_store_is_picklable_for_workers(store):
    import pickle

    store.put_bytes("p.bin", b"1")
    clone = pickle.loads(pickle.dumps(store))
    assert clone.get_bytes("p.bin") == b"1"


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("uri", ["ftp://x/y", "s3://", "s3://A_B", "file://relative/path", "nonsense"])
def test_invalid_uri(uri, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    with pytest.raises(StoreError, match="invalid store URI"):
        Store.open(uri)


def test_unreachable_endpoint():
    with pytest.raises(StoreError, match="unreachable"):
        Store.open("s3://vismem/x", endpoint_url="http://127.0.0.1:1", access_key="k", secret_key="s")


def test_missing_and_wrong_credentials(monkeypatch, s3_server):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(StoreError, match="missing credentials"):
        Store.open("s3://vismem/x", endpoint_url=s3_server.endpoint_url)
    with pytest.raises(StoreError, match="rejected"):
        Store.open("s3://vismem/x", endpoint_url=s3_server.endpoint_url, access_key="wrong", secret_key="wrong")


def _cli(args, tmp_path, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=full_env, timeout=120)


@pytest.mark.parametrize(
    "store_uri,env,needle",
    [
        ("gopher://x", {}, "invalid store URI"),
        ("s3://vismem/x", {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, "missing credentials"),
        ("s3://vismem/x", {"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "k",
                           "AWS_SECRET_ACCESS_KEY": "s"}, "unreachable"),
    ],
)
def test_cli_bad_store_one_error_nonzero_nothing_written(tmp_path, store_uri, env, needle):
    r = _cli(["run", "--store", store_uri, "--set", f"runs_dir={tmp_path}/runs"], tmp_path, env)
    assert r.returncode == 3, r.stderr
    assert needle in r.stderr and r.stderr.strip().count("\n") == 0
    assert not (tmp_path / "runs").exists()


def test_read_many_reads_each_pack_once_in_order(store):
    from vismem.core.blobref import make_ref, read_many

    store.put_bytes("p/a.pack", b"AAAAbbbCC")
    store.put_bytes("p/plain.bin", b"plain")
    store.put_bytes("p/b.pack", b"xyz")
    keys = [make_ref("p/a.pack", 4, 3), "p/plain.bin", make_ref("p/b.pack", 1, 2), make_ref("p/a.pack", 0, 4),
            make_ref("p/a.pack", 7, 2)]
    calls = []

    def get(k):
        calls.append(k)
        return store.get_bytes(k)

    assert read_many(get, keys) == [b"bbb", b"plain", b"yz", b"AAAA", b"CC"]
    assert sorted(calls) == sorted([make_ref("p/a.pack", 0, 9), "p/plain.bin", make_ref("p/b.pack", 1, 2)])


def test_a_full_disk_is_one_error_naming_the_object_and_leaves_no_temp_file(file_store, monkeypatch):
    import errno

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)  # the call that writes a local object's bytes
    from vismem.core.errors import NoSpace

    with pytest.raises(NoSpace, match=r"^no space left on device writing file://\S+/runs/r/manifest\.json$"):
        file_store.put_json("runs/r/manifest.json", {"a": 1})
    monkeypatch.undo()
    assert file_store.list() == [] and not any(p.name.endswith(".tmp") for p in file_store._local_root().rglob("*"))


def test_an_s3_endpoint_that_stopped_answering_is_store_unreachable(s3_server):
    from vismem.core.errors import StoreUnreachable
    from vismem.core.ports import free_ports

    (port,) = free_ports(1)  # nothing listens there: what a dead local server looks like
    dead = Store.open("s3://vismem-test/gone", endpoint_url=f"http://127.0.0.1:{port}", check=False,
                      access_key=s3_server.access_key, secret_key=s3_server.secret_key)
    for op in (lambda: dead.put_bytes("k/a.bin", b"x"), lambda: dead.get_bytes("k/a.bin"),
               lambda: dead.exists("k/a.bin"), lambda: dead.list("k")):
        with pytest.raises(StoreUnreachable, match=rf"^the store's S3 endpoint http://127.0.0.1:{port} stopped "
                                                   r"answering \(EndpointConnectionError on s3://vismem-test/gone/k"):
            op()


def test_user_error_recovers_a_workers_store_error_and_a_raw_full_disk():
    import errno

    from vismem.core.errors import ConfigError, NoSpace, user_error

    ray_text = ("ray::MapWorker(MapBatches(EncodeWorker)).submit() (pid=1)\n  File \"x.py\", line 3, in put\n"
                "vismem.core.errors.NoSpace: no space left on device writing file:///s/trajectories/a.parquet\n")
    found = user_error(RuntimeError(ray_text))
    assert isinstance(found, NoSpace) and str(found) == "no space left on device writing file:///s/trajectories/a.parquet"
    raw = user_error(RuntimeError("boom\nOSError: [Errno 28] No space left on device: '/tmp/ray/spill/x'\n"))
    assert isinstance(raw, NoSpace) and str(raw) == "no space left on device writing /tmp/ray/spill/x"
    chained = RuntimeError("wrapped")
    chained.__cause__ = OSError(errno.ENOSPC, "No space left on device", "/runs/r/run.log")
    assert str(user_error(chained)) == "no space left on device writing /runs/r/run.log"
    cfg = ConfigError("bad")
    assert user_error(cfg) is cfg and user_error(ValueError("x")) is None


def test_an_s3_server_out_of_disk_is_no_space_and_other_replies_stay_as_they_are():
    from botocore.exceptions import ClientError

    from vismem.core.errors import NoSpace
    from vismem.core.storefault import store_fault

    s3 = Store.open("s3://vismem-test/p", endpoint_url="http://127.0.0.1:9", access_key="a", secret_key="b",
                    check=False)
    full = ClientError({"Error": {"Code": "InternalError", "Message": "write data: No space left on device"}},
                       "PutObject")
    found = store_fault(s3, full, "k/x.bin")
    assert isinstance(found, NoSpace) and str(found) == ("no space left on device writing s3://vismem-test/p/k/x.bin "
                                                         "(the store's S3 server http://127.0.0.1:9 is full)")
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "PutObject")
    assert store_fault(s3, denied, "k/x.bin") is None


def test_a_local_s3_server_out_of_disk_answering_a_bare_internal_error_is_no_space(tmp_path, monkeypatch):
    """weed out of disk replies 500 "We encountered an internal error, please try again." (the
    cause is only in its log): with its data dir (almost) full that is NoSpace naming the object
    and the dir; the same reply with room left, a refusal or a miss stay as they are."""
    import shutil
    from collections import namedtuple

    from botocore.exceptions import ClientError

    from vismem.core import storefault
    from vismem.core.errors import NoSpace
    from vismem.core.storefault import store_fault

    s3 = Store.open("s3://vismem-test/p", endpoint_url="http://127.0.0.1:9", access_key="a", secret_key="b",
                    server_dir=tmp_path, check=False)
    assert s3.child("sub").spec.server_dir == str(tmp_path)  # the worker's view of a sub-store keeps it

    def reply(code, status, message):
        return ClientError({"Error": {"Code": code, "Message": message},
                            "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")

    weed_full = reply("InternalError", 500, "We encountered an internal error, please try again.")
    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    free = {"bytes": 4096}
    monkeypatch.setattr(storefault.shutil, "disk_usage",
                        lambda p: usage(1 << 30, (1 << 30) - free["bytes"], free["bytes"]) if str(p) == str(tmp_path)
                        else real(p))
    found = store_fault(s3, weed_full, "k/x.bin")
    assert isinstance(found, NoSpace) and str(found) == (
        "no space left on device writing s3://vismem-test/p/k/x.bin (the disk of the store's S3 server "
        f"http://127.0.0.1:9 is full: {tmp_path})")
    assert store_fault(s3, reply("NoSuchKey", 404, "The specified key does not exist."), "k/x.bin") is None
    assert store_fault(s3, reply("AccessDenied", 403, "Access Denied"), "k/x.bin") is None
    free["bytes"] = 10 << 30  # room left: some other server error, not a full disk
    assert store_fault(s3, weed_full, "k/x.bin") is None
    elsewhere = Store.open("s3://vismem-test/p", endpoint_url="http://127.0.0.1:9", access_key="a", secret_key="b",
                           check=False)  # no local server dir (a remote S3): nothing to measure
    free["bytes"] = 0
    assert store_fault(elsewhere, weed_full, "k/x.bin") is None


def test_a_json_object_past_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """Issue 38: store objects are inputs too; a JSON object past MAX_JSON_BYTES is one line."""
    from vismem.core import store as store_mod
    from vismem.core.errors import StoreError
    from vismem.core.store import Store

    st = Store.open(f"file://{tmp_path}/s")
    st.put_json("m.json", {"rows": list(range(1000))})
    assert st.get_json("m.json")["rows"][-1] == 999
    monkeypatch.setattr(store_mod, "MAX_JSON_BYTES", 100)
    with pytest.raises(StoreError, match=r"m\.json: \d[\d,]* bytes, more than the 100 a JSON object of the store may have"):
        st.get_json("m.json")
