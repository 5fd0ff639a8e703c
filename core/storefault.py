"""Store failures as one-line errors (used by :class:`vismem.core.store.Store`).

A full disk is ``NoSpace`` naming the object being written; an S3 endpoint that stopped
answering (the local server died, the network went) is ``StoreUnreachable``. Workers pass these
on instead of recording a failed unit (the unit is not at fault), and the CLI prints them in one
line with the store's exit code.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from typing import Any

from vismem.core.errors import NoSpace, StoreError, StoreUnreachable, no_space
from vismem.core.secrets import strip_userinfo


def store_fault(store: Any, err: BaseException, key: str) -> StoreError | None:
    """The one-line error ``err`` stands for on ``store`` (a full disk, an endpoint gone), else None."""
    try:
        name = store.url(key) if key else store.uri
    except StoreError:
        name = f"{store.uri}/{key}"
    full = no_space(err, name)
    if full is not None or not store.is_s3:
        return full
    from botocore.exceptions import ClientError, ConnectionClosedError, ConnectionError as BotoConnectionError

    where = strip_userinfo(store.spec.endpoint_url) if store.spec.endpoint_url else "AWS"
    if isinstance(err, (BotoConnectionError, ConnectionClosedError)):
        return StoreUnreachable(f"the store's S3 endpoint {where} stopped answering ({type(err).__name__} on {name})")
    if isinstance(err, ClientError) and _FULL_REPLY.search(str(err)):
        # An S3 server out of disk that says so in its reply.
        return NoSpace(f"no space left on device writing {name} (the store's S3 server {where} is full)")
    if isinstance(err, ClientError) and _server_error(err) and disk_full(store.spec.server_dir):
        # weed out of disk answers a bare 500 "We encountered an internal error" (the cause is only
        # in its log): its data dir's free space tells a full disk from any other server error.
        return NoSpace(f"no space left on device writing {name} (the disk of the store's S3 server {where} "
                       f"is full: {store.spec.server_dir})")
    return None


#: Free bytes under which a local S3 server's data dir counts as full: weed writes objects in
#: chunks of up to 8 MiB, so a write can fail for want of space while a few MiB are still free.
FULL_MARGIN = 32 * 2**20


def _server_error(err: Any) -> bool:
    """Whether an S3 ``ClientError`` is the server's own failure (5xx), not a refusal or a miss."""
    meta = err.response.get("ResponseMetadata", {}) if isinstance(getattr(err, "response", None), dict) else {}
    code = (err.response.get("Error", {}) or {}).get("Code", "") if isinstance(err.response, dict) else ""
    return int(meta.get("HTTPStatusCode") or 0) >= 500 or code in ("InternalError", "ServiceUnavailable")


def disk_full(server_dir: "str | os.PathLike[str] | None") -> bool:
    """Whether the local S3 server's data dir has less than :data:`FULL_MARGIN` bytes free."""
    if not server_dir:
        return False
    try:
        return shutil.disk_usage(server_dir).free < FULL_MARGIN
    except OSError:
        return False


#: How S3 servers say their disk is full in an error reply.
_FULL_REPLY = re.compile(r"no space left|no (free|writable) volumes?|not enough (free )?space|disk (is )?full", re.I)


def guarded(method: Any) -> Any:
    """A store method ``(self, key, ...)`` whose failures that :func:`store_fault` recognises are
    raised as that one-line error instead."""

    @functools.wraps(method)
    def wrapper(self: Any, key: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, key, *args, **kwargs)
        except Exception as err:
            fault = store_fault(self, err, key)
            if fault is None:
                raise
            raise fault from None

    return wrapper


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (the one low-level write of a local store's objects)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
