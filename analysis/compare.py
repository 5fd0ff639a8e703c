"""Run-to-run comparison: metric deltas with paired bootstrap CIs and the items that flipped.

Pure functions over the result tables of two runs (as :func:`vismem.analysis.report.load_results`
returns them). Items are paired across the runs by their ids -- a MemShot question is
``(dataset, conversation_id, question_id)``, a DMV-Bench probe ``(seed, probe_id)`` -- and only
the items both runs scored in the same cell (variant and k, or backend, J and architecture) count.

The interval of a delta resamples the shared items *jointly* (the same draw for both runs), so
per-item agreement between the runs narrows it; DMV-Bench probes are resampled by chain (the
paper's cluster bootstrap), MemShot questions one by one. Draws come from
:func:`vismem.analysis.bootstrap.seeded_rng` of the seed and the cell's position, so the same
inputs and seed give the same intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import polars as pl

from vismem.analysis.bootstrap import N_RESAMPLES, PERCENTILES, resample_counts, seeded_rng

__all__ = ["MetricSpec", "SPECS", "compare_tables", "paired_delta", "paired_deltas", "flips"]

#: Resamples drawn per block: bounds the count matrix at ``_BLOCK x clusters`` floats.
_BLOCK = 1000


@dataclass(frozen=True)
class MetricSpec:
    """How one metric of one result kind is compared.

    ``cell``: columns naming a cell (those absent from a table are skipped); ``item``: columns
    pairing an item across runs; ``cluster``: the resampling unit (``None``: the item);
    ``binary``: the metric is a hit/miss, so items can flip.
    """

    kind: str
    metric: str
    label: str
    cell: tuple[str, ...]
    item: tuple[str, ...]
    cluster: str | None = None
    binary: bool = True


SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("probes", "correct", "TSR", ("backend", "J", "study", "variant", "alpha", "encoder", "architecture"),
               ("seed", "probe_id"), cluster="seed"),
    MetricSpec("memshot_answers", "judge_label", "Acc", ("dataset", "model", "variant", "k", "max_height"),
               ("conversation_id", "question_id")),
    MetricSpec("memshot_answers", "f1", "F1", ("dataset", "model", "variant", "k", "max_height"),
               ("conversation_id", "question_id"), binary=False),
    MetricSpec("memshot_recall", "hit", "hit@k", ("dataset", "embedder", "variant", "k", "max_height"),
               ("conversation_id", "question_id")),
    MetricSpec("memshot_recall", "recall", "recall@k", ("dataset", "embedder", "variant", "k", "max_height"),
               ("conversation_id", "question_id"), binary=False),
)


def _cluster_sums(d: np.ndarray, clusters: np.ndarray | None) -> tuple[tuple, np.ndarray, np.ndarray]:
    """``(labels, sums, counts)`` of the per-item differences ``d`` by cluster (an item each when None)."""
    if clusters is None:
        return tuple(range(d.size)), d, np.ones_like(d)
    labels, inv = np.unique(np.asarray(clusters), return_inverse=True)
    return tuple(labels.tolist()), np.bincount(inv, weights=d), np.bincount(inv).astype(np.float64)


def _intervals(sums: np.ndarray, counts: np.ndarray, n_resamples: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of ``(W @ S) / (W @ N)`` for ``(K, C)`` sums/counts sharing one draw ``W``."""
    k = sums.shape[0]
    if k < 2:
        nan = np.full(sums.shape[1], np.nan)
        return nan, nan
    stats = []
    for start in range(0, n_resamples, _BLOCK):
        w = resample_counts(k, min(_BLOCK, n_resamples - start), rng)
        stats.append((w @ sums) / (w @ counts))
    lo, hi = np.percentile(np.concatenate(stats), PERCENTILES, axis=0)
    return lo, hi


