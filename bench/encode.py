"""Benchmark ``encode-session``: scripted encoding sessions through the real browser.

Metrics: ``wall_s`` of one 25-step scripted session (storefront and browser already warm; the
target is <= 4 s), and encoding throughput in sessions/min with 1 and with 2 workers (each worker
a thread with its own browser against one shared storefront, as one node's Ray actors would).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from bench.harness import benchmark, record

N_STEPS = 25
THROUGHPUT_SESSIONS = 4


def _data_dir() -> str:
    from pipelines.config import RunConfig
    from pipelines.context import resolve_data_dir

    return str(resolve_data_dir(RunConfig()))


@benchmark("encode-session", "one 25-step scripted-shopper session through Chromium; sessions/min with 1 and 2 workers")
def encode_session() -> list[dict]:
    from env.storefront.server import ShopServer
    from agents.chains import session_spec
    from agents.session import run_session
    from pipelines.jobs.encode import EncodeWorker
    from core.store import Store

    records = []
    from pipelines.config import RunConfig
    from pipelines.stages.catalog import source_spec

    # The storefront as the encode stage builds it: the catalogue's procedural images, on demand.
    images = source_spec(RunConfig().catalog)
    with tempfile.TemporaryDirectory() as tmp, ShopServer.from_data(_data_dir(), seed=0, images=images) as shop:
        store = Store.open(f"file://{Path(tmp)}/store")
        spec = [{"name": "scripted-shopper", "args": {"seed": 0}}]

        def worker(slug: str) -> EncodeWorker:
            return EncodeWorker(store, spec, [slug], data_dir=_data_dir(), shop_url=shop.url)

        w = worker("bench-a")
        try:
            s = replace(session_spec(0, 0), n_steps=N_STEPS)
            run_session(replace(s, j=99), vlm=w.vlm(0), env=w.env, backend="warmup")  # warm the browser
            times = []
            for j in range(3):
                t0 = time.perf_counter()
                run_session(replace(s, j=j), vlm=w.vlm(0), env=w.env, backend="bench",
                            blob_sink=w.caches[0].put_blob)
                times.append(time.perf_counter() - t0)
            records.append(record("encode-session", "wall_s", statistics.median(times), "s", target=4.0))
        finally:
            w.close()

        for n_workers in (1, 2):
            keys = [(0, j) for j in range(THROUGHPUT_SESSIONS)]
            lock = threading.Lock()
            ready = threading.Barrier(n_workers + 1)

            def loop(i: int) -> None:
                # Playwright's sync API is thread-bound: each thread makes its own browser.
                wk = worker(f"bench-{n_workers}-{i}")
                try:
                    wk.env  # noqa: B018 - start the browser before the clock starts
                    ready.wait()
                    while True:
                        with lock:
                            if not keys:
                                return
                            seed, j = keys.pop(0)
                        wk.run_key(0, seed, j)
                finally:
                    wk.close()

            threads = [threading.Thread(target=loop, args=(i,)) for i in range(n_workers)]
            for t in threads:
                t.start()
            ready.wait()
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            dt = time.perf_counter() - t0
            records.append(record("encode-session", f"sessions_per_min_{n_workers}w",
                                  THROUGHPUT_SESSIONS / dt * 60, "sessions/min", better="higher"))
    return records
