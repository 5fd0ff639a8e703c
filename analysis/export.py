"""Per-sample export (like lm-evaluation-harness ``--log_samples``): one record per item and variant.

Pure functions over a run's result tables (and, for MemShot, its ranking ``memshot/ranked.parquet``).
Every record has the same leading fields, whichever benchmark it comes from:

``benchmark`` (memshot / dmv), ``item_id`` (question id / probe id), ``item`` (the question /
the probe's cue), ``variant`` (the MemShot retrieval variant / the DMV-Bench architecture), ``k``
(MemShot: units given to the VLM), ``retrieved`` (MemShot: the top-k unit ids, best first;
DMV-Bench: the products the probe's first recall step recalled, see below),
``prediction`` (the VLM's answer / the URL the recall agent ended on), ``gold`` (the gold answer
/ the target URL) and ``verdict`` (the judge's label / URL match; null when not judged), then the
table's own columns (category, F1, evidence hit, chain seed, reach, steps, ...).

A DMV-Bench probe's recalled memories live in its step log, not in the probes table: given a
``retrieved`` column (the product hashes its first recall step recalled, best first, as ``vismem
export`` reads them from the probe cache), a probe record carries it and ``target_rank``, the
1-based rank of the target product among them (null: not recalled); without it both are null.
"""

from __future__ import annotations

import io
import json
from typing import Any

import polars as pl

__all__ = ["LEAD", "dmv_samples", "memshot_samples", "sample_parts", "samples", "to_csv", "to_jsonl"]

#: The fields every record starts with.
LEAD = ("benchmark", "item_id", "item", "variant", "k", "retrieved", "prediction", "gold", "verdict")


def _retrieved(ranked: pl.DataFrame | None, pairs: pl.DataFrame) -> pl.DataFrame | None:
    """``(conversation_id, question_id, variant, k, retrieved)``: the top-k unit ids per pair."""
    if ranked is None or ranked.height == 0:
        return None
    keys = ["conversation_id", "question_id", "variant"]
    lists = ranked.sort([*keys, "rank"]).group_by(keys, maintain_order=True).agg(
        pl.col("unit_id").alias("_units"), pl.col("rank").alias("_ranks"))
    top = pairs.select(*keys, "k").unique(maintain_order=True).join(lists, on=keys, how="inner")
    return top.with_columns(
        pl.col("_units").list.gather(pl.int_ranges(0, pl.min_horizontal(pl.col("k"), pl.col("_units").list.len())))
        .alias("retrieved")).drop("_units", "_ranks")


def memshot_samples(answers: pl.DataFrame | None, recall: pl.DataFrame | None,
                    ranked: pl.DataFrame | None = None) -> pl.DataFrame:
    """One record per (question, variant, k[, max_height, model]) of the answers table, else of
    the recall table (a run without a VLM), with its evidence recall and retrieved unit ids."""
    base = answers if answers is not None and answers.height else recall
    if base is None or base.height == 0:
        return pl.DataFrame()
    keys = ["conversation_id", "question_id", "variant", "k"]
    df = base
    if base is answers and recall is not None and recall.height:
        rec = recall.select(*keys, "recall", "hit", *[c for c in ("n_evidence",) if c in recall.columns])
        # Several embedders may rank one variant (extra retrievers): the answering one comes first.
        df = df.join(rec.unique(keys, keep="first", maintain_order=True), on=keys, how="left")
    top = _retrieved(ranked, df)
    if top is not None:
        df = df.join(top, on=keys, how="left")
    else:
        df = df.with_columns(pl.lit(None, pl.List(pl.String)).alias("retrieved"))
    lead = [pl.lit("memshot").alias("benchmark"), pl.col("question_id").alias("item_id"),
            (pl.col("question") if "question" in df.columns else pl.lit(None, pl.String)).alias("item"),
            pl.col("variant"), pl.col("k"), pl.col("retrieved"),
            (pl.col("prediction") if "prediction" in df.columns else pl.lit(None, pl.String)).alias("prediction"),
            (pl.col("answer") if "answer" in df.columns else pl.lit(None, pl.String)).alias("gold"),
            (pl.col("judge_label") if "judge_label" in df.columns else pl.lit(None, pl.Boolean)).alias("verdict")]
    drop = {"question_id", "question", "variant", "k", "retrieved", "prediction", "answer", "judge_label"}
    return df.select(*lead, *[c for c in df.columns if c not in drop])


def dmv_samples(probes: pl.DataFrame | None) -> pl.DataFrame:
    """One record per (probe, architecture[, study, variant, J]) of the probes table."""
    if probes is None or probes.height == 0:
        return pl.DataFrame()
    df = probes
    if "retrieved" not in df.columns:
        df = df.with_columns(pl.lit(None, pl.List(pl.String)).alias("retrieved"))
    # The target product's hash is the last path segment of its URL (no query), as recalled hashes are.
    targets = [u.split("?")[0].split("#")[0].rsplit("/", 1)[-1] if u else None for u in df["target_url"].to_list()]
    rank = pl.Series("target_rank", [r.index(t) + 1 if r and t in r else None
                                     for r, t in zip(df["retrieved"].to_list(), targets)], dtype=pl.Int64)
    lead = [pl.lit("dmv").alias("benchmark"), pl.col("probe_id").alias("item_id"),
            (pl.col("target_cue") if "target_cue" in df.columns else pl.lit(None, pl.String)).alias("item"),
            pl.col("architecture").alias("variant"), pl.lit(None, pl.Int64).alias("k"),
            pl.col("retrieved").cast(pl.List(pl.String)), pl.col("final_url").alias("prediction"),
            pl.col("target_url").alias("gold"), pl.col("correct").alias("verdict")]
    drop = {"probe_id", "target_cue", "architecture", "final_url", "target_url", "correct", "retrieved"}
    # The ablation label keeps its own name: ``variant`` is the architecture here.
    rest = [pl.col(c).alias("setting") if c == "variant" else pl.col(c) for c in df.columns if c not in drop]
    return df.select(*lead, pl.lit(rank), *rest)


def sample_parts(tables: dict[str, pl.DataFrame], ranked: pl.DataFrame | None = None) -> list[pl.DataFrame]:
    """The per-sample records of a run, one frame per benchmark (MemShot first), each with its own columns."""
    parts = [memshot_samples(tables.get("memshot_answers"), tables.get("memshot_recall"), ranked),
             dmv_samples(tables.get("probes"))]
    return [p for p in parts if p.height]


def samples(tables: dict[str, pl.DataFrame], ranked: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every per-sample record of a run in one frame (a column one benchmark lacks is null there)."""
    parts = sample_parts(tables, ranked)
    if not parts:
        return pl.DataFrame(schema={c: pl.String for c in LEAD})
    return pl.concat(parts, how="diagonal_relaxed")


def to_jsonl(parts: pl.DataFrame | list[pl.DataFrame]) -> bytes:
    """One JSON object per line (nulls as null, lists as arrays), keys in column order; given
    :func:`sample_parts`, each record carries only its own benchmark's fields."""
    frames = [parts] if isinstance(parts, pl.DataFrame) else parts
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n"
                   for df in frames for r in df.iter_rows(named=True)).encode()


def to_csv(df: pl.DataFrame) -> bytes:
    """CSV with a header; ``retrieved`` as unit ids joined by spaces."""
    flat: list[Any] = [pl.col(c).list.join(" ").alias(c) if isinstance(df.schema[c], pl.List) else pl.col(c)
                       for c in df.columns]
    buf = io.BytesIO()
    df.select(flat).write_csv(buf)
    return buf.getvalue()
