"""``longmemeval-m-load``: read a LongMemEval_M-sized file (~2.7 GB) within 2 GB of RSS.

Setup (not measured): a synthetic file in the upstream schema (:mod:`vismem.env.dialogue.lme_synth`:
~5 MB records of ~500 sessions drawn from one pool, as LongMemEval_M's are) is written to a temp
dir, or to ``$VISMEM_BENCH_CACHE`` which keeps it across runs. Its size is
``$VISMEM_BENCH_LME_BYTES`` (default 2.7e9, the real ``longmemeval_m_cleaned.json``).

Measured: the loader streaming every record into a ``Conversation`` and dropping it (what a run
does with records it renders one by one): this process's peak RSS from a fresh high-water mark
(``stream_peak_rss_mib``, target 2048 MiB) and throughput; then the whole file loaded as one list
(``list_peak_rss_mib``, no target: the list holds every record, with pooled sessions shared, so
it depends on how much of the haystack pool repeats -- on the synthetic pool, a lot).
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from vismem.bench.harness import benchmark, record

NAME = "longmemeval-m-load"
DEFAULT_BYTES = int(2.7e9)
TARGET_RSS_MIB = 2048.0
#: Record shape of LongMemEval_M: ~500 sessions a question, ~10 kB a session.
SHAPE = {"sessions_per_question": 500, "turns_per_session": 12, "words_per_turn": 110, "pool_size": 3000}


def synthetic_file(path: Path, target_bytes: int, *, seed: int = 0, **shape: Any) -> Path:
    """The synthetic file at ``path`` of at least ``target_bytes`` (kept when it already is one)."""
    from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval

    if path.exists() and path.stat().st_size >= target_bytes:
        return path
    write_synthetic_longmemeval(path, target_bytes=target_bytes, seed=seed, **{**SHAPE, **shape})
    return path


def measure(path: Path, *, with_list: bool = True) -> list[dict[str, Any]]:
    """Stream ``path`` (then load it whole when ``with_list``); the benchmark's records."""
    from vismem.core.peakmem import reset_peak, self_peak_mib
    from vismem.env.dialogue.longmemeval import LongMemEvalReader, load_longmemeval

    size_mb = path.stat().st_size / 1e6
    gc.collect()
    reset_peak()
    t0 = time.perf_counter()
    reader = LongMemEvalReader(path)
    n = turns = 0
    for conv in reader:
        n += 1
        turns += conv.n_turns
    wall = time.perf_counter() - t0
    peak = self_peak_mib()
    out = [
        record(NAME, "stream_peak_rss_mib", peak, "MiB", target=TARGET_RSS_MIB),
        record(NAME, "stream_wall_s", wall, "s"),
        record(NAME, "stream_mb_per_s", size_mb / wall, "MB/s", better="higher"),
        record(NAME, "file_mb", size_mb, "MB", better="higher"),
        record(NAME, "records", n, "records", better="higher"),
        record(NAME, "turns", turns, "turns", better="higher"),
        record(NAME, "duplicate_sessions", len(reader.duplicates), "sessions"),
    ]
    if with_list:
        list_peak, list_wall = fresh_peak(lambda: load_longmemeval(path))
        out += [record(NAME, "list_peak_rss_mib", list_peak, "MiB"), record(NAME, "list_wall_s", list_wall, "s")]
    return out


def fresh_peak(build: Any) -> tuple[float, float]:
    """Peak RSS (MiB, from a fresh high-water mark) and wall seconds of ``build()``, whose result
    is dropped: the cost of holding everything at once, beside a streamed figure."""
    from vismem.core.peakmem import reset_peak, self_peak_mib

    gc.collect()
    reset_peak()
    t0 = time.perf_counter()
    held = build()
    peak, wall = self_peak_mib(), time.perf_counter() - t0
    del held
    return peak, wall


@benchmark(NAME, "stream a synthetic LongMemEval_M-sized file ($VISMEM_BENCH_LME_BYTES, default 2.7 GB) "
           "record by record: peak RSS <= 2 GB")
def longmemeval_m_load() -> list[dict[str, Any]]:
    target = int(float(os.environ.get("VISMEM_BENCH_LME_BYTES") or DEFAULT_BYTES))
    return measure_synthetic(NAME, "longmemeval_m_synthetic", target, measure)


def measure_synthetic(name: str, stem: str, target: int, measure: Any) -> list[dict[str, Any]]:
    """``measure(path)`` of a synthetic LongMemEval file of about ``target`` bytes, written into a
    temp dir (or reused from ``$VISMEM_BENCH_CACHE/<name>``), plus the time its writing took."""
    cache = os.environ.get("VISMEM_BENCH_CACHE")
    with tempfile.TemporaryDirectory(prefix=f"vismem-bench-{name}-") as tmp:
        root = Path(cache) / name if cache else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        path = synthetic_file(root / f"{stem}_{target}.json", target)
        write_s = time.perf_counter() - t0
        return measure(path) + [record(name, "setup_write_s", write_s, "s")]
