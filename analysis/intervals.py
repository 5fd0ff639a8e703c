"""95% intervals for every rate the report shows, and the wide-table plumbing to show them.

DMV-Bench rates already carry chain-cluster and probe-level CIs (:mod:`vismem.analysis.dmv`);
:func:`ci_bounds` picks the interval a table shows (cluster where defined, probe-level
otherwise). MemShot rates (Acc, F1, recall@k, hit@k) are means over questions;
:func:`mean_ci` gives their question-level percentile bootstrap. Groups with the same number of
rows share one resample matrix, drawn from ``(seed, n)``, so paired groups (every variant and k
over the same questions, ordered by ``order``) see the same resampled questions.

CI columns are named ``"<column> lo"`` / ``"<column> hi"`` (:func:`ci_names`); the renderer
shows them inside the value's cell and the CSV keeps them as columns.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from vismem.analysis.bootstrap import N_RESAMPLES, PERCENTILES, seeded_rng

#: Resample-matrix cells per chunk (bounds memory: 2M float64 = 16 MB).
_CHUNK_CELLS = 2_000_000


def ci_names(col: str) -> tuple[str, str]:
    """The names of ``col``'s interval columns."""
    return f"{col} lo", f"{col} hi"


def ci_bounds(cells: pl.DataFrame) -> pl.DataFrame:
    """``low``/``high`` for rate cells: the chain-cluster CI, or the probe-level one where the
    cluster CI is undefined (a single chain)."""
    def pick(cl: str, nv: str) -> pl.Expr:
        c = pl.col(cl)
        return pl.when(c.is_null() | c.is_nan()).then(pl.col(nv)).otherwise(c)

    return cells.with_columns(pick("cluster_low", "naive_low").alias("low"),
                              pick("cluster_high", "naive_high").alias("high"))


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CIs of the column means of ``values`` ``(n, C)`` under iid row resampling."""
    n = values.shape[0]
    rng = seeded_rng(seed, 7, n)
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    stats = []
    done = 0
    while done < n_resamples:
        b = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, (b, n))
        flat = idx + (np.arange(b, dtype=np.int64) * n)[:, None]
        w = np.bincount(flat.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        stats.append(w @ values / n)
        done += b
    lo, hi = np.percentile(np.vstack(stats), PERCENTILES, axis=0)
    return lo, hi


def mean_ci(df: pl.DataFrame, by: Sequence[str], value: str, *, order: Sequence[str] = (),
            n_resamples: int = N_RESAMPLES, seed: int = 0) -> pl.DataFrame:
    """Per ``by`` group: ``n`` (non-null values), ``mean``, ``low``, ``high`` of ``value``.

    ``value`` may be Boolean (a rate) or numeric in [0, 1]; nulls are left out (e.g. unjudged
    answers). Groups with fewer than two values get null bounds.
    """
    by = [c for c in by if c in df.columns]
    schema = {**{c: df.schema[c] for c in by}, "n": pl.Int64, "mean": pl.Float64, "low": pl.Float64,
              "high": pl.Float64}
    rows = df.filter(pl.col(value).is_not_null())
    if rows.height == 0:
        return pl.DataFrame(schema=schema)
    rows = rows.with_columns(pl.col(value).cast(pl.Float64).alias("_v"))
    sort_cols = [c for c in order if c in rows.columns]
    if sort_cols:
        rows = rows.sort(sort_cols)
    groups = rows.group_by(by, maintain_order=True).agg(pl.col("_v")) if by else \
        pl.DataFrame({"_v": [rows["_v"].to_list()]})
    vals = [np.asarray(v, dtype=np.float64) for v in groups["_v"].to_list()]
    lo = np.full(len(vals), np.nan)
    hi = np.full(len(vals), np.nan)
    by_n: dict[int, list[int]] = {}
    for i, v in enumerate(vals):
        if v.size >= 2:
            by_n.setdefault(v.size, []).append(i)
    for n, idx in by_n.items():
        mat = np.stack([vals[i] for i in idx], axis=1)
        lo[idx], hi[idx] = _bootstrap_means(mat, n_resamples, seed)
    out = groups.drop("_v").with_columns(
        pl.Series("n", [v.size for v in vals], dtype=pl.Int64),
        pl.Series("mean", [float(v.mean()) for v in vals], dtype=pl.Float64),
        pl.Series("low", lo, dtype=pl.Float64).fill_nan(None),
        pl.Series("high", hi, dtype=pl.Float64).fill_nan(None))
    return out.select(list(schema)).cast(schema)


def attach(wide: pl.DataFrame, long: pl.DataFrame, index: Sequence[str], on: str | None,
           name: str, *, low: str = "low", high: str = "high") -> tuple[pl.DataFrame, dict[str, tuple[str, str]]]:
    """Join ``long``'s bounds onto ``wide`` as ``"<col> lo"/"<col> hi"`` columns.

    ``on`` is the long column whose values became wide columns, and ``name`` the format of those
    columns (``"{} Acc"``, ``"r={}"``); ``on=None`` attaches to the single column ``name``.
    Returns the table and its ``{column: (lo column, hi column)}`` map (only columns present).
    """
    index = [c for c in index if c in wide.columns and c in long.columns]
    ci: dict[str, tuple[str, str]] = {}
    if long.height == 0:
        return wide, ci
    if on is None:
        col = name
        lo, hi = ci_names(col)
        part = long.select(*index, pl.col(low).alias(lo), pl.col(high).alias(hi))
        if col in wide.columns:
            ci[col] = (lo, hi)
            wide = wide.join(part, on=index, how="left", nulls_equal=True) if index else wide.with_columns(
                pl.lit(part[lo][0]).alias(lo), pl.lit(part[hi][0]).alias(hi))
        return wide, ci
    keyed = long.with_columns(pl.col(on).cast(pl.String).map_elements(name.format, return_dtype=pl.String)
                              .alias("_col"))
    for col in keyed["_col"].unique(maintain_order=True).to_list():
        if col not in wide.columns:
            continue
        lo, hi = ci_names(col)
        part = keyed.filter(pl.col("_col") == col).select(*index, pl.col(low).alias(lo), pl.col(high).alias(hi))
        wide = wide.join(part, on=index, how="left", nulls_equal=True)
        ci[col] = (lo, hi)
    return wide, ci
