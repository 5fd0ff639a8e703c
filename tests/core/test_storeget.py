"""Issue 38: ``vismem store get`` streams an object of any size to its destination.

Memory stays at about one chunk whatever the object's size; the destination appears only whole
(a temporary file beside it, renamed); a content-addressed blob is checked against its key's
digest as it streams, and a damaged one is one line, a non-zero exit and no file.
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc

import pytest

from vismem.core import storeget
from vismem.pipelines.cli import main


@pytest.fixture(params=["file", "s3"])
def store(request, monkeypatch):
    if request.param == "s3":
        for k, v in request.getfixturevalue("s3_server").env().items():
            monkeypatch.setenv(k, v)
        return request.getfixturevalue("s3_store")
    return request.getfixturevalue("file_store")


def _get(store, *args: str) -> int:
    return main(["store", "get", *args, "--store", store.uri])


def _left(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_large_object_is_streamed_in_chunks_not_read_whole(store, tmp_path, monkeypatch):
    payload = os.urandom(1 << 20) * 24  # 24 MiB
    store.put_bytes("data/big.bin", payload)
    store.put_bytes("data/small.bin", b"warm")  # the first command loads the clients and modules
    assert _get(store, "data/small.bin", str(tmp_path / "small.bin")) == 0
    monkeypatch.setattr(storeget, "CHUNK", 256 << 10)
    tracemalloc.start()
    try:
        assert _get(store, "data/big.bin", str(tmp_path / "out" / "big.bin")) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "out" / "big.bin").read_bytes() == payload
    assert _left(tmp_path / "out") == ["big.bin"]  # no temporary file beside it
    assert peak < 8 << 20, f"{peak:,} bytes allocated at the peak for a 24 MiB object"


def test_a_blob_is_checked_as_it_streams(store, tmp_path, capsys, monkeypatch):
    tmp_path = tmp_path / "out"  # (beside the file store's folder)
    tmp_path.mkdir()
    good = os.urandom(300_000)
    key = f"blobs/sha256/{hashlib.sha256(good).hexdigest()}.png"
    store.put_bytes(key, good)
    monkeypatch.setattr(storeget, "CHUNK", 4096)  # the digest spans many chunks
    assert _get(store, key, str(tmp_path / "good.png")) == 0
    assert (tmp_path / "good.png").read_bytes() == good
    bad = f"blobs/sha256/{'0' * 64}.png"
    store.put_bytes(bad, good)  # bytes that are not the digest their key names
    dest = tmp_path / "bad.png"
    dest.write_bytes(b"what was there before")
    capsys.readouterr()
    assert _get(store, bad, str(dest)) == 4
    err = capsys.readouterr().err
    assert err == (f"vismem: error: damaged blob {bad}: 300000 bytes, sha256 {hashlib.sha256(good).hexdigest()[:12]}, "
                   f"its key names 000000000000; nothing was written to {dest}\n")
    assert dest.read_bytes() == b"what was there before" and _left(tmp_path) == ["bad.png", "good.png"]
    (tmp_path / "new").mkdir()
    assert _get(store, bad, str(tmp_path / "new")) == 4 and _left(tmp_path / "new") == []
    capsys.readouterr()
    assert _get(store, bad, "-") == 4  # to stdout: checked before the first byte is printed
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"vismem: error: damaged blob {bad}: ") and out.err.count("\n") == 1


def test_a_read_that_fails_midway_leaves_nothing(file_store, tmp_path, capsys, monkeypatch):
    file_store.put_bytes("data/big.bin", b"x" * 100_000)
    dest = tmp_path / "big.bin"
    dest.write_bytes(b"old")
    monkeypatch.setattr(storeget, "CHUNK", 10_000)
    real_open = open

    class Cut:
        def __init__(self, fh):
            self.fh, self.reads = fh, 0

        def read(self, n):
            self.reads += 1
            if self.reads > 3:
                raise ConnectionResetError("the connection went away")
            return self.fh.read(n)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def close(self):
            self.fh.close()

        def seek(self, n):
            self.fh.seek(n)

        def fileno(self):
            return self.fh.fileno()

    monkeypatch.setattr("builtins.open", lambda p, mode="r", *a, **k: Cut(real_open(p, mode, *a, **k))
                        if str(p).endswith("data/big.bin") else real_open(p, mode, *a, **k))
    assert _get(file_store, "data/big.bin", str(dest)) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"vismem: error: {file_store.url('data/big.bin')} cannot be read: ConnectionResetError")
    assert err.count("\n") == 1 and dest.read_bytes() == b"old" and _left(tmp_path) == ["big.bin", "store"]


def test_a_prefix_is_copied_object_by_object(store, tmp_path, monkeypatch):
    for i in range(3):
        store.put_bytes(f"rep/{i}/f.bin", bytes([i]) * 50_000)
    monkeypatch.setattr(storeget, "CHUNK", 8192)
    assert _get(store, "rep/", str(tmp_path / "rep")) == 0
    assert [(tmp_path / "rep" / str(i) / "f.bin").read_bytes() for i in range(3)] == [bytes([i]) * 50_000
                                                                                      for i in range(3)]
