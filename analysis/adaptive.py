"""Adaptive probing's stopping rule and its simulation (pure; ``docs/adaptive-probing.md``).

A *unit* is one cache unit of the probes stage: every probe of one (chain, recall session j) for
one architecture. A *block* is one back-end: its units (chain, j) are drawn in one seeded random
order shared by every architecture, so any two architectures are scored on the same units (the
report's common probe set and its paired contrasts stay whole). A *cell* is (back-end, J,
architecture): the units with ``j < J``. After every batch a cell is

* ``width``: its TSR confidence sequence (:mod:`vismem.analysis.sequential`, level ``alpha``,
  without-replacement: the target is the exhaustive run's TSR) is at most ``width`` wide;
* ``decided``: it is one side of the headline contrast (``contrast``: A vs B) and the confidence
  sequence of the paired difference A - B excludes 0;
* ``exhausted``: every eligible unit is scored; else ``open``.

A block stops when none of its main-study cells is open. Intervals are anytime-valid, so the
rule may look after every batch and stop whenever it likes without losing coverage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import polars as pl

from vismem.analysis.sequential import confidence_sequence

#: Columns of the per-unit frame :func:`cell_status` reads.
UNIT_COLUMNS = ("backend", "architecture", "study", "chain", "j", "draw", "n", "correct")
STATUS_SCHEMA = {"backend": pl.String, "J": pl.Int64, "architecture": pl.String, "kind": pl.String,
                 "study": pl.String, "units_probed": pl.Int64, "units_eligible": pl.Int64,
                 "probes_probed": pl.Int64, "probes_eligible": pl.Int64, "estimate": pl.Float64,
                 "low": pl.Float64, "high": pl.Float64, "reason": pl.String}


@dataclass(frozen=True)
class Rule:
    """The stopping rule's settings (``probes.adaptive`` of a run config)."""

    width: float = 0.1
    alpha: float = 0.05
    batch: int = 32
    min_units: int = 32
    contrast: tuple[str, str] | None = None
    grid: int = 401


def cell_status(units: pl.DataFrame, rule: Rule, Js: Sequence[int]) -> pl.DataFrame:
    """Every (back-end, J, architecture) cell's interval and stopping reason, plus one
    ``contrast`` row per (back-end, J) for ``rule.contrast``.

    ``units``: one row per eligible unit (:data:`UNIT_COLUMNS`; ``correct`` null when not scored,
    ``draw`` its place in the block's order, ``j`` its 0-based recall session).
    """
    rows: list[dict] = []
    for (backend,), block in units.group_by(["backend"], maintain_order=True):
        for J in Js:
            cells = block.filter(pl.col("j") < J).sort("draw")
            if cells.height == 0:
                continue
            contrast = _contrast_row(cells, rule, backend, J)
            if contrast is not None:
                rows.append(contrast)
            decided = contrast is not None and contrast["reason"] == "decided"
            for (arch,), cell in cells.group_by(["architecture"], maintain_order=True):
                side = rule.contrast is not None and arch in rule.contrast
                rows.append(_tsr_row(cell, rule, backend, J, arch, decided and side))
    return pl.DataFrame(rows, schema=STATUS_SCHEMA).sort("backend", "J", "kind", "architecture")


def _tsr_row(cell: pl.DataFrame, rule: Rule, backend: str, J: int, arch: str, decided: bool) -> dict:
    scored = cell.filter(pl.col("correct").is_not_null())
    n_all = cell["n"].cast(pl.Float64).to_numpy()
    c, n = scored["correct"].cast(pl.Float64).to_numpy(), scored["n"].cast(pl.Float64).to_numpy()
    lo, hi = _interval(c, n, n_all, rule, 0.0, 1.0)
    reason = _reason(scored.height, cell.height, hi - lo, rule, decided)
    return {"backend": backend, "J": J, "architecture": arch, "kind": "tsr", "study": cell["study"][0],
            "units_probed": scored.height, "units_eligible": cell.height, "probes_probed": int(n.sum()),
            "probes_eligible": int(n_all.sum()), "estimate": float(c.sum() / n.sum()) if n.sum() else None,
            "low": lo, "high": hi, "reason": reason}


def _contrast_row(cells: pl.DataFrame, rule: Rule, backend: str, J: int) -> dict | None:
    """The paired difference A - B over the units both are eligible for, in draw order."""
    if rule.contrast is None:
        return None
    a, b = rule.contrast
    key = ["chain", "j"]
    pa = cells.filter(pl.col("architecture") == a).select(*key, "draw", "n", pl.col("correct").alias("ca"))
    pb = cells.filter(pl.col("architecture") == b).select(*key, pl.col("correct").alias("cb"))
    pairs = pa.join(pb, on=key, how="inner").sort("draw")
    if pairs.height == 0:
        return None
    both = pairs.filter(pl.col("ca").is_not_null() & pl.col("cb").is_not_null())
    d = (both["ca"] - both["cb"]).cast(pl.Float64).to_numpy()
    n, n_all = both["n"].cast(pl.Float64).to_numpy(), pairs["n"].cast(pl.Float64).to_numpy()
    lo, hi = _interval(d, n, n_all, rule, -1.0, 1.0)
    done = both.height == pairs.height
    decided = both.height >= min(rule.min_units, pairs.height) and (lo > 0 or hi < 0)
    return {"backend": backend, "J": J, "architecture": f"{a} − {b}", "kind": "contrast", "study": "main",
            "units_probed": both.height, "units_eligible": pairs.height, "probes_probed": int(n.sum()),
            "probes_eligible": int(n_all.sum()), "estimate": float(d.sum() / n.sum()) if n.sum() else None,
            "low": lo, "high": hi, "reason": "decided" if decided else ("exhausted" if done else "open")}


