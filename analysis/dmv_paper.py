"""The DMV-Bench paper's own numbers, *quoted, not measured*, for a ``paper`` column beside ours.

Only numbers the paper states in its text are here (its table bodies are not in the text we
have, shared/papers/dmv-bench-paper.md): Table 2's Gemini J = 5 DualMem cell (82.7, from
Table 4's caption) with its n_r (2,762 probes, same caption) and the verbal baselines' 0 %
"everywhere" (§5) -- the rest of Table 2 is
stated only relatively (J = 50: DualMem +8.5 points over M2A-lite on Qwen, a draw on Gemini) or
as intervals (Table 9's MMA-lite J = 15 CIs), so it has no number here --
Table 4's ablation rows (§5 "Retrieval", "Injection", "Encoder"), Table 9's one interval the text
quotes (MMA-lite, Gemini J = 15: naive and cluster bounds), Table 10's J = 50 pilots
(App. H) and the bound its six exhaustive cells share (p <= 0.0059), and Table 3's sessions (its caption: 550 per back-end) and per-session breadth as §5
states it in words. Rates are proportions (the
report shows percent). A cell the paper gives no number for gets a null ``paper`` value, never a guess.
"""

from __future__ import annotations

import io
from typing import Sequence

import polars as pl

#: table, backend, J, architecture (variant name), alpha (documentation only), metric, value, note.
_CSV = """table,backend,J,architecture,alpha,metric,value,note
table2,gemini-2.5-flash,5,dualmem,,tsr,0.827,"25 chains, n_r = 2,762"
table2,gemini-2.5-flash,5,n_r,,n_r,2762,"Table 2's n_r row: the 25 chains' probes (Table 4's caption)"
table4,gemini-2.5-flash,5,dualmem,0.75,tsr,0.820,alpha sweep; 7-chain ablation subset (793 probes)
table4,gemini-2.5-flash,5,dualmem-vis,1.0,tsr,0.797,visual-only; 7-chain subset
table4,gemini-2.5-flash,5,dualmem-verb,0.0,tsr,0.651,verbal-only; 7-chain subset
table4,gemini-2.5-flash,5,dualmem-a0.5,0.5,tsr,0.789,injection block image+caption; 7-chain subset
table4,gemini-2.5-flash,5,dualmem-img,0.5,tsr,0.799,injection block image-only; 7-chain subset
table4,gemini-2.5-flash,5,dualmem-cap,0.5,tsr,0.720,injection block caption-only; 7-chain subset
table4,gemini-2.5-flash,5,dualmem-vis-img,1.0,tsr,0.793,visual retrieval x image; 7-chain subset
table4,gemini-2.5-flash,5,dualmem-vis-cap,1.0,tsr,0.691,visual retrieval x caption; 7-chain subset
table4-encoder,gemini-2.5-flash,5,dualmem-a0.5,0.5,tsr,0.796,encoder block SigLIP-2; full 25 chains
table4-encoder,gemini-2.5-flash,5,dualmem-clip,0.5,tsr,0.697,encoder block CLIP; full 25 chains
table9,gemini-2.5-flash,15,mma-lite,,naive_low,0.352,App. F: the largest naive-vs-cluster gap
table9,gemini-2.5-flash,15,mma-lite,,naive_high,0.364,App. F: the largest naive-vs-cluster gap
table9,gemini-2.5-flash,15,mma-lite,,cluster_low,0.313,App. F: the largest naive-vs-cluster gap
table9,gemini-2.5-flash,15,mma-lite,,cluster_high,0.394,App. F: the largest naive-vs-cluster gap
table10,qwen2.5-vl-7b,50,dualmem,,d_bar,0.0852,vs m2a-lite; 5 chains
table10,qwen2.5-vl-7b,50,dualmem,,p_value,0.0625,vs m2a-lite; 5 chains
table10,gemini-2.5-flash,50,dualmem,,d_bar,0.0045,vs m2a-lite; 5 chains
table10,gemini-2.5-flash,50,dualmem,,p_value,0.6875,vs m2a-lite; 5 chains
""" + "".join(f"table10,{b},{j},dualmem,,p_value_max,0.0059,\"vs m2a-lite; App. H: all six exhaustive cells p <= 0.0059\"\n"
              for b in ("qwen2.5-vl-7b", "gemini-2.5-flash") for j in (5, 10, 15))

