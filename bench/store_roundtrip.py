"""``store-roundtrip``: 1,000 small objects and a ~100 MB Parquet table through file:// and local S3."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from vismem.bench.harness import benchmark, record

N_OBJECTS = 1000
OBJECT_BYTES = 4096
TABLE_ROWS = 6_250_000  # 2 float64 columns x 8 B x 6.25 M rows ≈ 100 MB raw


def _table() -> Any:
    import pyarrow as pa

    rng = np.random.default_rng(0)  # random floats: Parquet cannot compress them away
    return pa.table({"a": rng.random(TABLE_ROWS), "b": rng.random(TABLE_ROWS)})


def _measure(store: Any, label: str, table: Any) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    name = "store-roundtrip"
    payload = np.random.default_rng(1).bytes(OBJECT_BYTES)
    t0 = time.perf_counter()
    for i in range(N_OBJECTS):
        store.put_bytes(f"bench/objs/{i:05d}.bin", payload)
    t_w = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(N_OBJECTS):
        assert store.get_bytes(f"bench/objs/{i:05d}.bin") == payload
    t_r = time.perf_counter() - t0

    fs = store.arrow_filesystem()
    path = store.arrow_path("bench/table.parquet")
    mb = table.nbytes / 1e6
    t0 = time.perf_counter()
    pq.write_table(table, path, filesystem=fs, compression="none")
    t_tw = time.perf_counter() - t0
    t0 = time.perf_counter()
    back = pq.read_table(path, filesystem=fs)
    t_tr = time.perf_counter() - t0
    assert back.num_rows == table.num_rows
    return [
        record(name, f"{label}.objects_write", N_OBJECTS / t_w, "objects/s", better="higher"),
        record(name, f"{label}.objects_read", N_OBJECTS / t_r, "objects/s", better="higher"),
        record(name, f"{label}.parquet_write", mb / t_tw, "MB/s", better="higher"),
        record(name, f"{label}.parquet_read", mb / t_tr, "MB/s", better="higher"),
    ]


@benchmark("store-roundtrip", "1,000 small objects + a 100 MB Parquet table through file:// and local S3")
def store_roundtrip() -> list[dict[str, Any]]:
    from vismem.core.s3server import LocalS3Server
    from vismem.core.store import Store

    table = _table()
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="vismem-bench-") as tmp:
        out += _measure(Store.open(f"file://{tmp}/file-store"), "file", table)
        with LocalS3Server(data_dir=Path(tmp) / "s3") as srv:
            store = Store.open("s3://vismem/bench", endpoint_url=srv.endpoint_url,
                               access_key=srv.access_key, secret_key=srv.secret_key)
            out += _measure(store, "s3", table)
    return out
