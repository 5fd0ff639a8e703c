"""Temporary AWS keys (SSO, assumed roles): the session token travels with the key through every S3
client the store builds -- boto3, the lean PUT, pyarrow and Polars.

The local S3 server (weed) checks a session token against the temporary keys it issued itself and
has none for ours, so a request that carries the token is refused there while the very same request
without it succeeds: for each client path that difference proves the token went on the wire, next
to the client's configured credentials holding it."""

from __future__ import annotations

import os

import polars as pl
import pytest

from vismem.core.errors import StoreError
from vismem.core.store import Store

TOKEN = "FwoGZXIvYXdzEXAMPLEsessiontoken0123456789"


def _store(s3_server, name, **kw):
    return Store.open(f"s3://vismem-test/tok-{name}-{os.getpid()}", endpoint_url=s3_server.endpoint_url,
                      access_key=s3_server.access_key, secret_key=s3_server.secret_key, **kw)


@pytest.fixture
def pair(s3_server, request):
    """``(plain, with_token)``: one prefix holding ``t.parquet``, opened without and with a token."""
    plain = _store(s3_server, request.node.name)
    plain.write_table("t.parquet", pl.DataFrame({"a": [1, 2, 3]}))
    return plain, _store(s3_server, request.node.name, session_token=TOKEN, check=False)


def _refused(call) -> bool:
    try:
        call()
    except Exception as err:  # boto3 ClientError, pyarrow OSError, polars ComputeError
        text = str(err)
        assert "403" in text or "ACCESS_DENIED" in text or "InvalidAccessKeyId" in text, text
        return True
    return False


def test_boto3_sends_the_token(pair):
    plain, tok = pair
    sent: list = []
    client = tok._s3()
    assert client._request_signer._credentials.token == TOKEN
    client.meta.events.register("before-send.s3", lambda request, **_: sent.append(
        request.headers.get("X-Amz-Security-Token")))
    assert plain.get_bytes("t.parquet")[:4] == b"PAR1"
    assert _refused(lambda: tok.get_bytes("t.parquet"))
    assert sent and {s.decode() if isinstance(s, bytes) else s for s in sent} == {TOKEN}
    assert tok.child("x").spec.session_token == TOKEN  # a stage's prefix keeps it
    assert plain._s3() is not client  # no client is shared across tokens


def test_check_bucket_sends_it(s3_server):
    with pytest.raises(StoreError, match="rejected"):
        _store(s3_server, "check", session_token=TOKEN)


def test_lean_put_signs_the_token(pair):
    plain, tok = pair
    _path, hdrs = tok._lean_put().headers("b", "k", b"x", None)
    assert hdrs["x-amz-security-token"] == TOKEN and "x-amz-security-token" in hdrs["authorization"]
    assert plain._lean_put().put(*plain._s3_key("lean.bin"), b"x") is True
    assert tok._lean_put().put(*tok._s3_key("lean.bin"), b"x") is False  # boto3 then redoes (and fails)


def test_pyarrow_sends_the_token(pair):
    plain, tok = pair
    assert tok.arrow_filesystem().__reduce__()[1][0]["session_token"] == TOKEN
    path = plain.arrow_path("t.parquet")
    with plain.arrow_filesystem().open_input_file(path) as fh:
        assert fh.read(4) == b"PAR1"
    assert _refused(lambda: tok.arrow_filesystem().open_input_file(path).read(4))


def test_polars_sends_the_token(pair):
    plain, tok = pair
    opts = tok.polars_storage_options()
    assert opts["aws_session_token"] == TOKEN and opts["aws_access_key_id"] == plain.spec.access_key
    url = plain.url("t.parquet")
    assert pl.scan_parquet(url, storage_options=plain.polars_storage_options()).collect()["a"].to_list() == [1, 2, 3]
    assert _refused(lambda: pl.scan_parquet(url, storage_options=opts).collect())


def test_the_environment_token_goes_with_the_environment_key_only(s3_server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    env_store = Store.open("s3://vismem-test/tok-env", endpoint_url=s3_server.endpoint_url, check=False)
    assert env_store.spec.session_token == TOKEN and env_store.spec.access_key == "ASIAEXAMPLE"
    # keys given explicitly are not paired with another key's token
    assert _store(s3_server, "explicit").spec.session_token is None


def test_runner_hands_workers_the_token(monkeypatch, tmp_path):
    from vismem.pipelines import runner
    from vismem.pipelines.config import load_config

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setattr("vismem.core.s3client.check_bucket", lambda *a, **k: None)  # no bucket to reach
    cfg = load_config(overrides={"store": {"uri": "s3://vismem-test/run"}, "runs_dir": str(tmp_path)})
    with runner.open_store(cfg) as (_store_, env):
        assert env["AWS_SESSION_TOKEN"] == TOKEN
