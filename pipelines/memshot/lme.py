"""LongMemEval's own retrieval metrics in the MemShot stage (dataset ``longmemeval``).

Beside evidence recall@k, each variant's unit ranking -- the whole ranking, every unit of the
conversation, as upstream ranks its whole corpus (the stage keeps it for this dataset) -- induces
a ranking of LongMemEval's corpus
(:func:`vismem.analysis.lme_retrieval.ranking_from_units`) at turn and at session granularity,
scored as upstream's ``src/retrieval`` evaluation does (``recall_any`` / ``recall_all`` /
``ndcg_any`` at 1, 3, 5, 10, 30, 50; abstention and target-less questions left out). The result
table ``results/memshot_lme_retrieval.parquet`` has one row per (variant, embedder, corpus,
level, k):

``corpus``  ``turn`` (user turns) or ``session``; ``level`` ``turn`` or ``session`` (a turn
            corpus scored at session level is upstream's turn→session metric)
``n``       questions averaged
``by_position``  mean share of the top-k items no ranked unit showed: they follow in corpus
            order (0 with whole rankings; above 0 only for a memory's ranking cached before the
            stage kept whole rankings, whose k past its depth then measures the haystack order)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vismem.pipelines.memshot.retrieve import SUMMARY_SCHEMA_VERSION

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext

RESULT = "memshot_lme_retrieval"


def lme_tables(conversations: list[Any], ranked: Any, units: Any, embedders: dict[str, str]) -> Any:
    """LongMemEval's retrieval metrics of every variant in ``ranked`` (the table described above)."""
    import polars as pl

    from vismem.analysis.lme_retrieval import ranking_from_units, retrieval_metrics, summary, turn_to_session_metrics
    from vismem.env.dialogue.longmemeval import has_retrieval_target, retrieval_corpus

    questions = pl.DataFrame(
        [{"question_id": (c.questions[0].question_id if c.questions else c.conversation_id),
          "conversation_id": c.conversation_id, "has_target": has_retrieval_target(c)} for c in conversations],
        schema={"question_id": pl.String, "conversation_id": pl.String, "has_target": pl.Boolean})
    corpora = {g: pl.DataFrame([r for c in conversations for r in retrieval_corpus(c, g)])
               for g in ("turn", "session")}
    parts = []
    for variant in sorted(ranked["variant"].unique().to_list()):
        r = ranked.filter(pl.col("variant") == variant).select("question_id", "conversation_id", "rank", "unit_id")
        u = units.filter(pl.col("variant") == variant)
        for g, corpus in corpora.items():
            if corpus.height == 0:
                continue
            items = ranking_from_units(r, u, corpus)
            rel = corpus.filter("relevant").select("question_id", "corpus_id")
            per_q = retrieval_metrics(items, rel, level=g)
            if g == "turn":
                per_q = pl.concat([per_q, turn_to_session_metrics(items, rel)])
            tbl = summary(per_q, questions, by=()).join(_by_position(items, questions), on="k", how="left")
            parts.append(tbl.with_columns(pl.lit(variant).alias("variant"), pl.lit(embedders.get(variant)).alias("embedder"),
                                          pl.lit(g).alias("corpus")))
    if not parts:
        return pl.DataFrame()
    cols = ["variant", "embedder", "corpus", "level", "k", "n", "recall_any", "recall_all", "ndcg_any", "by_position"]
    return pl.concat(parts).select(cols).sort("variant", "corpus", "level", "k")


def _by_position(items: Any, questions: Any) -> Any:
    """Per k of LongMemEval's cut-offs: the mean share of a scored question's top-k items that no
    retrieved unit placed (``retrieved`` false)."""
    import polars as pl

    from vismem.analysis.lme_retrieval import KS

    keep = questions.filter(~pl.col("question_id").str.contains("_abs", literal=True) & pl.col("has_target"))
    it = items.join(keep.select("question_id"), on="question_id", how="semi")
    ks = pl.DataFrame({"k": list(KS)}, schema={"k": pl.Int64})
    return (it.join(ks, how="cross").filter(pl.col("rank") <= pl.col("k"))
            .group_by("question_id", "k").agg((~pl.col("retrieved")).mean().alias("by_position"))
            .group_by("k").agg(pl.col("by_position").mean()))


def lme_retrieval(ctx: "RunContext", conversations: list[Any], ranked: Any, units: Any,
                  embedders: dict[str, str], skip: list[str] | tuple[str, ...] = ()) -> dict[str, Any] | None:
    """For dataset ``longmemeval``: write ``results/memshot_lme_retrieval.parquet`` and return the
    stage summary's part (``{variant: {metric@k: value}}`` for session/turn recall_any); else None.
    Memories whose units are not tied to turns (``skip``) are left out."""
    import polars as pl

    if ctx.config.memshot.dataset != "longmemeval" or ranked.height == 0:
        return None
    tbl = lme_tables(conversations, ranked.filter(~pl.col("variant").is_in(list(skip))), units, embedders)
    if tbl.height == 0:
        return None
    key = f"{ctx.run_prefix}/results/{RESULT}.parquet"
    ctx.store.write_table(key, tbl, schema_version=SUMMARY_SCHEMA_VERSION)
    out: dict[str, Any] = {}
    for r in tbl.filter(pl.col("k").is_in([5, 10])).iter_rows(named=True):
        out.setdefault(r["variant"], {})[f"{r['corpus']}:{r['level']}:recall_any@{r['k']}"] = round(r["recall_any"], 4)
    return {"table": key, "recall_any": out}
