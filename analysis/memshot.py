"""MemShot scoring: Acc/F1 per category (Tables 1, 2, 4), ablations (Table 3), rendering-height
sweep (Table 5) and evidence recall@k, as pure functions over validated frames.

Acc counts every question, as the official scripts do: an unanswered question or a judge
failure (null verdict: an empty or unparseable reply, a failed call) counts as wrong --
LongMemEval's ``evaluate_qa`` labels a reply without "yes" wrong, the LoCoMo judge one without
"CORRECT" -- so failures cannot inflate it; ``judged`` / ``coverage`` say how many verdicts there
were, and ``acc_judged`` (:data:`ACC_JUDGED_ONLY` in the category table, where a judge failed)
is the other reading, over judged answers only. Acc is null only for a group with no verdict at
all (no judge configured). F1 is the mean token F1
over all rows. Both are proportions in [0, 1]; the report shows percent. "Overall" pools every
included question (LoCoMo's adversarial category is excluded by default, as in Table 1).

Two F1s (:data:`F1_NAMES`): the paper's, set-based as LightMem / A-MEM score it (``f1_mem0``),
is the paper-layout ``F1`` column wherever the answers carry it; the official LoCoMo F1
(``f1``) stands beside it as ``Overall LoCoMo F1``. Tables from answers without ``f1_mem0``
(written before it existed) show the official one as ``F1``.
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

#: Category column order of the paper's tables (others follow alphabetically).
CATEGORY_ORDER = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial",
                  "single-session-user", "single-session-assistant", "single-session-preference",
                  "multi-session", "knowledge-update", "temporal-reasoning")

#: ``judge`` (the judging model, stand-in marked) is a column only where a judge ran: the memshot
#: stage writes it beside the verdicts, so an Acc table names who judged (not a schema column, so
#: tables without it are left as they are).
GROUP = ("dataset", "model", "judge", "variant", "embedder", "k", "max_height")

#: The two F1 scores of an answer: the answers' column and what it is. The same labels as
#: ``vismem.memory.dialogue.scoring.F1_NAMES`` (which scores them; analysis sits below memory and
#: cannot import it, so tests/analysis/test_memshot_tables.py holds the two equal).
F1_NAMES = {"f1": "official LoCoMo F1 (snap-research/locomo task_eval: stemmed multiset overlap, per category)",
            "f1_mem0": "paper F1 (LightMem / A-MEM set-based token F1, as mem0 reuses it)"}
#: Evidence recall over the questions that have evidence turns only, beside the official reading
#: (:func:`recall_table`).
RECALL_WITH_EVIDENCE = "recall (questions with evidence only)"
#: Acc over the judged answers only (judge failures left out), beside the official reading.
ACC_JUDGED_ONLY = "Overall judged-only Acc"
#: The column name of the official F1 beside the paper's.
OFFICIAL_F1 = "LoCoMo F1"

#: Table 3's rows as the paper names them. The paper's "Full Session w/o Rendering" is its Text
#: RAG run (the session's text as the unit); ``full-session-no-render`` (the full-session
#: template's text without drawing) is ours, shown beside it and named so.
PAPER_ROWS = {"memshot": "MemShot", "no-header": "w/o Header", "no-render": "w/o Rendering",
              "full-session": "Full Session", "text-rag": "Full Session w/o Rendering (= Text RAG, as in the paper)",
              "full-session-no-render": "Full Session w/o Rendering (full-session template as text; not in the paper)",
              "h512": "MemShot 512 px", "h1024": "MemShot 1024 px"}


def has_paper_f1(answers: pl.DataFrame) -> bool:
    """Whether the answers carry the paper's F1 (``f1_mem0`` present and not all null); else the
    paper-layout F1 column falls back to the official ``f1``."""
    return "f1_mem0" in answers.columns and answers["f1_mem0"].null_count() < answers.height


def _order(categories: Sequence[str]) -> list[str]:
    known = [c for c in CATEGORY_ORDER if c in categories]
    return known + sorted(c for c in categories if c not in CATEGORY_ORDER)


def _outcome(columns: Sequence[str]) -> pl.Expr:
    """``judge_label`` as Acc counts it: no verdict (unanswered, or a judge failure) is wrong, as
    the official scripts count it (module docstring). ``columns`` is kept for callers' symmetry."""
    return pl.col("judge_label").fill_null(False)