def _interval(c: np.ndarray, n: np.ndarray, n_all: np.ndarray, rule: Rule, lower: float,
              upper: float) -> tuple[float, float]:
    if c.size == 0:
        return lower, upper
    seq = confidence_sequence(c[None, :], n[None, :], lower=lower, upper=upper, population=n_all.size,
                              total_size=float(n_all.sum()), alpha=rule.alpha, grid=rule.grid,
                              checkpoints=[c.size], scale=float(n_all.max()))
    return float(seq.low[0, 0]), float(seq.high[0, 0])


def _reason(probed: int, eligible: int, width: float, rule: Rule, decided: bool) -> str:
    if probed >= eligible:
        return "exhausted"
    if probed < min(rule.min_units, eligible):
        return "open"
    if width <= rule.width:
        return "width"
    return "decided" if decided else "open"


def open_blocks(status: pl.DataFrame) -> list[str]:
    """Back-ends with a main-study TSR cell still open (an undecided contrast holds nothing: it
    only lets its two cells stop before their width is reached)."""
    return sorted(status.filter((pl.col("kind") == "tsr") & (pl.col("study") == "main")
                                & (pl.col("reason") == "open"))["backend"]
                  .unique().to_list())


def units_from_probes(probes: pl.DataFrame, *, seed: int = 0, scored: int | None = None) -> pl.DataFrame:
    """The per-unit frame of an exhaustive ``probes`` table (its longest J per back-end): one row
    per (back-end, architecture, chain, recall session) with its probe count and correct count,
    each back-end's units in a seeded draw order; only the first ``scored`` draws keep their
    ``correct`` (None: all). What an adaptive run would have seen of an exhaustive one."""
    top = probes.filter(pl.col("J") == pl.col("J").max().over("backend"))
    units = (top.group_by("backend", "architecture", "study", pl.col("seed").alias("chain"),
                          (pl.col("recall_session") - 1).alias("j"))
             .agg(pl.len().alias("n"), pl.col("correct").cast(pl.Int64).sum().alias("correct"))
             .sort("backend", "architecture", "chain", "j"))
    parts = []
    for i, ((backend,), block) in enumerate(units.group_by(["backend"], maintain_order=True)):
        slots = block.select("chain", "j").unique().sort("chain", "j")
        slots = slots.with_columns(pl.Series("draw", np.argsort(draw_order(slots.height, seed, i))))
        parts.append(block.join(slots, on=["chain", "j"]))
    out = pl.concat(parts) if parts else units.with_columns(pl.lit(0, pl.Int64).alias("draw"))
    if scored is not None:
        out = out.with_columns(pl.when(pl.col("draw") < scored).then(pl.col("correct")).alias("correct"))
    return out.select(*UNIT_COLUMNS)


def marks(status: pl.DataFrame) -> pl.DataFrame:
    """The report's view of an ``adaptive`` table: per cell ``units`` and ``probes`` as
    "probed / eligible", the estimate with its interval, and the stopping reason."""
    def frac(a: str, b: str) -> pl.Expr:
        return pl.format("{} / {}", pl.col(a), pl.col(b)).alias(a.split("_")[0])

    run = ["run"] if "run" in status.columns else []  # a report over several runs names each cell's run
    return (status.sort(*run, "backend", "J", "kind", "architecture", descending=[False] * len(run) + [False, False, True, False])
            .select(*run, "backend", "J", "architecture", frac("units_probed", "units_eligible"),
                    frac("probes_probed", "probes_eligible"), "estimate", "low", "high", "reason"))


def draw_order(n_units: int, seed: int, *stream: int) -> np.ndarray:
    """The seeded random order of a block's ``n_units`` units (a permutation of their indices)."""
    from vismem.analysis.bootstrap import seeded_rng

    return seeded_rng(seed, 41, *stream).permutation(n_units)


def checkpoints(n_units: int, rule: Rule) -> list[int]:
    """Draw counts after which the rule looks: ``min_units``, then every ``batch``, and the end."""
    first = min(max(rule.min_units, 1), n_units)
    return sorted({*range(first, n_units + 1, max(rule.batch, 1)), n_units})


__all__ = ["Rule", "cell_status", "units_from_probes", "marks", "open_blocks", "draw_order", "checkpoints", "UNIT_COLUMNS", "STATUS_SCHEMA"]
