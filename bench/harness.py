"""The benchmark harness: a registry of named benchmarks, each returning metric records.

A record is ``{"name", "metric", "value", "unit", "target", "better", "machine", "load"}``;
``target`` is the goal from the issue that introduced the benchmark (None when there is none) and
``load`` the 1-minute load average when it was measured (the machine is shared: a figure taken at
load 5 on 2 cores is not one taken at load 1). Every benchmark also gets two records from the
harness itself: ``wall`` (its whole run) and ``peak memory`` (PSS of this process and of every
process it started, e.g. a local Ray; :mod:`vismem.core.peakmem`).
Benchmarks register themselves in modules listed in ``BENCH_MODULES``.

A goal on a time is never an absolute target (issue 43: a slower machine of the same kind misses
it for work that did not get slower): it is a ratio record (:mod:`vismem.bench.ratios`) over a
peer measured in the same run or over the calibration unit (:mod:`vismem.bench.calibration`)
that :func:`run_benchmarks` measures once per invocation and records first.
"""

from __future__ import annotations

import importlib
import json
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# The records themselves live in a leaf module (ratios and the calibration build them too); they
# are re-exported here, where every benchmark has always imported them from.
from vismem.bench.records import TIME_UNITS, load, machine, meets, record, timed_unit  # noqa: F401

#: Modules that define benchmarks; a module that has not landed yet is skipped.
BENCH_MODULES = (
    "vismem.bench.store_roundtrip",
    "vismem.bench.memshot_render",
    "vismem.bench.memshot_ocr",
    "vismem.bench.catalog",
    "vismem.bench.storefront",
    "vismem.bench.encode",
    "vismem.bench.stats",
    "vismem.bench.memory_replay",
    "vismem.bench.probes",
    "vismem.bench.adaptive",
    "vismem.bench.pocket_clip",
    "vismem.bench.scaling",
    "vismem.bench.cluster",
    "vismem.bench.longmemeval_load",
    "vismem.bench.memshot_lme_memory",
    "vismem.bench.fleet",
    "vismem.bench.trajectory_viewer",
    "vismem.bench.sample_viewer",
    "vismem.bench.engine",
    "vismem.bench.suite",
    "vismem.bench.calibrate",
    "vismem.bench.plancheck",
    "vismem.bench.plancheck_ray",
    "vismem.bench.plancheck_serve",
)


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    fn: Callable[[], list[dict[str, Any]]]


BENCHMARKS: dict[str, Benchmark] = {}


def benchmark(name: str, description: str) -> Callable[[Callable[[], list[dict[str, Any]]]], Callable]:
    """Register ``fn() -> list[record]`` (build records with ``record``)."""

    def deco(fn: Callable[[], list[dict[str, Any]]]) -> Callable:
        BENCHMARKS[name] = Benchmark(name, description, fn)
        return fn

    return deco


def renderer_cpu(page: Any) -> Callable[[], float]:
    """A clock of a Playwright page's renderer process CPU seconds (Chrome's ``ProcessTime``
    metric): read it before and after a step for what the step cost the browser, whatever else
    the machine runs -- on a shared machine a page's wall time is mostly its wait for a core."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable", {"timeDomain": "threadTicks"})

    def now() -> float:
        return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "ProcessTime")

    return now


def _load() -> None:
    for mod in BENCH_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as err:
            if err.name != mod:
                raise


def run_benchmarks(names: list[str], *, calibrate: bool = True) -> list[dict[str, Any]]:
    """Run benchmarks by name; a failing one yields an ``error`` record instead of aborting all.

    The calibration's records come first (``calibrate``: once per invocation); each benchmark
    ends with its ``wall`` and ``peak memory`` records (see the module doc); ratio records are
    resolved over the whole run's records at the end.
    """
    from vismem.bench.ratios import resolve
    from vismem.core.peakmem import PeakWatch

    _load()
    out: list[dict[str, Any]] = []
    if calibrate:
        from vismem.bench.calibration import calibration_records

        out.extend(calibration_records())
        unit = next(r["value"] for r in out if r["metric"] == "unit_s")
        print(f"[bench] calibration unit {unit:.3f} s (load {load()})", flush=True)
    for name in names:
        b = BENCHMARKS[name]
        t0 = time.perf_counter()
        with PeakWatch(interval_s=0.25) as watch:
            try:
                out.extend(b.fn())
            except Exception as err:  # report and continue with the next benchmark
                rec = record(name, "error", float("nan"), "")
                rec["error"] = f"{type(err).__name__}: {err}"
                rec["traceback"] = traceback.format_exc(limit=5)
                out.append(rec)
        wall = time.perf_counter() - t0
        out.append(record(name, "wall", wall, "s"))
        out.append(record(name, "peak memory", watch.tree_peak_mib, "MiB"))
        out[-1]["peak_rss_mib"] = round(watch.self_peak_mib, 1)  # this process alone
        print(f"[bench] {name} finished in {wall:.1f}s, peak {watch.tree_peak_mib:,.0f} MiB", flush=True)
    return resolve(out)


def print_table(records: list[dict[str, Any]]) -> None:
    """The records as a table: a ratio's two absolute figures beside it (``of / over``)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from vismem.bench.ratios import describe

    t = Table(title=f"vismem benchmarks — {machine()}")
    for col in ("benchmark", "metric", "value", "unit", "target", "ok", "of / over", "load"):
        t.add_column(col, justify="right" if col in ("value", "target", "load") else "left")
    for r in records:
        ok = meets(r)
        # escaped: a metric such as ``p50_ms[screenshot]`` is not rich markup
        t.add_row(escape(r["name"]), escape(r["metric"]), escape(r.get("error") or f"{r['value']:.4g}"), r["unit"],
                  "" if r["target"] is None else f"{'≤' if r['better'] == 'lower' else '≥'}{r['target']:g}",
                  "" if ok is None else ("yes" if ok else "NO"), describe(r),
                  "" if r.get("load") is None else f"{r['load']:.1f}")
    Console(width=160).print(t)


def write_records(records: list[dict[str, Any]], path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(records, indent=2) + "\n")


def load_all() -> dict[str, Benchmark]:
    _load()
    return BENCHMARKS
