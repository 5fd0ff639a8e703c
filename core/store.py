"""One URI-based object store over ``file://`` and ``s3://``.

* blobs through boto3 (S3) or the filesystem (local), every write atomic: a reader sees the old
  object or the new one, never a torn one (S3 PUTs are atomic; locally temp file + rename);
* tables as Parquet through the pyarrow filesystem (what Ray Data takes) and Polars
  ``storage_options``;
* ``exists``/``list`` for resumption.

A ``Store`` is a small picklable value (its boto3 client is created lazily per process), so it
can be shipped to Ray workers as is.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote, urlparse

from vismem.core import s3client
from vismem.core.blobref import check_blob, parse_ref
from vismem.core.bounds import PACK_BYTES, Bound
from vismem.core.errors import StoreError, TooLarge
from vismem.core.parquetio import parquet_bytes
from vismem.core.storefault import guarded, store_fault, write_all
from vismem.core.storetables import StoreTables
from vismem.core.secrets import strip_userinfo
from vismem.core.storeuri import StoreSpec, validate_uri
from vismem.core.wholefile import whole_file

@dataclass
class Store(StoreTables):
    """A store rooted at ``spec.uri``; keys are ``/``-separated paths relative to that root
    (tables: :class:`~vismem.core.storetables.StoreTables`)."""

    spec: StoreSpec
    _client: Any = field(default=None, repr=False, compare=False)
    _lean: Any = field(default=None, repr=False, compare=False)  # core.s3put.LeanPut, False: not usable

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        uri: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        server_dir: str | os.PathLike[str] | None = None,
        check: bool = True,
        create: bool = True,
    ) -> "Store":
        """Open a store, validating the URI and (with ``check``) reachability and credentials.

        ``file://`` paths are percent-decoded (``file:///a%20b`` is the folder ``/a b``, the form
        browsers and report links use). ``create=False`` (read-only commands) never makes the
        folder or the bucket: a store that is not there reads as empty (S3: one error line).
        Keys not given come from ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, and with them
        ``AWS_SESSION_TOKEN`` (temporary keys); a token is only ever paired with its own key.
        ``server_dir``: the data dir of the local S3 server at ``endpoint_url`` (its full disk is
        told apart from other server errors by that dir's free space)."""
        parsed = urlparse(uri)
        shown = strip_userinfo(uri)
        if parsed.scheme == "file":
            if parsed.netloc not in ("", "localhost"):
                raise StoreError(f"invalid store URI {shown!r}: file URIs need an absolute path (file:///abs/path)")
            if not parsed.path.startswith("/"):
                raise StoreError(f"invalid store URI {shown!r}: file URIs need an absolute path")
            path = unquote(parsed.path)
            store, root = cls(StoreSpec(uri="file://" + path.rstrip("/"))), Path(path)
            if check and create:
                try:
                    root.mkdir(parents=True, exist_ok=True)
                except OSError as err:
                    raise StoreError(f"store {shown!r} is not writable: {err}") from None
                if not os.access(root, os.W_OK):
                    raise StoreError(f"store {shown!r} is not writable")
            return store
        if parsed.scheme == "s3":
            validate_uri(uri)
            bucket = parsed.netloc
            endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("VISMEM_S3_ENDPOINT")
            if not access_key:  # the environment's key, and the token that belongs to it
                access_key = os.environ.get("AWS_ACCESS_KEY_ID")
                session_token = session_token or os.environ.get("AWS_SESSION_TOKEN")
            secret_key = secret_key or os.environ.get("AWS_SECRET_ACCESS_KEY")
            if bool(access_key) != bool(secret_key):
                raise StoreError(f"incomplete credentials for store {shown!r}: set both AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY, or neither (boto3's default chain)")
            # No static keys: boto3's default chain (instance profile, IRSA, ~/.aws) finds them.
            access_key, secret_key = access_key or None, secret_key or None
            session_token = (session_token or None) if access_key else None
            region = region or os.environ.get("AWS_REGION") or "us-east-1"
            prefix = parsed.path.strip("/")
            root = f"s3://{bucket}" + (f"/{prefix}" if prefix else "")
            store = cls(StoreSpec(root, endpoint_url, region, access_key, secret_key, session_token,
                                  str(server_dir) if server_dir is not None else None))
            if check:
                s3client.check_bucket(store.spec, store._bucket_prefix()[0], create=create)
            return store
        raise StoreError(f"invalid store URI {shown!r}: scheme must be file:// or s3:// (or local-s3:// in a run config)")

    @classmethod
    def from_spec(cls, spec: StoreSpec) -> "Store":
        return cls(spec)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.spec = state["spec"]
        self._client = self._lean = None

    # -- addressing ---------------------------------------------------------------------------
    @property
    def is_s3(self) -> bool:
        return self.spec.uri.startswith("s3://")

    @property
    def uri(self) -> str:
        return self.spec.uri

    def _bucket_prefix(self) -> tuple[str, str]:
        rest = self.spec.uri[len("s3://"):]
        bucket, _, prefix = rest.partition("/")
        return bucket, prefix

    def _local_root(self) -> Path:
        return Path(self.spec.uri[len("file://"):])

    @staticmethod
    def _clean(key: str) -> str:
        key = key.strip("/")
        parts = key.split("/")
        if not key or any(p in ("", ".", "..") for p in parts):
            raise StoreError(f"invalid store key {key!r}: empty, '.' or '..' components are not allowed")
        return key

    def url(self, key: str) -> str:
        """Full URI of a key (``s3://bucket/prefix/key`` or ``file:///root/key``)."""
        return f"{self.spec.uri}/{self._clean(key)}"

    def child(self, prefix: str) -> "Store":
        """A store rooted at ``prefix`` under this one."""
        return Store(StoreSpec(self.url(prefix), self.spec.endpoint_url, self.spec.region,
                               self.spec.access_key, self.spec.secret_key, self.spec.session_token,
                               self.spec.server_dir))

    # -- S3 plumbing (core.s3client) ----------------------------------------------------------
    def _s3(self) -> Any:
        if self._client is None:
            self._client = s3client.client(self.spec)
        return self._client

    def _lean_put(self) -> Any:
        """The lean PUT of a loopback S3 server (the local store), or False where boto3 must do it."""
        if self._lean is None:
            self._lean = s3client.lean_put(self.spec)
        return self._lean

    def _s3_key(self, key: str) -> tuple[str, str]:
        bucket, prefix = self._bucket_prefix()
        key = self._clean(key)
        return bucket, f"{prefix}/{key}" if prefix else key

    def fault(self, err: BaseException, key: str) -> StoreError | None:
        """The one-line store error ``err`` stands for (a full disk, an endpoint gone), else None."""
        return store_fault(self, err, key)

    # -- blobs --------------------------------------------------------------------------------
    @guarded
    def put_bytes(self, key: str, data: bytes, *, content_type: str | None = None) -> None:
        """Write a blob atomically (overwrites)."""
        if self.is_s3:
            bucket, k = self._s3_key(key)
            lean = self._lean_put()
            if lean and lean.put(bucket, k, data, content_type):
                return
            extra = {"ContentType": content_type} if content_type else {}
            self._s3().put_object(Bucket=bucket, Key=k, Body=data, **extra)
            return
        with whole_file(self._local_root() / self._clean(key), suffix=TMP_SUFFIX) as out:
            write_all(out.fileno(), data)

    @guarded
    def put_file(self, key: str, path: str | Path) -> None:
        """Write a (possibly large) file atomically, streamed: S3 multipart upload, or a local copy
        renamed into place."""
        if self.is_s3:
            self._s3().upload_file(str(path), *self._s3_key(key))
            return
        with open(path, "rb") as src, whole_file(self._local_root() / self._clean(key), suffix=TMP_SUFFIX) as out:
            shutil.copyfileobj(src, out, 1 << 20)

    def read_stream(self, key: str, offset: int = 0, length: int | None = None) -> tuple[Any, int | None]:
        """``(an open readable body, the bytes it holds)`` of ``key`` from ``offset`` (``length``
        bytes; the rest by default): a local file or an S3 GET, ranged for a part. The caller
        closes the body and names the failures its own way: a missing object raises
        ``FileNotFoundError`` naming its URL, any other failure as the file system or the S3
        client raised it (the S3 size: None where the server gave none)."""
        if not self.is_s3:
            path = self._local_root() / self._clean(key)
            if not path.is_file():  # a folder is no object either
                raise FileNotFoundError(f"nothing at {self.url(key)}")
            fh = open(path, "rb")
            fh.seek(offset)
            return fh, length if length is not None else os.fstat(fh.fileno()).st_size - offset
        from botocore.exceptions import ClientError

        bucket, k = self._s3_key(key)
        extra = {"Range": f"bytes={offset}-{offset + length - 1}"} if length else {}
        try:
            obj = self._s3().get_object(Bucket=bucket, Key=k, **extra)
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise FileNotFoundError(f"nothing at {self.url(key)}") from None
            raise
        return obj["Body"], length if length is not None else obj.get("ContentLength")

    @guarded
    def get_bytes(self, key: str, *, bound: Bound | None = None) -> bytes:
        """Read a blob, or the byte range a ``vismem.core.blobref`` reference names; a missing key raises
        ``FileNotFoundError`` naming it. A content-addressed blob is checked against the digest its key
        names (``vismem.core.blobref.check_blob``): a damaged one never reaches a model or a cache.
        ``bound``: an object past it is :class:`TooLarge`, refused from its size before it is read (a
        reference's span is always bounded by ``PACK_BYTES``: references point into shot packs)."""
        ref = parse_ref(key)
        if ref is not None:
            return self._get_range(*ref)
        return check_blob(key, self._get_plain(key, bound))

    def _get_plain(self, key: str, limit: Bound | int | None = None) -> bytes:
        if self.is_s3:
            from botocore.exceptions import ClientError

            bucket, k = self._s3_key(key)
            try:
                obj = self._s3().get_object(Bucket=bucket, Key=k)
            except ClientError as err:
                if err.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    raise FileNotFoundError(self.url(key)) from None
                raise
            try:
                _within(self.url(key), obj.get("ContentLength"), limit)
            except TooLarge:
                obj["Body"].close()  # the body is never read: its connection is not reused
                raise
            return obj["Body"].read()
        path = self._local_root() / self._clean(key)
        if not path.is_file():
            raise FileNotFoundError(self.url(key))
        _within(self.url(key), path.stat().st_size, limit)
        return path.read_bytes()

    @guarded
    def _get_range(self, key: str, offset: int, length: int) -> bytes:
        if length == 0:
            return b"" if self.exists(key) else self.get_bytes(key)  # the latter raises, naming it
        past = PACK_BYTES.past(length)
        if past:  # a damaged shard's reference must not make a reader allocate its length
            raise TooLarge(f"{self.url(key)}: a reference to {past}", size=length)
        if self.is_s3:
            from botocore.exceptions import ClientError

            bucket, k = self._s3_key(key)
            try:
                rng = f"bytes={offset}-{offset + length - 1}"
                data = self._s3().get_object(Bucket=bucket, Key=k, Range=rng)["Body"].read()
            except ClientError as err:
                code = err.response.get("Error", {}).get("Code")
                if code in ("NoSuchKey", "404"):
                    raise FileNotFoundError(self.url(key)) from None
                if code != "InvalidRange":  # a range past the end: reported below like a short read
                    raise
                data = b""
        else:
            path = self._local_root() / self._clean(key)
            if not path.is_file():
                raise FileNotFoundError(self.url(key))
            with path.open("rb") as fh:
                fh.seek(offset)
                data = fh.read(length)
        if len(data) != length:  # a reference past the object's end: the object is not the one referenced
            raise StoreError(f"{self.url(key)} holds {len(data)} of the {length} bytes at offset {offset} "
                             "that a reference names")
        return data

    @guarded
    def exists(self, key: str) -> bool:
        """True when the blob exists (used by every stage to skip finished work); for a
        ``vismem.core.blobref`` reference, whether the object it points into exists."""
        ref = parse_ref(key)
        if ref is not None:
            key = ref[0]
        if self.is_s3:
            from botocore.exceptions import ClientError

            bucket, k = self._s3_key(key)
            try:
                self._s3().head_object(Bucket=bucket, Key=k)
                return True
            except ClientError as err:
                if err.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    return False
                raise
        return (self._local_root() / self._clean(key)).is_file()

    def list(self, prefix: str = "") -> list[str]:
        """Keys under ``prefix`` (relative to the root), sorted; temp files are hidden."""
        return sorted(self.iter_keys(prefix))

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        prefix = prefix.strip("/")
        if self.is_s3:
            yield from (key for key, _ in self.iter_s3_objects(prefix))
            return
        base = self._local_root()
        start = base / prefix if prefix else base
        if not start.exists():
            return
        for dirpath, _dirs, files in os.walk(start):
            for name in files:
                if name.startswith(".") and name.endswith(TMP_SUFFIX):
                    continue
                yield str(Path(dirpath, name).relative_to(base))

    def iter_s3_objects(self, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
        """``(key relative to the root, listing entry with ETag, Size, ...)`` under ``prefix`` (S3)."""
        bucket, root = self._bucket_prefix()
        full = "/".join(p for p in (root, prefix.strip("/")) if p)
        cut = len(root) + 1 if root else 0
        pages = self._s3().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=full + "/" if full else "")
        try:
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"][cut:], obj
        except Exception as err:
            fault = self.fault(err, prefix.strip("/"))
            if fault is None:
                raise
            raise fault from None

    @guarded
    def delete(self, key: str) -> None:
        """Delete one blob (missing is fine)."""
        if self.is_s3:
            bucket, k = self._s3_key(key)
            self._s3().delete_object(Bucket=bucket, Key=k)
            return
        (self._local_root() / self._clean(key)).unlink(missing_ok=True)

    def put_json(self, key: str, obj: Any) -> None:
        self.put_bytes(key, json.dumps(obj, indent=2, sort_keys=True, default=str).encode(),
                       content_type="application/json")

    @guarded
    def get_json(self, key: str) -> Any:
        """A JSON object of the store (a manifest, a shard, a marker), at most MAX_JSON_BYTES."""
        if parse_ref(key) is not None:
            return json.loads(self.get_bytes(key))
        return json.loads(check_blob(key, self._get_plain(key, MAX_JSON_BYTES)))


#: Largest JSON object read back from a store (bytes): a shard or manifest is kB to a few MB.
MAX_JSON_BYTES = 256 << 20
#: The suffix of a local object being written (never listed as an object).
TMP_SUFFIX = ".tmp"


def _within(url: str, size: int | None, limit: Bound | int | None) -> None:
    """:class:`TooLarge` when an object of ``size`` bytes is past ``limit`` (checked before it is
    read): a :class:`Bound`, or a number of bytes for a JSON object (``MAX_JSON_BYTES``)."""
    if limit is None or size is None:
        return
    if isinstance(limit, Bound):
        past = limit.past(size)
        if past:
            raise TooLarge(f"{url}: {past}", size=size)
    elif size > limit:
        raise TooLarge(f"{url}: {size:,} bytes, more than the {limit:,} a JSON object of the store may have",
                       size=size)


__all__ = ["MAX_JSON_BYTES", "Store", "parquet_bytes"]  # parquet_bytes lives in core.parquetio
