"""MemShot scoring: Acc/F1 per category (Tables 1, 2, 4), ablations (Table 3), rendering-height
sweep (Table 5) and evidence recall@k, as pure functions over validated frames.

Acc counts every question: an unanswered or unjudged one (null verdict) counts as wrong, so
failures cannot inflate it; ``judged`` / ``coverage`` say how many verdicts there were. Acc is
null only for a group with no verdict at all (no judge configured). F1 is the mean token F1
over all rows. Both are proportions in [0, 1]; the report shows percent. "Overall" pools every
included question (LoCoMo's adversarial category is excluded by default, as in Table 1).
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

#: Category column order of the paper's tables (others follow alphabetically).
CATEGORY_ORDER = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial",
                  "single-session-user", "single-session-assistant", "single-session-preference",
                  "multi-session", "knowledge-update", "temporal-reasoning")

GROUP = ("dataset", "model", "variant", "k", "max_height")


def _order(categories: Sequence[str]) -> list[str]:
    known = [c for c in CATEGORY_ORDER if c in categories]
    return known + sorted(c for c in categories if c not in CATEGORY_ORDER)


def _metrics() -> list[pl.Expr]:
    judged = pl.col("judge_label").is_not_null().sum()
    return [pl.len().alias("n"),
            # every question in the denominator; null only when nothing in the group was judged
            pl.when(judged > 0).then(pl.col("judge_label").fill_null(False).cast(pl.Float64).mean()).alias("acc"),
            pl.col("f1").mean().alias("f1"),
            pl.col("judge_label").is_null().sum().alias("unjudged"),
            judged.alias("judged"),
            (judged / pl.len()).alias("coverage")]


def with_outcome(answers: pl.DataFrame, by: Sequence[str] = GROUP) -> pl.DataFrame:
    """``answers`` with ``judge_label`` as Acc counts it: null verdicts are False (wrong) in
    every ``by`` group that has a verdict at all; groups without any keep nulls (no judge).
    For intervals computed over ``judge_label`` (which drop nulls) to match :func:`scores`."""
    keys = [c for c in by if c in answers.columns]
    if not keys or "judge_label" not in answers.columns:
        return answers
    any_judged = pl.col("judge_label").is_not_null().any().over(keys)
    return answers.with_columns(pl.when(any_judged).then(pl.col("judge_label").fill_null(False))
                                .otherwise(pl.col("judge_label")).alias("judge_label"))


def scores(answers: pl.DataFrame, by: Sequence[str] = GROUP, *,
           exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Long table: per group and category (and ``Overall``): n, acc, f1, unjudged, judged, coverage."""
    by = [c for c in by if c in answers.columns]
    schema = {**{c: answers.schema[c] for c in by}, "category": pl.String, "n": pl.Int64, "acc": pl.Float64,
              "f1": pl.Float64, "unjudged": pl.Int64, "judged": pl.Int64, "coverage": pl.Float64}
    df = answers.filter(~pl.col("category").is_in(list(exclude_categories)))
    if df.height == 0:
        return pl.DataFrame(schema=schema)
    per_cat = df.group_by([*by, "category"]).agg(_metrics())
    overall = df.group_by(by).agg(_metrics()).with_columns(pl.lit("Overall").alias("category"))
    out = pl.concat([per_cat, overall.select(per_cat.columns)])
    return out.select(list(schema)).cast(schema).sort(by, nulls_last=True)