#: The paper's two back-ends: a result's back-end label matches one when it contains its name.
BACKENDS = ("gemini-2.5-flash", "qwen2.5-vl-7b")


def quoted() -> pl.DataFrame:
    """Every quoted number, plus NoMemory and TextOnly at 0 in every Table 2 cell (§5)."""
    df = pl.read_csv(io.StringIO(_CSV), schema_overrides={"J": pl.Int64, "alpha": pl.Float64, "value": pl.Float64})
    zeros = pl.DataFrame([{"table": "table2", "backend": b, "J": j, "architecture": a, "alpha": None, "metric": "tsr",
                           "value": 0.0, "note": "verbal baseline, 0 % everywhere"}
                          for b in BACKENDS for j in (5, 10, 15, 50) for a in ("nomemory", "textonly")],
                         schema=df.schema)
    return pl.concat([df, zeros])


#: The bootstrap table's interval bounds the paper quotes (Table 9).
CI_BOUNDS = ("naive_low", "naive_high", "cluster_low", "cluster_high")


def with_paper_intervals(df: pl.DataFrame) -> pl.DataFrame:
    """The bootstrap table with ``paper <bound>`` columns for the intervals the paper quotes
    (Table 9); unchanged when no row has one (a local run's table keeps its columns)."""
    out = df
    for bound in CI_BOUNDS:
        out = with_paper(out, ("table9",), bound, name=f"paper {bound}")
    added = [f"paper {b}" for b in CI_BOUNDS]
    return out if any(out[c].null_count() < out.height for c in added) else df


def paper_backend(label: str) -> str | None:
    """The paper back-end a result's back-end label stands for (None: not one of the paper's)."""
    low = label.lower()
    return next((b for b in BACKENDS if b in low), None)


def with_paper(df: pl.DataFrame, tables: Sequence[str], metric: str, *, on: str = "architecture",
               name: str = "paper") -> pl.DataFrame:
    """``df`` with a ``name`` column: the paper's ``metric`` for the row's (back-end, J, ``on``), looked
    up in ``tables`` in order (the first that has the cell wins); null where the paper has none.
    ``on`` is ``df``'s column holding the architecture/variant name (``a`` for a paired test,
    ``source`` for the alpha sweep)."""
    rank = {t: i for i, t in enumerate(tables)}
    q = (quoted().filter((pl.col("metric") == metric) & pl.col("table").is_in(list(tables)))
         .with_columns(pl.col("table").replace_strict(rank, return_dtype=pl.Int64).alias("_rank"))
         .sort("_rank").unique(["backend", "J", "architecture"], keep="first", maintain_order=True)
         .select(pl.col("backend").alias("_pb"), "J", pl.col("architecture").alias(on), pl.col("value").alias(name)))
    if df.height == 0:
        return df.with_columns(pl.lit(None, pl.Float64).alias(name))
    mapped = df.with_columns(pl.col("backend").map_elements(paper_backend, return_dtype=pl.String).alias("_pb"))
    return mapped.join(q, on=["_pb", "J", on], how="left").drop("_pb")


