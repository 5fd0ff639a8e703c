"""Resumable verified downloads against a loopback HTTP server."""

from __future__ import annotations

import hashlib

import pytest

from tests.core.rangeserver import serve
from vismem.core.download import download
from vismem.core.errors import DataError

DATA = bytes(range(256)) * 40  # 10,240 bytes
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def root(tmp_path):
    d = tmp_path / "srv"
    d.mkdir()
    (d / "f.bin").write_bytes(DATA)
    return d


def test_fresh_download_is_verified_and_atomic(root, tmp_path):
    dest = tmp_path / "out" / "f.bin"
    with serve(root) as (url, log):
        download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA))
    assert dest.read_bytes() == DATA and not dest.with_name("f.bin.part").exists()
    assert log == [{"path": "/f.bin", "range": None}]


def test_partial_download_resumes_with_a_range_request(root, tmp_path):
    dest = tmp_path / "f.bin"
    dest.with_name("f.bin.part").write_bytes(DATA[:3000])
    with serve(root) as (url, log):
        download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA))
    assert log[0]["range"] == "bytes=3000-"
    assert dest.read_bytes() == DATA


def test_server_ignoring_the_range_restarts_from_zero(root, tmp_path):
    dest = tmp_path / "f.bin"
    dest.with_name("f.bin.part").write_bytes(b"garbage")
    with serve(root, ignore_range=True) as (url, _log):
        download(f"{url}/f.bin", dest, sha256=SHA)
    assert dest.read_bytes() == DATA


def test_complete_part_answered_416_is_checked_as_is(root, tmp_path):
    dest = tmp_path / "f.bin"
    dest.with_name("f.bin.part").write_bytes(DATA)
    with serve(root) as (url, log):
        download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA))
    assert log[0]["range"] == f"bytes={len(DATA)}-" and dest.read_bytes() == DATA


def test_interrupted_download_keeps_the_part_and_the_rerun_finishes(root, tmp_path):
    dest = tmp_path / "f.bin"
    with serve(root, cut_after=4000) as (url, _log):
        with pytest.raises(DataError, match="run the same command again to resume"):
            download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA), timeout=5)
    assert not dest.exists() and dest.with_name("f.bin.part").stat().st_size == 4000
    with serve(root) as (url, log):
        download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA))
    assert log[0]["range"] == "bytes=4000-" and dest.read_bytes() == DATA


@pytest.mark.parametrize("pin", [{"sha256": "0" * 64}, {"size": 5}])
def test_mismatch_is_one_line_and_leaves_nothing(root, tmp_path, pin):
    dest = tmp_path / "f.bin"
    with serve(root) as (url, _log):
        with pytest.raises(DataError) as err:
            download(f"{url}/f.bin", dest, **pin)
    assert "\n" not in str(err.value) and "does not match its pin" in str(err.value)
    assert list(tmp_path.glob("f.bin*")) == []


def test_http_error_names_the_url(root, tmp_path):
    with serve(root) as (url, _log):
        with pytest.raises(DataError, match=r"/nope\.bin: HTTP 404"):
            download(f"{url}/nope.bin", tmp_path / "x")
    assert list(tmp_path.glob("x*")) == []
