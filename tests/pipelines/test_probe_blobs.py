"""The probe worker's blob cache: each content-addressed blob is read from the store once, the
bytes handed back are the store's, and the cache stays within its byte bound."""

from __future__ import annotations

import hashlib

from vismem.pipelines.dmv.probes_job import BlobCache


def test_each_blob_is_read_once_and_the_bytes_are_the_stores(tmp_path):
    from vismem.core.store import Store

    store = Store.open(f"file://{tmp_path}/store")
    blobs = [bytes([i]) * 1000 for i in range(3)]
    keys = [f"blobs/sha256/{hashlib.sha256(b).hexdigest()}.png" for b in blobs]  # content-addressed
    for k, b in zip(keys, blobs):
        store.put_bytes(k, b)
    reads: list[str] = []

    def read(key: str) -> bytes:
        reads.append(key)
        return store.get_bytes(key)

    cache = BlobCache(read)
    for _ in range(5):
        for k in keys:
            assert cache(k) == store.get_bytes(k)
    assert reads == keys and (cache.hits, cache.misses) == (12, 3)


def test_the_cache_evicts_the_least_recently_used_within_its_bound():
    data = {k: k.encode() * 100 for k in "abcd"}  # 100 bytes each
    reads: list[str] = []
    cache = BlobCache(lambda k: reads.append(k) or data[k], max_bytes=250)
    for k in "abab":
        cache(k)
    cache("c")             # over 250 bytes: "a" (least recent) goes
    assert list(cache._data) == ["b", "c"] and cache._bytes == 200
    cache("a")
    assert reads == ["a", "b", "c", "a"]
    big = BlobCache(lambda k: b"x" * 1000, max_bytes=10)
    assert big("z") == b"x" * 1000 and list(big._data) == ["z"]  # one oversized blob is still kept