def paired_delta(a: np.ndarray, b: np.ndarray, clusters: np.ndarray | None = None, *,
                 n_resamples: int = N_RESAMPLES, seed: int | np.random.Generator | None = 0) -> tuple[float, float, float]:
    """``(delta, low, high)`` of ``mean(b) - mean(a)`` over paired items, with a paired bootstrap CI.

    ``clusters``: a label per item; whole clusters are drawn (the ratio of resampled sums, as
    :func:`vismem.analysis.bootstrap.cluster_ci`). ``None`` draws items. Fewer than two units
    give an undefined (NaN) interval.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    d = b - a
    _, sums, counts = _cluster_sums(d, clusters)
    lo, hi = _intervals(sums[:, None], counts[:, None], n_resamples, seeded_rng(seed))
    return float(d.mean()), float(lo[0]), float(hi[0])


def _prepare(df: pl.DataFrame, spec: MetricSpec, cell: Sequence[str], exclude_categories: Sequence[str]) -> pl.DataFrame:
    """One value per (cell, item): the metric as a float, null verdicts as Acc counts them."""
    if spec.kind == "memshot_answers":
        from vismem.analysis.memshot import with_outcome

        df = with_outcome(df.filter(~pl.col("category").is_in(list(exclude_categories))))
    if spec.kind == "probes" and "study" not in df.columns:
        df = df.with_columns(pl.lit("main").alias("study"))
    item = [c for c in spec.item if c in df.columns]
    if spec.kind.startswith("memshot") and "dataset" not in cell:
        item = ["dataset", *item]
    keep = [*cell, *item]
    extra = [c for c in ("question", "category", "target_cue", "target_url", "reach") if c in df.columns and c not in keep]
    return (df.filter(pl.col(spec.metric).is_not_null())
            .select(*keep, *extra, pl.col(spec.metric).cast(pl.Float64).alias("_v"))
            .unique(subset=keep, keep="first", maintain_order=True))


def _cell_columns(spec: MetricSpec, a: pl.DataFrame, b: pl.DataFrame) -> list[str]:
    cols = [c for c in spec.cell if c in a.columns and c in b.columns]
    if spec.kind == "probes" and "study" not in cols:
        cols.insert(2, "study")  # _prepare adds it to both
    return cols


def _paired(a: pl.DataFrame, b: pl.DataFrame, spec: MetricSpec,
            exclude_categories: Sequence[str]) -> tuple[pl.DataFrame, list[str], list[str]]:
    """The shared (cell, item) rows with ``a`` and ``b`` values side by side."""
    cell = _cell_columns(spec, a, b)
    pa = _prepare(a, spec, cell, exclude_categories)
    pb = _prepare(b, spec, cell, exclude_categories)
    item = [c for c in pa.columns if c not in cell and c != "_v" and c in pb.columns
            and c in (*spec.item, "dataset")]
    extra = [c for c in pa.columns if c not in (*cell, *item, "_v")]
    joined = pa.rename({"_v": "a"}).join(pb.select(*cell, *item, pl.col("_v").alias("b")), on=[*cell, *item],
                                         how="inner", nulls_equal=True)
    return joined.sort([*cell, *item], nulls_last=True), cell, [*item, *extra]


def paired_deltas(a: pl.DataFrame, b: pl.DataFrame, spec: MetricSpec, *, n_resamples: int = N_RESAMPLES,
                  seed: int = 0, exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Per cell of ``spec``: ``n`` shared items, means ``a`` / ``b``, ``delta`` = b - a with its
    paired 95% CI (``low``/``high``) and, for hit/miss metrics, ``lost`` (hit in A, miss in B)
    and ``gained`` (miss in A, hit in B). Cells with no shared item are left out."""
    joined, cell, item = _paired(a, b, spec, exclude_categories)
    # Cells over the same units (every variant and k of one question set, every architecture of one
    # chain set) share one resampling draw, as cluster_ci_many does: one matrix product per group.
    unit = spec.cluster or "_unit"
    if not spec.cluster:
        joined = joined.with_columns(pl.concat_str([pl.col(c).cast(pl.String) for c in item if c in spec.item
                                                    or c == "dataset"], separator="\x1f").alias("_unit"))
    rows, groups = [], {}
    for key, grp in joined.group_by(cell, maintain_order=True):
        va, vb = grp["a"].to_numpy(), grp["b"].to_numpy()
        labels, sums, counts = _cluster_sums(vb - va, grp[unit].to_numpy())
        groups.setdefault(labels, []).append((len(rows), sums, counts))
        row = dict(zip(cell, key))
        row.update(metric=spec.label, n=grp.height, a=float(va.mean()), b=float(vb.mean()),
                   delta=float((vb - va).mean()), low=None, high=None,
                   lost=int(((va > 0) & (vb <= 0)).sum()) if spec.binary else None,
                   gained=int(((va <= 0) & (vb > 0)).sum()) if spec.binary else None)
        rows.append(row)
    for g, members in enumerate(groups.values()):
        lo, hi = _intervals(np.stack([m[1] for m in members], axis=1), np.stack([m[2] for m in members], axis=1),
                            n_resamples, seeded_rng(seed, g))
        for (i, _, _), low, high in zip(members, lo, hi):
            rows[i]["low"], rows[i]["high"] = float(low), float(high)
    schema = {**{c: joined.schema[c] for c in cell}, "metric": pl.String, "n": pl.Int64, "a": pl.Float64,
              "b": pl.Float64, "delta": pl.Float64, "low": pl.Float64, "high": pl.Float64, "lost": pl.Int64,
              "gained": pl.Int64}
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return _paper_order(out, spec, cell)


