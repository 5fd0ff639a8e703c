"""A run's ``data_dir`` in object storage: ``s3://bucket/prefix`` read into a node-local folder.

Large datasets (LongMemEval, the official images) do not travel with a submitted job; they live
in a bucket every node can read. Each process that needs the data (the job driver, an actor on
another node) calls :func:`materialise`, which copies the prefix's objects into
``<tmp>/vismem-data/<hash of the URI>/`` once per node and returns that folder, so every reader
keeps working with plain paths.

The bucket is an input like any other, so the copy is bounded (``vismem.core.bounds``): at most
``DATA_DIR_OBJECTS`` objects (the listing stops one past it), each at most
``DATA_DIR_OBJECT_BYTES``, all together at most ``DATA_DIR_BYTES``, and no more than the local
folder's free space. Every bound, and every object key that cannot be a file name there, is
checked from the listing before the first byte is fetched: one ``ConfigError`` line naming the
data_dir and the bound, and nothing copied. Each object is streamed to a temporary file (memory
stays at one chunk, whatever its size), stopped one byte past its listed size, and renamed into
place only when whole; its ETag is written beside it afterwards, so a file already there with the
listed size and ETag is not fetched again, and two processes on one node never read a
half-written copy. The copy follows the listing: a file of the folder the listing no longer names
(an object since removed, a temporary file of a copy that was killed) is deleted before the
copying starts -- inside that folder only, a link removed and never followed -- under a lock
beside the folder, so two processes on one node copy one after the other, never deleting the
other's temporary files.

Credentials and endpoint come from the environment (``AWS_*``), as for the run's store.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from vismem.core.bounds import DATA_DIR_BYTES, DATA_DIR_OBJECT_BYTES, DATA_DIR_OBJECTS
from vismem.core.errors import ConfigError, no_space
from vismem.core.wholefile import whole_file

#: Schemes a ``data_dir`` may name besides a local path.
REMOTE_SCHEMES = ("s3://",)
#: Bytes read from an object at a time while it is copied.
_CHUNK = 8 << 20
#: Longest key component (bytes) the copy takes: its temporary and ETag files add a few
#: characters to it, and a file name has at most 255 bytes.
_NAME_BYTES = 200


def is_remote(data_dir: str | Path) -> bool:
    """Whether ``data_dir`` names object storage rather than a folder."""
    return str(data_dir).startswith(REMOTE_SCHEMES)


def cache_dir(uri: str) -> Path:
    """The node-local folder :func:`materialise` fills for ``uri``."""
    digest = hashlib.sha256(uri.rstrip("/").encode()).hexdigest()[:16]
    return Path(os.environ.get("VISMEM_DATA_CACHE") or Path(tempfile.gettempdir()) / "vismem-data") / digest


#: URIs this process has already copied (every stage asks for the data dir; one listing is enough).
_DONE: dict[str, Path] = {}


class _Object(NamedTuple):
    key: str  # relative to the data_dir's prefix
    etag: str
    size: int


def materialise(uri: str) -> Path:
    """Copy every object under ``uri`` into :func:`cache_dir` (new or changed ones only), within
    the bounds of ``vismem.core.bounds`` (one ``ConfigError`` line before any copying)."""
    if uri in _DONE:
        return _DONE[uri]
    _DONE[uri] = _copy(uri)
    return _DONE[uri]


def _copy(uri: str) -> Path:
    from vismem.core.secrets import strip_userinfo

    shown = strip_userinfo(uri)
    for bound in (DATA_DIR_OBJECT_BYTES, DATA_DIR_BYTES):
        bound.value()  # a bad override fails here, before the bucket is listed
    store, objects = _listing(uri, shown, DATA_DIR_OBJECTS.value())
    _check(shown, objects)
    root = cache_dir(uri)
    with _locked(shown, root):
        _prune(shown, root, objects)
        todo = [o for o in objects if not _fresh(root, o)]
        _check_room(shown, root, sum(o.size for o in todo))
        for obj in todo:
            _fetch(store, shown, root, obj)
    return root


@contextmanager
def _locked(shown: str, root: Path) -> Iterator[None]:
    """Hold the node's lock on the copy at ``root`` (a file beside it, not in it): a second
    process waits, then finds the objects fresh, instead of pruning the first one's temporary files."""
    lock = root.parent / f".{root.name}.lock"
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as err:
        raise no_space(err, lock) or ConfigError(f"data_dir {shown!r}: cannot lock its local copy ({lock}): "
                                                  f"{err}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _prune(shown: str, root: Path, objects: list[_Object]) -> None:
    """Delete every file under ``root`` that is neither a listed object nor its ETag record
    (objects removed from the bucket, temporary files of a killed copy), then the folders left
    empty. Only ``root`` is touched: a link is deleted as a link, never followed."""
    if root.is_symlink() or not root.is_dir():
        return  # nothing copied yet; a linked folder is not ours to empty
    keep = {o.key for o in objects}
    keep |= {_tag(Path(o.key)).as_posix() for o in objects}
    path = root
    try:
        for dirpath, dirnames, filenames in os.walk(root, topdown=False):  # does not follow links
            here = Path(dirpath)
            links = [d for d in dirnames if (here / d).is_symlink()]  # os.walk lists them as folders
            for name in filenames + links:
                path = here / name
                if path.relative_to(root).as_posix() not in keep:
                    path.unlink()
            if here != root and not any(here.iterdir()):
                path = here
                here.rmdir()
    except OSError as err:
        raise ConfigError(f"data_dir {shown!r}: cannot remove {path} from its local copy, which the bucket "
                          f"no longer lists: {err}") from None


def _listing(uri: str, shown: str, most: int) -> tuple[Any, list[_Object]]:
    """The store at ``uri`` and its objects (folder markers left out), listed up to one past
    ``most`` objects: a ConfigError when it cannot be read, is empty, or holds more."""
    from vismem.core.secrets import strip_userinfo
    from vismem.core.store import Store, StoreError

    found: list[_Object] = []
    try:
        store = Store.open(uri, create=False)  # read only: a missing folder or bucket is not made
        for key, obj in store.iter_s3_objects():
            if key and not key.endswith("/"):
                found.append(_Object(key, str(obj.get("ETag", "")).strip('"'), int(obj.get("Size") or 0)))
                if len(found) > most:
                    break  # one past the bound is enough to refuse: a huge bucket is never listed whole
    except (StoreError, OSError) as err:
        raise ConfigError(f"data_dir {shown!r} cannot be read: {' '.join(str(err).split())[:300]}") from None
    except Exception as err:  # botocore's errors (no such bucket, denied) are not StoreErrors
        raise ConfigError(f"data_dir {shown!r} cannot be read: "
                          f"{type(err).__name__}: {strip_userinfo(str(err))}") from None
    if not found:
        raise ConfigError(f"data_dir {shown!r} holds no objects (upload the data folder there first)")
    past = DATA_DIR_OBJECTS.past(len(found))
    if past:
        raise ConfigError(f"data_dir {shown!r} holds at least {past}; nothing was copied")
    return store, found


def _check(shown: str, objects: list[_Object]) -> None:
    """A ConfigError for the first object past its bound or whose key is no file name under the
    local copy, then for the whole data_dir past its bound (all from the listing)."""
    folders = {key.rsplit("/", i)[0] for key, _, _ in objects for i in range(1, key.count("/") + 1)}
    for obj in objects:
        why = _bad_key(obj.key, folders)
        if why:
            raise ConfigError(f"data_dir {shown!r}: object key {obj.key[:200]!r} {why}; nothing was copied")
        past = DATA_DIR_OBJECT_BYTES.past(obj.size)
        if past:
            raise ConfigError(f"data_dir {shown!r}: object {obj.key!r} has {past}; nothing was copied")
    past = DATA_DIR_BYTES.past(sum(o.size for o in objects))
    if past:
        raise ConfigError(f"data_dir {shown!r} holds {len(objects):,} objects of {past}; nothing was copied")


def _bad_key(key: str, folders: set[str]) -> str | None:
    """Why ``key`` cannot be a file of the local copy (None when it can): an escape from the
    folder (``..``), a name the copy keeps for itself, a name too long, a key that is also a folder."""
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\0" in key:
        return "has an empty, '.' or '..' part (or a NUL)"
    if any(p.startswith(".") and p.endswith((".etag", ".part")) for p in parts):
        return "names a hidden .etag or .part file, which the local copy keeps for itself"
    if any(len(p.encode("utf-8", "surrogatepass")) > _NAME_BYTES for p in parts):
        return f"has a part longer than {_NAME_BYTES} bytes"
    if key in folders:
        return "is also the folder of another object"
    return None


def _tag(dest: Path) -> Path:
    """Where the copy of ``dest`` records the ETag it was fetched at."""
    return dest.parent / f".{dest.name}.etag"


def _fresh(root: Path, obj: _Object) -> bool:
    """Whether the local copy of ``obj`` is already the listed version (its size and ETag)."""
    dest = root / obj.key
    try:
        return dest.stat().st_size == obj.size and _tag(dest).read_text() == obj.etag
    except OSError:  # not there (or not a file): fetched
        return False


def _check_room(shown: str, root: Path, need: int) -> None:
    """A ConfigError when the local folder's disk has less free space than ``need`` bytes."""
    if not need:
        return
    base = root
    while not base.exists() and base != base.parent:
        base = base.parent
    free = shutil.disk_usage(base).free
    if need > free:
        raise ConfigError(f"data_dir {shown!r}: {need:,} bytes to copy, {free:,} free under {root} "
                          "($VISMEM_DATA_CACHE chooses another folder); nothing was copied")


def _fetch(store: Any, shown: str, root: Path, obj: _Object) -> None:
    """Stream ``obj`` into a temporary file beside its place; rename it there when it is whole
    (its listed size), then record its ETag. Nothing half-written is ever left in place."""
    dest = root / obj.key
    try:
        with whole_file(dest) as out:
            got = _stream(store, shown, obj, out)
            if got != obj.size:
                raise ConfigError(f"data_dir {shown!r}: object {obj.key!r} changed while it was copied "
                                  f"({f'more than {obj.size:,}' if got > obj.size else f'{got:,}'} bytes, "
                                  f"listed {obj.size:,}); run again")
        with whole_file(_tag(dest), "w") as out:
            out.write(obj.etag)
    except OSError as err:
        raise no_space(err, dest) or ConfigError(f"data_dir {shown!r}: object {obj.key!r} cannot be copied "
                                                  f"to {dest}: {err}") from None


def _stream(store: Any, shown: str, obj: _Object, out: Any) -> int:
    """Write ``obj``'s bytes to ``out``, reading no more than one byte past its listed size;
    returns how many bytes came (more than the size: the object grew)."""
    with _remote(store, shown, obj):
        body, _ = store.read_stream(obj.key)
    n = 0
    try:
        while n <= obj.size:
            with _remote(store, shown, obj):
                block = body.read(min(_CHUNK, obj.size - n + 1))
            if not block:
                break
            out.write(block[: obj.size - n])  # a byte past the listed size is counted, never written
            n += len(block)
    finally:
        body.close()
    return n


@contextmanager
def _remote(store: Any, shown: str, obj: _Object) -> Iterator[None]:
    """Reading ``obj`` from the bucket: any failure (gone, denied, connection lost) is one
    ConfigError line naming it -- kept apart from the local writes, which _fetch names."""
    try:
        yield
    except Exception as err:  # botocore's errors, and its timeouts (which are OSErrors)
        fault = store.fault(err, obj.key)
        detail = str(fault) if fault is not None else f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"
        raise ConfigError(f"data_dir {shown!r}: object {obj.key!r} cannot be read: {detail}") from None
