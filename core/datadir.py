"""A run's ``data_dir`` in object storage: ``s3://bucket/prefix`` read into a node-local folder.

Large datasets (LongMemEval, the official images) do not travel with a submitted job; they live
in a bucket every node can read. Each process that needs the data (the job driver, an actor on
another node) calls :func:`materialise`, which copies the prefix's objects into
``<tmp>/vismem-data/<hash of the URI>/`` once per node and returns that folder, so every reader
keeps working with plain paths. A file already there with the object's size is not fetched again;
a file is written to a temporary name and renamed, so two processes on one node never read a
half-written copy.

Credentials and endpoint come from the environment (``AWS_*``), as for the run's store.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from vismem.core.errors import ConfigError

#: Schemes a ``data_dir`` may name besides a local path.
REMOTE_SCHEMES = ("s3://",)


def is_remote(data_dir: str | Path) -> bool:
    """Whether ``data_dir`` names object storage rather than a folder."""
    return str(data_dir).startswith(REMOTE_SCHEMES)


def cache_dir(uri: str) -> Path:
    """The node-local folder :func:`materialise` fills for ``uri``."""
    digest = hashlib.sha256(uri.rstrip("/").encode()).hexdigest()[:16]
    return Path(os.environ.get("VISMEM_DATA_CACHE") or Path(tempfile.gettempdir()) / "vismem-data") / digest


#: URIs this process has already copied (every stage asks for the data dir; one listing is enough).
_DONE: dict[str, Path] = {}


def materialise(uri: str) -> Path:
    """Copy every object under ``uri`` into :func:`cache_dir` (new or changed ones only)."""
    if uri in _DONE:
        return _DONE[uri]
    _DONE[uri] = _copy(uri)
    return _DONE[uri]


def _copy(uri: str) -> Path:
    from vismem.core.secrets import strip_userinfo
    from vismem.core.store import Store, StoreError

    shown = strip_userinfo(uri)
    try:
        store = Store.open(uri, create=False)  # read only: a missing folder or bucket is not made
        objects = list(_objects(store))
    except (StoreError, OSError) as err:
        raise ConfigError(f"data_dir {shown!r} cannot be read: {' '.join(str(err).split())[:300]}") from None
    except Exception as err:  # botocore's errors (no such bucket, denied) are not StoreErrors
        raise ConfigError(f"data_dir {shown!r} cannot be read: "
                          f"{type(err).__name__}: {strip_userinfo(str(err))}") from None
    if not objects:
        raise ConfigError(f"data_dir {shown!r} holds no objects (upload the data folder there first)")
    root = cache_dir(uri)
    for key, etag in objects:
        dest = root / key
        # The ETag beside the copy says which version it is: a changed object is fetched again
        # (the run id hashes the data's content, so a stale copy would name the wrong run).
        tag = dest.parent / f".{dest.name}.etag"
        if dest.exists() and tag.exists() and tag.read_text() == etag:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        for path, data in ((dest, store.get_bytes(key)), (tag, etag.encode())):
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{path.name}.", suffix=".part")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
    return root


def _objects(store: object) -> list[tuple[str, str]]:
    """``(key relative to the prefix, ETag)`` of every object under the store's root (one listing)."""
    return [(key, str(obj.get("ETag", "")).strip('"'))
            for key, obj in store.iter_s3_objects() if key and not key.endswith("/")]  # type: ignore[attr-defined]