def _metrics(columns: Sequence[str], mem0: bool = False) -> list[pl.Expr]:
    judged = pl.col("judge_label").is_not_null().sum()
    return [pl.len().alias("n"),
            # every question in the denominator; null when nothing was judged (no judge)
            pl.when(judged > 0).then(_outcome(columns).cast(pl.Float64).mean()).alias("acc"),
            pl.col("judge_label").cast(pl.Float64).mean().alias("acc_judged"),
            pl.col("f1_mem0" if mem0 else "f1").mean().alias("f1"),
            (pl.col("f1") if mem0 else pl.lit(None, pl.Float64)).mean().alias("f1_official"),
            pl.col("judge_label").is_null().sum().alias("unjudged"),
            judged.alias("judged"),
            (judged / pl.len()).alias("coverage"),
            _failures(columns).alias("judge_failures")]


def _failures(columns: Sequence[str]) -> pl.Expr:
    """Answered questions without a verdict (judge failures; unanswered ones are not)."""
    answered = pl.col("prediction").is_not_null() if "prediction" in columns else pl.lit(False)
    return (pl.col("judge_label").is_null() & answered).sum()


def with_outcome(answers: pl.DataFrame, by: Sequence[str] = GROUP) -> pl.DataFrame:
    """``answers`` with ``judge_label`` as Acc counts it (:func:`_outcome`: no verdict is wrong) in every ``by`` group
    that has a verdict at all; groups without any keep nulls (no judge). For intervals computed
    over ``judge_label`` (which drop nulls) to match :func:`scores`."""
    keys = [c for c in by if c in answers.columns]
    if not keys or "judge_label" not in answers.columns:
        return answers
    any_judged = pl.col("judge_label").is_not_null().any().over(keys)
    return answers.with_columns(pl.when(any_judged).then(_outcome(answers.columns))
                                .otherwise(pl.col("judge_label")).alias("judge_label"))


