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