def with_paper_wide(wide: pl.DataFrame, columns: dict[str, tuple[str, int]], tables: Sequence[str] = ("table2",),
                    metric: str = "tsr") -> tuple[pl.DataFrame, list[str]]:
    """A wide table (one row per architecture, one column per cell; ``columns`` maps each cell
    column to its ``(back-end, J)``) with a ``"<column> paper"`` column right after every cell
    column for which the paper states at least one number; returns the table and the paper
    columns added (none for back-ends that are not the paper's: such a table is unchanged)."""
    rows = [(col, b, J, a) for col, (b, J) in columns.items() if col in wide.columns
            for a in wide["architecture"].to_list()]
    if not rows:
        return wide, []
    frame = pl.DataFrame(rows, schema={"column": pl.String, "backend": pl.String, "J": pl.Int64,
                                       "architecture": pl.String}, orient="row")
    # The n_r row (probes per cell) quotes the paper's probe count, every other row ``metric``.
    is_nr = pl.col("architecture") == "n_r"
    long = pl.concat([with_paper(frame.filter(~is_nr), tables, metric),
                      with_paper(frame.filter(is_nr), tables, "n_r")])
    added: dict[str, str] = {}
    for col in columns:
        vals = long.filter(pl.col("column") == col)
        if vals.height and vals["paper"].drop_nulls().len():
            name = f"{col} paper"
            wide = wide.join(vals.select("architecture", pl.col("paper").alias(name)), on="architecture", how="left",
                             maintain_order="left")
            added[col] = name
    order = [c for col in wide.columns if col not in added.values() for c in (col, added.get(col)) if c]
    return wide.select(order), list(added.values())


#: §5 ("Why n_r varies") on Table 3, per paper back-end: the sessions Table 3 is over (its caption:
#: N = 550 per back-end), distinct products per session and the share of sessions that opened at
#: least three collections -- the last two stated in words ("roughly").
_ENCODING_PAPER = {"gemini-2.5-flash": (550, 11.0, 1.0), "qwen2.5-vl-7b": (550, 4.0, 0.5)}


def encoding_paper(st: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """Table 3 with ``paper sessions`` / ``paper products_mean`` / ``paper share_styles_ge3`` for the
    paper's back-ends (null for any other, e.g. a stand-in); unchanged when no row is one of them."""
    vals = [_ENCODING_PAPER.get(paper_backend(b) or "") for b in st["backend"].to_list()]
    if not any(vals):
        return st, False
    cols = [("paper sessions", pl.Int64), ("paper products_mean", pl.Float64), ("paper share_styles_ge3", pl.Float64)]
    return st.with_columns(pl.Series(name, [v[i] if v else None for v in vals], dtype=dtype)
                           for i, (name, dtype) in enumerate(cols)), True


#: §5 "Memory-bank and positional checks": on the main grid (J = 5, 10, 15, both back-ends) DualMem is
#: above all four baselines in all 48 bank-size bins and in 49 of the 53 encoding-position bins,
#: one of the four exceptions an exact tie.
_LEADER_PAPER = {"bins": 48, "leads": 48, "ties": 0, "bins_position": 53, "leads_position": 49, "ties_position": 1}
#: The row that totals the paper's main grid in the leader-bins table.
LEADER_TOTAL = "main grid total (paper back-ends, J = 5, 10, 15)"


def with_paper_leader(lead: pl.DataFrame, leader: str) -> pl.DataFrame:
    """The leader-bins table (:func:`vismem.analysis.dmv.leader_bins` of bank size, joined with the
    encoding-position one as ``*_position``) with one more row totalling the paper's main grid --
    its back-ends at J = 5, 10, 15 -- and a ``paper <column>`` beside each count on that row only
    (the paper states the totals, not per-cell counts). Unchanged unless the leader is DualMem and
    the run has such a cell."""
    if leader != "dualmem" or lead.height == 0:
        return lead
    grid = lead.filter(pl.col("backend").map_elements(paper_backend, return_dtype=pl.String).is_not_null()
                       & pl.col("J").is_in([5, 10, 15]))
    if grid.height == 0:
        return lead
    counts = [c for c in _LEADER_PAPER if c in lead.columns]
    total = grid.select(pl.lit(LEADER_TOTAL).alias("backend"), pl.lit(None, pl.Int64).alias("J"),
                        *[pl.col(c).sum() for c in counts])
    out = pl.concat([lead, total.cast({c: lead.schema[c] for c in total.columns})], how="diagonal_relaxed")
    is_total = pl.col("backend") == LEADER_TOTAL
    papers = [pl.when(is_total).then(pl.lit(_LEADER_PAPER[c])).otherwise(None).cast(pl.Int64).alias(f"paper {c}")
              for c in counts]
    order = [c for col in lead.columns for c in ([col, f"paper {col}"] if col in counts else [col])]
    return out.with_columns(papers).select(order)