def _paper_order(df: pl.DataFrame, spec: MetricSpec, cell: list[str]) -> pl.DataFrame:
    """Deltas in the papers' row order (architectures as Table 2 / 7, MemShot variants as Tables
    1-3), within the cell columns before that one, as the report shows them."""
    from vismem.analysis.paper_order import order_rows

    col = "architecture" if spec.kind == "probes" else "variant"
    if col not in cell:
        return df
    i = cell.index(col)
    return order_rows(df, col, "dmv" if spec.kind == "probes" else "memshot", before=cell[:i], after=cell[i + 1:],
                      family=None)


def flips(a: pl.DataFrame, b: pl.DataFrame, spec: MetricSpec, *,
          exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """The shared items whose hit/miss differs between the runs: the cell, the item, its text
    (question / cue where the table has it) and ``change`` (``hit→miss`` or ``miss→hit``)."""
    if not spec.binary:
        raise ValueError(f"{spec.label} is not a hit/miss metric")
    joined, cell, item = _paired(a, b, spec, exclude_categories)
    out = joined.filter((pl.col("a") > 0) != (pl.col("b") > 0)).with_columns(
        pl.lit(spec.label).alias("metric"),
        pl.when(pl.col("a") > 0).then(pl.lit("hit→miss")).otherwise(pl.lit("miss→hit")).alias("change"))
    return out.select("metric", *cell, *item, "change")


def _common_columns(a: pl.DataFrame, b: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both tables with the same columns (an optional column one run lacks is dropped)."""
    shared = [c for c in a.columns if c in b.columns]
    return a.select(shared), b.select(shared)


def compare_tables(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame], *, n_resamples: int = N_RESAMPLES,
                   seed: int = 0, exclude_categories: Sequence[str] = ("adversarial",)) -> dict[str, pl.DataFrame]:
    """Every metric both runs have: ``{kind: deltas}`` and ``{kind + "_flips": items}``.

    Kinds only one run has, or whose items the runs do not share, are absent from the result.
    """
    out: dict[str, pl.DataFrame] = {}
    for spec in SPECS:
        if spec.kind not in a or spec.kind not in b:
            continue
        ta, tb = _common_columns(a[spec.kind], b[spec.kind])
        if spec.metric not in ta.columns:
            continue
        d = paired_deltas(ta, tb, spec, n_resamples=n_resamples, seed=seed, exclude_categories=exclude_categories)
        if d.height == 0:
            continue
        out[spec.kind] = pl.concat([out[spec.kind], d], how="diagonal_relaxed") if spec.kind in out else d
        if spec.binary:
            f = flips(ta, tb, spec, exclude_categories=exclude_categories)
            key = spec.kind + "_flips"
            out[key] = pl.concat([out[key], f], how="diagonal_relaxed") if key in out else f
    return out