def category_table(answers: pl.DataFrame, by: Sequence[str] = GROUP, *,
                   exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Paper Tables 1/2/4 layout: one row per (dataset, model, variant, k, max_height);
    columns ``<category> Acc``, ``<category> F1`` ..., ``Overall Acc``, ``Overall F1``, ``n``,
    ``coverage`` (share of the n judged), and ``Latency (s)`` when the answers carry
    ``latency_s`` (memory-construction seconds per conversation, Table 1's Latency column)."""
    long = scores(answers, by, exclude_categories=exclude_categories)
    by = [c for c in by if c in answers.columns]
    if long.height == 0:
        return pl.DataFrame(schema={c: answers.schema[c] for c in by})
    cats = _order([c for c in long["category"].unique().to_list() if c != "Overall"]) + ["Overall"]
    wide = long.select(*by, "category", "acc", "f1").pivot(on="category", index=by, values=["acc", "f1"])
    cols = []
    for c in cats:
        cols += [pl.col(f"acc_{c}").alias(f"{c} Acc"), pl.col(f"f1_{c}").alias(f"{c} F1")]
    n = long.filter(pl.col("category") == "Overall").select(*by, "n", "coverage")
    out = wide.select(*by, *cols).join(n, on=by, how="left", nulls_equal=True)
    if "latency_s" in answers.columns and answers["latency_s"].null_count() < answers.height:
        # Memory-construction latency is per conversation: average one value per conversation.
        lat = (answers.filter(pl.col("latency_s").is_not_null()).group_by([*by, "conversation_id"])
               .agg(pl.col("latency_s").first()).group_by(by).agg(pl.col("latency_s").mean().alias("Latency (s)")))
        out = out.join(lat, on=by, how="left", nulls_equal=True)
    return out.sort(by, nulls_last=True)


def by_k_table(answers: pl.DataFrame, rows: Sequence[str], *,
               exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Tables 3/5 layout: one row per ``rows`` key; columns ``Top-<k> Acc``, ``Top-<k> F1``."""
    rows = [c for c in rows if c in answers.columns]
    long = scores(answers, [*rows, "k"], exclude_categories=exclude_categories).filter(pl.col("category") == "Overall")
    if long.height == 0:
        return pl.DataFrame(schema={c: answers.schema[c] for c in rows})
    ks = sorted(long["k"].unique().to_list())
    wide = long.select(*rows, "k", "acc", "f1").pivot(on="k", index=rows, values=["acc", "f1"])
    cols = []
    for k in ks:
        cols += [pl.col(f"acc_{k}").alias(f"Top-{k} Acc"), pl.col(f"f1_{k}").alias(f"Top-{k} F1")]
    return wide.select(*rows, *cols).sort(rows, nulls_last=True)


def ablation_table(answers: pl.DataFrame, **kw) -> pl.DataFrame:
    """Table 3: every variant (and rendering height) by top-k, per dataset and model."""
    return by_k_table(answers, ["dataset", "model", "variant", "max_height"], **kw)


def height_table(answers: pl.DataFrame, **kw) -> pl.DataFrame:
    """Table 5: rows with a rendering-height bound, by height and top-k. Empty when fewer than
    two heights were run (no sweep)."""
    if "max_height" not in answers.columns:
        return pl.DataFrame()
    # Height variants named like "h512" count at that height when max_height was left null.
    from_name = pl.col("variant").str.extract(r"^h(\d+)$", 1).cast(pl.Int64)
    hs = answers.with_columns(pl.coalesce(pl.col("max_height"), from_name).alias("max_height"))
    hs = hs.filter(pl.col("max_height").is_not_null())
    if hs["max_height"].n_unique() < 2:
        return pl.DataFrame(schema={"dataset": pl.String, "model": pl.String, "variant": pl.String,
                                    "max_height": pl.Int64})
    t = by_k_table(hs, ["dataset", "model", "variant", "max_height"], **kw)
    return t.sort(["dataset", "model", "max_height", "variant"], nulls_last=True) if t.height else t


def recall_category_table(recall: pl.DataFrame | None) -> pl.DataFrame:
    """Evidence recall@k per category (columns in the paper's category order) plus ``Overall``,
    one row per (dataset, variant[, embedder], k); empty when there is no recall table."""
    if recall is None or not recall.height:
        return pl.DataFrame(schema={"dataset": pl.String, "variant": pl.String, "k": pl.Int64})
    by = [c for c in ("dataset", "variant", "embedder") if c in recall.columns] + ["k"]
    per = recall.group_by([*by, "category"]).agg(pl.col("recall").mean())
    overall = recall.group_by(by).agg(pl.col("recall").mean(), pl.len().cast(pl.Int64).alias("n"))
    cats = _order(per["category"].unique().to_list())
    wide = per.pivot(on="category", index=by, values="recall")
    return (wide.join(overall.rename({"recall": "Overall"}), on=by, how="left", nulls_equal=True)
            .select(*by, *cats, "Overall", "n").sort(by, nulls_last=True))


def recall_table(recall: pl.DataFrame | None, answers: pl.DataFrame | None = None) -> pl.DataFrame:
    """Evidence recall@k and hit@k per (dataset, variant[, embedder]) and k.

    From ``memshot_recall`` when given; otherwise hit@k from the answers' ``recall_hit``.
    """
    if recall is not None and recall.height:
        by = [c for c in ("dataset", "variant", "embedder", "max_height") if c in recall.columns]
        return (recall.group_by([*by, "k"]).agg(pl.len().alias("n"), pl.col("recall").mean().alias("recall"),
                                                 pl.col("hit").cast(pl.Float64).mean().alias("hit"))
                .sort([*by, "k"], nulls_last=True))
    if answers is not None and answers.height and "recall_hit" in answers.columns:
        known = answers.filter(pl.col("recall_hit").is_not_null())
        if known.height:
            by = ["dataset", "variant"]
            return (known.group_by([*by, "k"]).agg(pl.len().alias("n"), pl.lit(None, pl.Float64).alias("recall"),
                                                    pl.col("recall_hit").cast(pl.Float64).mean().alias("hit"))
                    .sort([*by, "k"]))
    return pl.DataFrame(schema={"dataset": pl.String, "variant": pl.String, "k": pl.Int64, "n": pl.Int64,
                                "recall": pl.Float64, "hit": pl.Float64})
