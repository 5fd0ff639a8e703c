"""``memshot-lme-memory``: the memshot stage's dataset path on a 1 GB LongMemEval-format file
within 1.5 GB of peak RSS (issue 38).

Setup (not measured): a synthetic LongMemEval_M-shaped file (:mod:`vismem.bench.longmemeval_load`'s
shape: ~5 MB records of ~500 sessions drawn from one pool) of ``$VISMEM_BENCH_LME_STAGE_BYTES``
(default 1e9), in a temp dir or ``$VISMEM_BENCH_CACHE``.

Measured, in this process from a fresh high-water mark: what the stage does with the file before
any shot is drawn -- :func:`vismem.pipelines.memshot.render.load_conversations` (the stage's own
loader: records parsed one at a time, pooled sessions shared) and every wave of the render job's
input (:func:`vismem.pipelines.memshot.sessions.session_waves`: each session as the JSON row a
render task receives), each wave dropped once built as the job drops it once rendered
(``peak_rss_mib``, target 1.5 GB = 1430 MiB). Drawing the shots of a 1 GB dialogue file takes
hours on two cores and runs in Ray workers, one batch of sessions each, so it is not part of
this figure. For comparison, the same rows built as one list, as the stage did before
(``one_list_peak_rss_mib``, no target).
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

from vismem.bench.harness import benchmark, record

NAME = "memshot-lme-memory"
DEFAULT_BYTES = int(1e9)
#: 1.5 GB (the issue's bound) in MiB.
TARGET_PEAK_MIB = 1.5e9 / (1 << 20)


def measure(path: Path, *, wave_bytes: int | None = None, with_list: bool = True) -> list[dict[str, Any]]:
    """The benchmark's records for the LongMemEval file at ``path`` (see the module doc)."""
    from vismem.core.peakmem import reset_peak, self_peak_mib
    from vismem.pipelines.memshot.config import MemShotConfig
    from vismem.pipelines.memshot.render import load_conversations
    from vismem.pipelines.memshot.sessions import session_rows, session_waves

    cfg = MemShotConfig(dataset="longmemeval", dataset_path=str(path))
    gc.collect()
    reset_peak()
    start = self_peak_mib()  # the fresh high-water mark: what the process held before
    t0 = time.perf_counter()
    convs = load_conversations(cfg, path.parent)
    loaded = self_peak_mib()
    waves = rows = biggest = 0
    for wave in session_waves(convs, wave_bytes=wave_bytes):
        waves += 1
        rows += len(wave)
        biggest = max(biggest, sum(len(r["session_json"]) for r in wave))
        del wave
    out = [
        record(NAME, "peak_rss_mib", self_peak_mib(), "MiB", target=TARGET_PEAK_MIB),
        record(NAME, "start_rss_mib", start, "MiB"),
        record(NAME, "after_load_peak_rss_mib", loaded, "MiB"),
        record(NAME, "wall_s", time.perf_counter() - t0, "s"),
        record(NAME, "file_mb", path.stat().st_size / 1e6, "MB", better="higher"),
        record(NAME, "records", len(convs), "records", better="higher"),
        record(NAME, "sessions", rows, "sessions", better="higher"),
        record(NAME, "waves", waves, "waves"),
        record(NAME, "largest_wave_mb", biggest / 1e6, "MB"),
    ]
    if with_list:
        from vismem.bench.longmemeval_load import fresh_peak

        out.append(record(NAME, "one_list_peak_rss_mib", fresh_peak(lambda: session_rows(convs))[0], "MiB"))
    return out


@benchmark(NAME, "the memshot stage's dataset path (load + every render-input wave) on a synthetic 1 GB "
           "LongMemEval file ($VISMEM_BENCH_LME_STAGE_BYTES): peak RSS <= 1.5 GB")
def memshot_lme_memory() -> list[dict[str, Any]]:
    from vismem.bench.longmemeval_load import measure_synthetic

    target = int(float(os.environ.get("VISMEM_BENCH_LME_STAGE_BYTES") or DEFAULT_BYTES))
    return measure_synthetic(NAME, "longmemeval_synthetic", target, measure)
