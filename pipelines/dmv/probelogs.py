"""What the recall agent's memory returned for each probe of a run, read from the probe cache.

The probes table (``results/probes.parquet``) scores a probe; what the architecture recalled for it
lives in the step log of its probe unit (:mod:`vismem.pipelines.dmv.probecache`), one list of
product hashes per step, best first. :func:`first_recalled` reads those logs for a whole table --
each unit once, on a few threads -- and gives every row the list its first step recalled: what the
memory returned for the probe's cue, as MemShot's top-k units are what retrieval returned for a
question (``vismem export``'s ``retrieved``).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from vismem.core.store import Store
    from vismem.pipelines.dmv.probecache import ProbeCache

__all__ = ["first_recalled"]

#: Store reads at once (each unit is a round trip on S3).
IO_THREADS = 8
_KEY = ("chain_slug", "seed", "arch_key", "probe_id", "recall_session", "J")


def _first_step(log: str | None) -> list[str] | None:
    steps = json.loads(log) if log else []
    return [str(h) for h in (steps[0].get("recalled") or [])] if steps else None


def first_recalled(store: "Store", probes: pl.DataFrame) -> list[list[str] | None]:
    """Per row of ``probes`` (a probes results table), the product hashes its first recall step
    recalled, best first; None where the table does not name its cache units (no ``chain_slug`` /
    ``arch_key`` columns: an older run) or the unit is no longer cached. A Monte Carlo probe is read
    from its ``mc<J>`` unit, an exhaustive one from ``ex``."""
    from vismem.pipelines.dmv.probecache import ProbeCache

    if probes.height == 0 or not set(_KEY) <= set(probes.columns):
        return [None] * probes.height
    caches = {k: ProbeCache(store, *k) for k in probes.select("chain_slug", "seed", "arch_key").unique().iter_rows()}
    with ThreadPoolExecutor(IO_THREADS, thread_name_prefix="probe-logs") as pool:
        done = dict(zip(caches, pool.map(lambda c: c.done_units(), caches.values())))

        def unit(cache: tuple, J: int, recall: int) -> tuple[str, int] | None:
            j = recall - 1  # units count recall sessions from 0
            return next((u for u in ((f"mc{J}", j), ("ex", j)) if u in done[cache]), None)

        # Per row: the cache, the unit holding the probe (None: not cached) and the probe id.
        where = [((slug, seed, key), unit((slug, seed, key), J, recall), pid) for slug, seed, key, pid, recall, J in
                 probes.select(*_KEY).iter_rows()]
        order = sorted({(c, u) for c, u, _ in where if u is not None})
        frames = pool.map(lambda cu: _rows(caches[cu[0]], cu[1]), order)
        found: dict[tuple, list[str] | None] = {}
        for (cache, u), rows in zip(order, frames):
            for pid, log in rows:
                found.setdefault((cache, u, pid), _first_step(log))
    return [found.get(w) for w in where]


def _rows(cache: "ProbeCache", unit: tuple[str, int]) -> list[tuple[str, str | None]]:
    """``(probe_id, log)`` of a unit; none for a damaged one (``vismem store verify`` names it)."""
    from vismem.core.cache import CacheDamaged

    try:
        return list(cache.read_rows(*unit).select("probe_id", "log").iter_rows())
    except CacheDamaged:
        return []
