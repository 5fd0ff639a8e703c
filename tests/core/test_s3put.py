"""The lean PutObject of the local S3 server: what it stores is what boto3 reads back (bytes,
content type, odd keys), the server checks its signatures, a dropped connection is reopened, and
anything but a loopback endpoint with static keys stays with boto3."""

from __future__ import annotations

import os

import pytest

from vismem.core.s3put import LeanPut, usable
from vismem.core.store import Store


def _store(s3_server, name, secret=None):
    return Store.open(f"s3://vismem-test/lean-{name}-{os.getpid()}", endpoint_url=s3_server.endpoint_url,
                      access_key=s3_server.access_key, secret_key=secret or s3_server.secret_key, check=False)


def test_lean_puts_read_back_through_boto3(s3_server):
    store = _store(s3_server, "rt")
    keys = {"shots/conv-26/session_1/u000.png": os.urandom(70_000), "odd key/ü+x=&$@.json": b"{}", "e": b""}
    for k, data in keys.items():
        store.put_bytes(k, data, content_type="image/png" if k.endswith(".png") else None)
    assert isinstance(store._lean, LeanPut)  # the loopback server took the lean path
    bucket, prefix = store._bucket_prefix()
    for k, data in keys.items():
        assert store.get_bytes(k) == data
    head = store._s3().head_object(Bucket=bucket, Key=f"{prefix}/shots/conv-26/session_1/u000.png")
    assert head["ContentType"] == "image/png"
    assert sorted(store.list()) == sorted(keys)
    # a kept-alive connection the server dropped is reopened
    store._lean._local.conn.sock.close()
    store.put_bytes("again", b"x")
    assert store.get_bytes("again") == b"x"


def test_a_bad_signature_is_refused_and_boto3_reports_it(s3_server):
    bad = _store(s3_server, "bad", secret="not-the-secret")
    bucket, prefix = bad._bucket_prefix()
    assert bad._lean_put().put(bucket, f"{prefix}/k", b"data") is False
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError):
        bad.put_bytes("k", b"data")  # the fallback raises what the server said
    assert not _store(s3_server, "bad").exists("k")


def test_only_loopback_http_with_static_keys_is_lean():
    assert usable("http://127.0.0.1:8333", "a", "b") and usable("http://localhost:9000/", "a", "b")
    assert not usable(None, "a", "b") and not usable("https://127.0.0.1:8333", "a", "b")
    assert not usable("http://minio.internal:9000", "a", "b") and not usable("http://127.0.0.1:8333", None, None)
    assert not usable("http://127.0.0.1:8333/prefix", "a", "b")
