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
        download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA))
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


@pytest.mark.parametrize("pin", [{"sha256": "0" * 64, "size": len(DATA)}, {"size": len(DATA) + 5}])
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
            download(f"{url}/nope.bin", tmp_path / "x", size=1)
    assert list(tmp_path.glob("x*")) == []


@pytest.mark.parametrize("announce", [True, False])
def test_a_body_longer_than_the_pin_stops_at_the_pinned_size(root, tmp_path, announce):
    """Issue 38 item 3: a mirror serving an endless file wrote 4.2 GiB in 30 s; now the
    download stops at the pinned size, whether or not the server announces its length."""
    import http.server
    import threading

    written = []

    class Endless(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            if announce:
                self.send_header("Content-Length", str(10**12))
            self.end_headers()
            try:
                for _ in range(100_000):  # 6.5 GB unless the client hangs up
                    self.wfile.write(b"x" * 65536)
                    written.append(1)
            except OSError:
                pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    dest = tmp_path / "f.bin"
    try:
        with pytest.raises(DataError) as err:
            download(f"http://127.0.0.1:{srv.server_address[1]}/f.bin", dest, sha256=SHA, size=len(DATA))
    finally:
        srv.shutdown()
        srv.server_close()
    msg = str(err.value)
    assert "\n" not in msg and "more than the pinned size of 10,240 bytes; stopped there, nothing was kept" in msg
    assert list(tmp_path.glob("f.bin*")) == [] and len(written) < 2000


def test_a_stale_part_longer_than_the_pin_starts_afresh(root, tmp_path):
    dest = tmp_path / "f.bin"
    dest.with_name("f.bin.part").write_bytes(DATA + b"junk")
    with serve(root) as (url, log):
        download(f"{url}/f.bin", dest, sha256=SHA, size=len(DATA))
    assert log[0]["range"] is None and dest.read_bytes() == DATA


def test_every_fetchable_file_is_pinned_by_size():
    from vismem.pipelines.datafetch import DATASETS

    for ds in DATASETS.values():
        for f in ds.files:
            assert isinstance(f.size, int) and f.size > 0, f.path


def test_size_is_required():
    with pytest.raises(TypeError):
        download("http://127.0.0.1:9/x", "x")  # type: ignore[call-arg]
