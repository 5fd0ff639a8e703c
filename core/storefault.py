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
        # An S3 server (the local weed) out of disk answers 500 with its own words for it.
        return NoSpace(f"no space left on device writing {name} (the store's S3 server {where} is full)")
    return None


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
