"""S3 clients for :class:`vismem.core.store.Store`: one per process and endpoint, and the bucket check.

Clients (boto3, and the lean PUT of a loopback server, :mod:`vismem.core.s3put`) are shared by every
Store of a process with the same endpoint and keys: a Store is unpickled in each Ray task, and
building a boto3 client costs 7-130 ms of CPU and fresh connections each time. Both kinds are
thread-safe. The process id is part of the key, so a forked child never shares a parent's sockets.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from vismem.core.errors import StoreError
from vismem.core.secrets import strip_userinfo

_SHARED: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _key(spec: Any, *kind: Any) -> tuple:
    return (os.getpid(), *kind, spec.endpoint_url, spec.region, spec.access_key, spec.secret_key,
            spec.session_token)


def _shared(key: tuple, make: Any) -> Any:
    with _LOCK:
        if key not in _SHARED:
            _SHARED[key] = make()
        return _SHARED[key]


def _boto3(spec: Any, **config: Any) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=spec.endpoint_url, region_name=spec.region,
                        aws_access_key_id=spec.access_key, aws_secret_access_key=spec.secret_key,
                        aws_session_token=spec.session_token, config=Config(**config))


def client(spec: Any) -> Any:
    """This process's boto3 S3 client for ``spec``'s endpoint and keys."""
    return _shared(_key(spec, "boto3"), lambda: _boto3(
        spec, retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=3, read_timeout=60,
        max_pool_connections=32))


def lean_put(spec: Any) -> Any:
    """This process's lean PUT for ``spec`` (a :class:`vismem.core.s3put.LeanPut`), or False where boto3
    must do the puts (not a plain-HTTP loopback endpoint with static keys, or ``VISMEM_S3_LEAN=0``,
    the benchmarks' boto3 peer)."""
    from vismem.core import s3put

    on = os.environ.get("VISMEM_S3_LEAN", "1") != "0"

    def make() -> Any:
        usable = on and s3put.usable(spec.endpoint_url, spec.access_key, spec.secret_key)
        return s3put.LeanPut(spec.endpoint_url, spec.region, spec.access_key, spec.secret_key,
                                session_token=spec.session_token) if usable else False

    return _shared(_key(spec, "lean", on), make)


def check_bucket(spec: Any, bucket: str, *, create: bool = True) -> None:
    """Reach the endpoint and the bucket (creating it when missing, with ``create``), or raise
    one clear :class:`StoreError` saying what is wrong."""
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

    # The endpoint's user-info (http://user:pass@host) is a secret: never shown.
    where = strip_userinfo(spec.endpoint_url) if spec.endpoint_url else "AWS"
    try:
        probe = _boto3(spec, retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5)
    except ValueError as err:  # botocore refuses a malformed endpoint URL here
        raise StoreError(f"S3 endpoint {where} is not a valid URL: {strip_userinfo(str(err))}") from None
    try:
        probe.head_bucket(Bucket=bucket)
    except EndpointConnectionError:
        raise StoreError(f"S3 endpoint {where} is unreachable (store {spec.uri})") from None
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchBucket", "NotFound"):
            if not create:
                raise StoreError(f"bucket {bucket!r} does not exist at {where} (store {spec.uri})") from None
            try:
                probe.create_bucket(Bucket=bucket)
                return
            except ClientError as err2:
                raise StoreError(f"bucket {bucket!r} does not exist at {where} and cannot be created: "
                                 f"{strip_userinfo(str(err2))}") from None
        if code in ("403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"):
            raise StoreError(f"S3 credentials rejected by {where} for bucket {bucket!r} ({code})") from None
        raise StoreError(f"S3 error at {where} for bucket {bucket!r}: {strip_userinfo(str(err))}") from None
    except NoCredentialsError:
        raise StoreError(f"missing credentials for store {spec.uri}: set AWS_ACCESS_KEY_ID and "
                         "AWS_SECRET_ACCESS_KEY, or run where boto3's default chain finds them "
                         "(instance profile, IRSA)") from None
    except BotoCoreError as err:
        raise StoreError(f"S3 endpoint {where} is unusable: {strip_userinfo(str(err))}") from None


__all__ = ["check_bucket", "client", "lean_put"]
