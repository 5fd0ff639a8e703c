"""Benchmark records: one measured metric each, with the machine and its load (a leaf module:
the harness, the ratios and the calibration all build them; :mod:`vismem.bench.harness`
re-exports them)."""

from __future__ import annotations

import functools
import math
import os
import platform
from typing import Any, Literal


@functools.cache  # read once a process: every record carries it
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


#: Units of time and of speed: a record in one of them may carry no target (state a ratio instead).
#: Seconds in each time unit a record may carry (ratios scale by it; a time takes no target).
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0, "h": 3600.0}
TIME_UNITS = frozenset(SECONDS)


def timed_unit(unit: str) -> bool:
    """Whether ``unit`` is a time or a rate over time (``s``, ``ms``, ``shots/s``, ``sessions/min``)."""
    return unit in TIME_UNITS or unit.endswith(("/s", "/min", "/h"))


def record(name: str, metric: str, value: float, unit: str, *, target: float | None = None,
           better: Literal["lower", "higher"] = "lower") -> dict[str, Any]:
    """One measured metric. A time (or a rate) takes no target: a machine's speed would decide
    whether it is met; state the goal as a :func:`vismem.bench.ratios.ratio` record instead."""
    if target is not None and timed_unit(unit):
        raise ValueError(f"{name} {metric}: a target on a time ({unit}) depends on the machine; "
                         "state it as a ratio over a peer or the calibration unit (vismem.bench.ratios.ratio)")
    return {"name": name, "metric": metric, "value": float(value), "unit": unit, "target": target,
            "better": better, "machine": machine(), "load": load()}


def load() -> float | None:
    """The 1-minute load average now (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def meets(rec: dict[str, Any]) -> bool | None:
    """Whether a record meets its target (None when it has none, or no value: an unresolved ratio)."""
    if rec.get("target") is None or rec.get("error") or math.isnan(rec["value"]):
        return None
    return rec["value"] <= rec["target"] if rec["better"] == "lower" else rec["value"] >= rec["target"]
