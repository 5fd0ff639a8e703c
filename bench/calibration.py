"""The machine's calibration unit: a short fixed workload `vismem bench` runs once per invocation.

An absolute time means little off a fixed machine (issue 43: the same work took 1.9x as long on a
machine of the same kind with slower cores), so a benchmark without a peer to race states its
target as a multiple of this unit measured in the same run (``catalogue wall <= N x calibration
unit``). The workload is three parts of the kinds of work the benchmarks do -- a CPU-bound Python
loop, a NumPy kernel (a sort: one thread, so BLAS's thread count does not enter) and a PNG
encode with Pillow's zlib -- each repeated and its fastest repeat kept (the least disturbed by
other processes on a shared machine). ``unit_s`` is the sum of the three fastest repeats, about
0.17 s on the machine the README's figures came from; the whole calibration takes about 1-3 s.

Not to be confused with ``serve-throughput`` (:mod:`vismem.bench.calibrate`), which measures a
served model for ``vismem plan``.
"""

from __future__ import annotations

import io
import time
from typing import Any, Callable, Literal

import numpy as np

from vismem.bench.records import record

NAME = "calibration"
#: Bumped whenever the workload changes: ratios against different workloads do not compare.
VERSION = 1
REPEATS = 5
#: The metric every calibration-relative ratio divides by.
UNIT = (NAME, "unit_s")

_LOOP_N = 2_000_000
_SORT_N = 3_000_000
_PNG_SIDE = 1024


def python_loop() -> int:
    """Integer arithmetic and branching in the interpreter: what drives layout, replay and agents."""
    acc = 0
    for i in range(_LOOP_N):
        acc = (acc + i * i) % 1_000_003 if i & 1 else acc ^ i
    return acc


def _sort_input() -> np.ndarray:
    return np.random.default_rng(0).random(_SORT_N)


def numpy_sort(data: np.ndarray) -> float:
    """One single-threaded NumPy kernel over a fixed array."""
    return float(np.sort(data)[_SORT_N // 2])


def _png_input() -> Any:
    from PIL import Image

    rng = np.random.default_rng(1)
    # Flat bands with a little noise: compresses like a rendered page, not like pure noise.
    base = np.repeat(np.arange(_PNG_SIDE, dtype=np.uint8)[:, None] // 40 * 16, _PNG_SIDE, axis=1)
    noisy = base + (rng.random((_PNG_SIDE, _PNG_SIDE)) < 0.05).astype(np.uint8) * 50
    return Image.fromarray(np.stack([noisy, base, 255 - base], axis=-1), "RGB")


def png_encode(image: Any) -> int:
    """Pillow's own PNG writer (zlib level 6) on a fixed image."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=6)
    return buf.tell()


def fastest(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    """Seconds of ``fn``'s fastest of ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(repeats: int = REPEATS) -> dict[str, float]:
    """The three parts' fastest seconds and their sum, ``unit_s``."""
    data, image = _sort_input(), _png_input()
    parts = {"python_loop_s": fastest(python_loop, repeats), "numpy_sort_s": fastest(lambda: numpy_sort(data), repeats),
             "png_encode_s": fastest(lambda: png_encode(image), repeats)}
    return {**parts, "unit_s": sum(parts.values())}


def calibration_records(repeats: int = REPEATS) -> list[dict[str, Any]]:
    """The calibration's records (name ``calibration``); ``unit_s`` is what ratios divide by."""
    t0 = time.perf_counter()
    m = measure(repeats)
    recs = [record(NAME, k, v, "s") for k, v in m.items()]
    recs.append(record(NAME, "wall_s", time.perf_counter() - t0, "s"))
    return [{**r, "calibration_version": VERSION, "repeats": repeats} for r in recs]


#: The calibration unit on the machine the README's figures came from (2 cores, AMD EPYC; 0.16-0.18 s
#: at load ~1.7 on 2026-12-07, 0.25-0.33 s while another test run loaded it to 10-15): the old
#: absolute targets divided by it are the ratio targets, so a target means on that machine what
#: it meant before.
REFERENCE_UNIT_S = 0.17


def units(target_s: float) -> float:
    """``target_s`` seconds on the reference machine in calibration units (two significant digits)."""
    return float(f"{target_s / REFERENCE_UNIT_S:.2g}")


def per_unit(name: str, of: str, *, target_s: float, better: Literal["lower", "higher"] = "lower") -> dict[str, Any]:
    """A ratio record: ``of`` (a time of benchmark ``name``) over this run's calibration unit, with
    the target ``target_s`` seconds on the reference machine expressed in units."""
    from vismem.bench.ratios import ratio

    return ratio(name, f"{of} / calibration unit", of, UNIT, target=units(target_s), better=better)
