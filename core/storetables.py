"""The table half of :class:`vismem.core.store.Store`: Parquet objects, and the pyarrow / Polars
views of the store that Ray Data takes.

Every table read back (:meth:`StoreTables.read_table`) is bounded and checked by
:func:`vismem.core.parquetio.decode_table`: at most ``TABLE_BYTES`` (``$VISMEM_MAX_TABLE_BYTES``),
refused from the object's size before it is read, and one line naming the object when it is not a
whole table. There is no lazy scan: Polars' own reader would take the store's bytes unbounded and
unchecked (it panics on some damaged tables), and the project's stages read tables whole.
"""

from __future__ import annotations

from typing import Any

from vismem.core.bounds import TABLE_BYTES
from vismem.core.errors import TooLarge
from vismem.core.parquetio import decode_table, parquet_bytes


class StoreTables:
    """Tables over a store's blobs (mixed into ``Store``, whose ``spec``, ``is_s3``, ``url``,
    ``exists``, ``list``, ``get_bytes`` and ``put_bytes`` it uses)."""

    def arrow_filesystem(self) -> Any:
        """A ``pyarrow.fs.FileSystem`` for this store (pass to Ray Data / pyarrow.dataset)."""
        import pyarrow.fs as pafs

        if self.is_s3:
            return pafs.S3FileSystem(
                access_key=self.spec.access_key, secret_key=self.spec.secret_key,
                session_token=self.spec.session_token, endpoint_override=self.spec.endpoint_url,
                region=self.spec.region, allow_bucket_creation=False,
            )
        return pafs.LocalFileSystem()

    def arrow_path(self, key: str = "") -> str:
        """Path of a key as ``arrow_filesystem()`` expects it (no scheme)."""
        base = self.spec.uri.split("://", 1)[1] if self.is_s3 else str(self._local_root())
        return f"{base}/{self._clean(key)}" if key else base

    def polars_storage_options(self) -> dict[str, str] | None:
        """``storage_options`` for ``pl.read_parquet``/``scan_parquet`` on this store."""
        if not self.is_s3:
            return None
        opts = {"aws_region": self.spec.region}
        if self.spec.access_key:  # else object_store's own default chain (env, IRSA, instance profile)
            opts.update(aws_access_key_id=self.spec.access_key, aws_secret_access_key=self.spec.secret_key or "")
            if self.spec.session_token:
                opts["aws_session_token"] = self.spec.session_token
        if self.spec.endpoint_url:
            opts["aws_endpoint_url"] = self.spec.endpoint_url
            if self.spec.endpoint_url.startswith("http://"):
                opts["aws_allow_http"] = "true"
        return opts

    def write_table(self, key: str, table: Any, *, schema_version: int | None = None) -> None:
        """Write a Polars DataFrame or Arrow table as one Parquet object, atomically.

        ``schema_version`` is stored in the Parquet metadata *and* as a column when given.
        """
        self.put_bytes(key, parquet_bytes(table, schema_version=schema_version),
                       content_type="application/vnd.apache.parquet")

    def read_table(self, key: str) -> Any:
        """Read one Parquet object, or every ``*.parquet`` under a prefix, as a Polars DataFrame;
        each object at most ``TABLE_BYTES`` (:class:`TooLarge`), one that is not a whole table a
        ``DataError`` naming it (``vismem.core.parquetio.decode_table``); a prefix's parts together at
        most ``TABLE_BYTES`` too."""
        import polars as pl

        if self.exists(key):
            return decode_table(self.url(key), self.get_bytes(key, bound=TABLE_BYTES))
        parts = [k for k in self.list(key) if k.endswith(".parquet")]
        if not parts:
            raise FileNotFoundError(self.url(key))
        frames, total = [], 0
        for k in parts:  # the parts together are one table: their sum is bounded too
            data = self.get_bytes(k, bound=TABLE_BYTES)
            total += len(data)
            past = TABLE_BYTES.past(total)
            if past:
                raise TooLarge(f"{self.url(key)}: its {len(parts)} parts hold at least {past}")
            frames.append(decode_table(self.url(k), data))
        return pl.concat(frames, how="diagonal_relaxed")
