"""The benchmark harness: a registry of named benchmarks, each returning metric records.

A record is ``{"name", "metric", "value", "unit", "target", "better", "machine"}``; ``target``
is the goal from the issue that introduced the benchmark (None when there is none).
Benchmarks register themselves in modules listed in ``BENCH_MODULES``.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

#: Modules that define benchmarks; a module that has not landed yet is skipped.
BENCH_MODULES = (
    "bench.store_roundtrip",
    "bench.memshot_render",
    "bench.memshot_ocr",
    "bench.catalog",
    "bench.storefront",
    "bench.encode",
    "bench.stats",
    "bench.memory_replay",
    "bench.probes",
    "bench.pocket_clip",
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


def machine() -> str:
    """A short description of this machine, stored in every record."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        mem = f", {pages * size / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    return f"{os.cpu_count()} cores{mem}, {cpu}, {platform.system()} py{platform.python_version()}"


def record(name: str, metric: str, value: float, unit: str, *, target: float | None = None,
           better: Literal["lower", "higher"] = "lower") -> dict[str, Any]:
    """One measured metric."""
    return {"name": name, "metric": metric, "value": float(value), "unit": unit, "target": target,
            "better": better, "machine": machine()}


def _load() -> None:
    for mod in BENCH_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as err:
            if err.name != mod:
                raise


def run_benchmarks(names: list[str]) -> list[dict[str, Any]]:
    """Run benchmarks by name; a failing one yields an ``error`` record instead of aborting all."""
    _load()
    out: list[dict[str, Any]] = []
    for name in names:
        b = BENCHMARKS[name]
        t0 = time.perf_counter()
        try:
            out.extend(b.fn())
        except Exception as err:  # report and continue with the next benchmark
            rec = record(name, "error", float("nan"), "")
            rec["error"] = f"{type(err).__name__}: {err}"
            rec["traceback"] = traceback.format_exc(limit=5)
            out.append(rec)
        print(f"[bench] {name} finished in {time.perf_counter() - t0:.1f}s", flush=True)
    return out


def meets(rec: dict[str, Any]) -> bool | None:
    """Whether a record meets its target (None when it has none)."""
    if rec.get("target") is None or rec.get("error"):
        return None
    return rec["value"] <= rec["target"] if rec["better"] == "lower" else rec["value"] >= rec["target"]


def print_table(records: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"vismem benchmarks — {machine()}")
    for col in ("benchmark", "metric", "value", "unit", "target", "ok"):
        t.add_column(col, justify="right" if col in ("value", "target") else "left")
    for r in records:
        ok = meets(r)
        t.add_row(r["name"], r["metric"], r.get("error") or f"{r['value']:.4g}", r["unit"],
                  "" if r["target"] is None else f"{'≤' if r['better'] == 'lower' else '≥'}{r['target']:g}",
                  "" if ok is None else ("yes" if ok else "NO"))
    Console(width=140).print(t)


def write_records(records: list[dict[str, Any]], path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(records, indent=2) + "\n")


def load_all() -> dict[str, Benchmark]:
    _load()
    return BENCHMARKS