def scores(answers: pl.DataFrame, by: Sequence[str] = GROUP, *,
           exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Long table: per group and category (and ``Overall``): n, acc, acc_judged (over judged answers
    only), f1 (the paper's, :func:`has_paper_f1`), f1_official (the LoCoMo F1 beside it; null when
    ``f1`` is the only one), unjudged, judged, coverage, judge_failures (answered, no verdict)."""
    by = [c for c in by if c in answers.columns]
    schema = {**{c: answers.schema[c] for c in by}, "category": pl.String, "n": pl.Int64, "acc": pl.Float64,
              "acc_judged": pl.Float64, "f1": pl.Float64, "f1_official": pl.Float64, "unjudged": pl.Int64,
              "judged": pl.Int64, "coverage": pl.Float64, "judge_failures": pl.Int64}
    df = answers.filter(~pl.col("category").is_in(list(exclude_categories)))
    if df.height == 0:
        return pl.DataFrame(schema=schema)
    mem0 = has_paper_f1(df)
    per_cat = df.group_by([*by, "category"]).agg(_metrics(df.columns, mem0))
    overall = df.group_by(by).agg(_metrics(df.columns, mem0)).with_columns(pl.lit("Overall").alias("category"))
    out = pl.concat([per_cat, overall.select(per_cat.columns)])
    return out.select(list(schema)).cast(schema).sort(by, nulls_last=True)


def category_table(answers: pl.DataFrame, by: Sequence[str] = GROUP, *,
                   exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Paper Tables 1/2/4 layout: one row per (dataset, model, variant, k, max_height);
    columns ``<category> Acc``, ``<category> F1`` ..., ``Overall Acc``, ``Overall F1``, ``n``,
    ``coverage`` (share of the n judged), ``Overall LoCoMo F1`` beside the paper's F1 (answers with
    ``f1_mem0``; see :data:`F1_NAMES`), and ``Latency (s)`` when the answers carry
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
    n = long.filter(pl.col("category") == "Overall").select(*by, "n", "coverage", "f1_official", "acc_judged")
    if has_paper_f1(answers):
        cols.append(pl.col("f1_official").alias(f"Overall {OFFICIAL_F1}"))
    if int(long.filter(pl.col("category") == "Overall")["judge_failures"].sum()):
        cols.append(pl.col("acc_judged").alias(ACC_JUDGED_ONLY))  # the other reading, only where it differs
    out = (wide.join(n.select(*by, "f1_official", "acc_judged"), on=by, how="left", nulls_equal=True)
           .select(*by, *cols).join(n.drop("f1_official", "acc_judged"), on=by, how="left", nulls_equal=True))
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
    """Table 3: every variant (and rendering height) by top-k, per dataset and model, each row
    named as the paper names it (``paper_row``, :data:`PAPER_ROWS`; Text RAG is the paper's Full
    Session w/o Rendering)."""
    t = by_k_table(answers, ["dataset", "model", "judge", "variant", "embedder", "max_height"], **kw)
    if not t.height or "variant" not in t.columns:
        return t
    row = pl.col("variant").replace_strict(PAPER_ROWS, default=None, return_dtype=pl.String).alias("paper_row")
    front = [c for c in ("dataset", "model", "judge", "variant") if c in t.columns]
    return t.with_columns(row).select(*front, "paper_row", *[c for c in t.columns if c not in front])


def height_table(answers: pl.DataFrame, **kw) -> pl.DataFrame:
    """Table 5: rows by rendering height and top-k, the Full Session row (``full-session``: no
    height bound, null ``max_height``) last as in the paper. Empty when fewer than two heights
    (Full Session counting as one) were run (no sweep)."""
    if "max_height" not in answers.columns:
        return pl.DataFrame()
    # Height variants named like "h512" count at that height when max_height was left null.
    from_name = pl.col("variant").str.extract(r"^h(\d+)$", 1).cast(pl.Int64)
    hs = answers.with_columns(pl.coalesce(pl.col("max_height"), from_name).alias("max_height"))
    hs = hs.filter(pl.col("max_height").is_not_null() | (pl.col("variant") == "full-session"))
    if hs["max_height"].n_unique() < 2:
        return pl.DataFrame(schema={"dataset": pl.String, "model": pl.String, "variant": pl.String,
                                    "max_height": pl.Int64})
    t = by_k_table(hs, ["dataset", "model", "judge", "variant", "embedder", "max_height"], **kw)
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

    From ``memshot_recall`` when given; otherwise hit@k from the answers' ``recall_hit``. ``recall``
    counts a LoCoMo question without evidence turns as 1, as the official evaluation does; where
    the table has such questions, :data:`RECALL_WITH_EVIDENCE` beside it is the mean over the
    others only (the other reading, labelled).
    """
    if recall is not None and recall.height:
        by = [c for c in ("dataset", "variant", "embedder", "max_height") if c in recall.columns]
        some = "n_evidence" in recall.columns and bool((recall["n_evidence"] == 0).any())
        other = [pl.col("recall").filter(pl.col("n_evidence") > 0).mean().alias(RECALL_WITH_EVIDENCE)] if some else []
        return (recall.group_by([*by, "k"]).agg(pl.len().alias("n"), pl.col("recall").mean().alias("recall"),
                                                 pl.col("hit").cast(pl.Float64).mean().alias("hit"), *other)
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


# -- Fig. 4a: accuracy conditioned on retrieval ----------------------------------------------------

def retrieval_conditioned(answers: pl.DataFrame, by: Sequence[str] = GROUP, *,
                          exclude_categories: Sequence[str] = ("adversarial",)) -> pl.DataFrame:
    """Fig. 4a: end-to-end Acc split into retrieval and generation, per group.

    ``hit_rate``: share of questions whose top-k held an evidence turn (``recall_hit``);
    ``acc_given_hit`` / ``acc_given_miss``: Acc among those questions and the others (the
    retrieval-to-generation conversion rate is ``acc_given_hit``); ``acc``: overall, so
    ``acc = hit_rate * acc_given_hit + (1 - hit_rate) * acc_given_miss`` over the questions
    whose hit is known. Unjudged answers count as wrong (as in :func:`scores`); rows with an
    unknown ``recall_hit`` are left out.
    """
    by = [c for c in by if c in answers.columns]
    schema = {**{c: answers.schema[c] for c in by}, "n": pl.Int64, "hits": pl.Int64, "hit_rate": pl.Float64,
              "acc": pl.Float64, "acc_given_hit": pl.Float64, "acc_given_miss": pl.Float64}
    if "recall_hit" not in answers.columns or answers.height == 0:
        return pl.DataFrame(schema=schema)
    df = with_outcome(answers.filter(~pl.col("category").is_in(list(exclude_categories))
                                     & pl.col("recall_hit").is_not_null()), by)
    if df.height == 0:
        return pl.DataFrame(schema=schema)
    ok = pl.col("judge_label").cast(pl.Float64)
    hit = pl.col("recall_hit")
    out = df.group_by(by).agg(
        pl.len().alias("n"), hit.sum().alias("hits"), hit.cast(pl.Float64).mean().alias("hit_rate"),
        ok.mean().alias("acc"), ok.filter(hit).mean().alias("acc_given_hit"),
        ok.filter(~hit).mean().alias("acc_given_miss"))
    return out.select(list(schema)).cast(schema).sort(by, nulls_last=True)


# -- Fig. 4b: recall against unit size, and conversation-clustered intervals -----------------------

#: Unit sizes in Fig. 4b's order (px of the shot's maximum height; "session" = full session).
UNIT_SIZES = ("512", "768", "1024", "session")


def cluster_mean_ci(df: pl.DataFrame, by: Sequence[str], value: str, *, cluster: str = "conversation_id",
                    n_resamples: int = 10_000, seed: int = 0) -> pl.DataFrame:
    """Per ``by`` group: ``n``, ``clusters``, ``mean``, ``low``, ``high`` and ``ci`` (what was resampled).

    Questions of one conversation are not independent (same dialogue, same units), so the
    interval resamples conversations with replacement and recomputes the pooled mean (a ratio
    of sums: :func:`vismem.analysis.bootstrap.cluster_ci`). A group from a single conversation has no
    cluster interval: it falls back to the question-level bootstrap (``ci = "question"``).
    """
    from vismem.analysis.bootstrap import cluster_ci
    from vismem.analysis.intervals import mean_ci

    by = [c for c in by if c in df.columns]
    schema = {**{c: df.schema[c] for c in by}, "n": pl.Int64, "clusters": pl.Int64, "mean": pl.Float64,
              "low": pl.Float64, "high": pl.Float64, "ci": pl.String}
    rows = df.filter(pl.col(value).is_not_null()).with_columns(pl.col(value).cast(pl.Float64).alias("_v"))
    if rows.height == 0:
        return pl.DataFrame(schema=schema)
    per = (rows.group_by([*by, cluster], maintain_order=True)
           .agg(pl.col("_v").sum().alias("_s"), pl.len().alias("_n")).sort([*by, cluster]))
    out = []
    for key, g in per.group_by(by, maintain_order=True) if by else [((), per)]:
        ci = cluster_ci(g["_s"].to_numpy(), g["_n"].to_numpy(), n_resamples=n_resamples, seed=seed)
        out.append({**dict(zip(by, key)), "n": int(g["_n"].sum()), "clusters": g.height, "mean": ci.estimate,
                    "low": ci.low, "high": ci.high, "ci": "conversation"})
    res = pl.DataFrame(out, schema=schema).with_columns(pl.col("low", "high").fill_nan(None))
    single = res.filter(pl.col("clusters") < 2)
    if single.height:
        # nulls_equal: a group keyed by a null (Text RAG's max_height) is still a group.
        flat = mean_ci(rows.join(single.select(by), on=by, how="semi", nulls_equal=True) if by else rows, by, "_v",
                       order=[cluster, "question_id"] if "question_id" in rows.columns else [cluster],
                       n_resamples=n_resamples, seed=seed)
        res = (res.join(flat.select(*by, pl.col("low").alias("_lo"), pl.col("high").alias("_hi")), on=by,
                        how="left", nulls_equal=True) if by else res.with_columns(
            pl.lit(flat["low"][0]).alias("_lo"), pl.lit(flat["high"][0]).alias("_hi")))
        one = pl.col("clusters") < 2
        res = res.with_columns(pl.when(one).then(pl.col("_lo")).otherwise(pl.col("low")).alias("low"),
                               pl.when(one).then(pl.col("_hi")).otherwise(pl.col("high")).alias("high"),
                               pl.when(one).then(pl.lit("question")).otherwise(pl.col("ci")).alias("ci")).drop("_lo", "_hi")
    return res.select(list(schema)).cast(schema).sort(by, nulls_last=True) if by else res.select(list(schema))


def unit_size_table(recall: pl.DataFrame | None, *, n_resamples: int = 10_000, seed: int = 0) -> pl.DataFrame:
    """Fig. 4b: evidence recall@k per (dataset, embedder, unit modality, unit size, k), with the
    conversation-clustered 95% CI. Needs the stage's ``unit_size`` / ``unit_modality`` columns;
    Text RAG rows (no unit size) are left out. Empty without at least two sizes."""
    need = {"unit_size", "unit_modality"}
    by = ["dataset", "embedder", "unit_modality", "unit_size", "k"]
    if recall is None or not recall.height or not need <= set(recall.columns):
        return pl.DataFrame(schema={c: pl.String for c in by[:-1]} | {"k": pl.Int64})
    df = recall.filter(pl.col("unit_size").is_not_null())
    if df["unit_size"].n_unique() < 2:
        return df.head(0).select([c for c in by if c in df.columns])
    t = cluster_mean_ci(df, by, "recall", n_resamples=n_resamples, seed=seed).rename({"mean": "recall"})
    order = {s: i for i, s in enumerate(UNIT_SIZES)}
    return (t.with_columns(pl.col("unit_size").replace_strict(order, default=len(order), return_dtype=pl.Int64)
                           .alias("_o")).sort(["dataset", "embedder", "unit_modality", "k", "_o"]).drop("_o"))
