"""MemShot report sections beyond Tables 1-5: Fig. 4 (retrieval vs generation, recall vs unit
size), the pixel reader's read rate, construction latency, and the paper's baselines (quoted).

Inputs are the run's result tables: ``memshot_answers`` / ``memshot_recall`` (validated kinds)
and two side tables the memshot stage writes beside them, read by :func:`load_extras`:
``memshot_readrate`` (one row per shot a pixel reader read) and ``memshot_latency`` (seconds per
conversation x variant). Everything here is pure but the loader.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from vismem.analysis import figures, memshot
from vismem.analysis.memshot_paper import EXTERNAL, QUOTED, quoted_table
from vismem.analysis.paper_order import order_rows
from vismem.analysis.render import Figure, Section, Table

#: Side tables of the memshot stage (``runs/<id>/results/<name>.parquet``), not schema kinds.
EXTRAS = ("memshot_readrate", "memshot_latency", "memshot_lme_retrieval")
#: The paper's construction latency per method (Table 1, seconds per conversation), quoted.
PAPER_LATENCY_S = {"image": 9.56, "text-rag": 2.10}
GOAL = 0.95  # the read-rate goal (share of the words a shot draws)


def load_extras(store: Any, run_prefix: str) -> dict[str, pl.DataFrame]:
    """The side tables present under ``<run_prefix>/results/`` (missing or unreadable: left out)."""
    out: dict[str, pl.DataFrame] = {}
    for name in EXTRAS:
        key = f"{run_prefix.rstrip('/')}/results/{name}.parquet"
        try:
            if store.exists(key):
                out[name] = store.read_table(key)
        except Exception:  # noqa: BLE001 - a side table never breaks the report
            continue
    return out


def readrate_table(readings: pl.DataFrame | None, goal: float = GOAL) -> pl.DataFrame:
    """Per variant: shots, words, ``read_rate`` (word-weighted), ``mean_shot``, ``min_shot``,
    ``share_at_goal`` — the summary of ``vismem.memory.dialogue.readrate`` from its per-shot rows."""
    schema = {"variant": pl.String, "shots": pl.Int64, "words": pl.Int64, "read_rate": pl.Float64,
              "mean_shot": pl.Float64, "min_shot": pl.Float64, "share_at_goal": pl.Float64}
    if readings is None or readings.height == 0:
        return pl.DataFrame(schema=schema)
    # A shot (or a whole variant) that draws no words reads perfectly: nothing was lost.
    rate = pl.when(pl.col("n_words") > 0).then(pl.col("n_read") / pl.col("n_words")).otherwise(1.0)
    words = pl.col("n_words").sum()
    return (readings.group_by("variant").agg(
        pl.len().cast(pl.Int64).alias("shots"), words.cast(pl.Int64).alias("words"),
        pl.when(words > 0).then(pl.col("n_read").sum() / words).otherwise(1.0).alias("read_rate"),
        rate.mean().alias("mean_shot"), rate.min().alias("min_shot"),
        (rate >= goal).mean().alias("share_at_goal")).sort("variant").cast(schema))


def latency_table(latency: pl.DataFrame | None, dataset: str | None = None) -> pl.DataFrame:
    """Per variant (and embedder): mean construction seconds per conversation (render +
    embedding; a pixel reader's OCR included), beside the paper's quoted value where Table 1
    shows one (MemShot 9.56, Text RAG 2.10; LoCoMo only: ``dataset`` another one quotes none)."""
    if latency is None or latency.height == 0:
        return pl.DataFrame(schema={"variant": pl.String})
    by = [c for c in ("variant", "embedder") if c in latency.columns]
    t = latency.group_by(by).agg(pl.len().alias("conversations"), pl.col("render_s").mean(),
                                 pl.col("embed_s").mean(), pl.col("construction_s").mean())
    # Only the rows Table 1 reports (MemShot, Text RAG; LoCoMo): no ablation, height or dataset
    # it never timed gets the paper's number beside it.
    paper = (pl.when(pl.col("variant") == "text-rag").then(pl.lit(PAPER_LATENCY_S["text-rag"]))
             .when(pl.col("variant") == "memshot").then(pl.lit(PAPER_LATENCY_S["image"])).otherwise(None))
    if dataset is not None and dataset != "locomo":
        paper = pl.lit(None, pl.Float64)
    return t.with_columns(paper.alias("paper_s (quoted)")).sort(by)


def fig4_section(ans: pl.DataFrame | None, rec: pl.DataFrame | None, opt: Any, links: Any) -> Section:
    """Fig. 4a (Acc conditioned on retrieval) and Fig. 4b (recall@k against unit size)."""
    s = Section("memshot-fig4", "MemShot: retrieval vs generation and unit size (Fig. 4)")
    if ans is not None and ans.height:
        t = memshot.retrieval_conditioned(ans, exclude_categories=opt.exclude_categories)
        t = order_rows(t, "variant", "memshot", before=["dataset", "model"], after=["embedder", "k"], family=None)
        if t.height:
            s.tables.append(Table("memshot-fig4a", "Acc conditioned on retrieval (%)", t,
                                  percent=["hit_rate", "acc", "acc_given_hit", "acc_given_miss"],
                                  links=links.memshot(t), caption="hit = the top-k held an evidence turn; "
                                  "unjudged answers count as wrong."))
            s.figures.append(Figure("memshot-fig4a", "Retrieval and generation",
                                    *figures.render(figures.conditioned_accuracy(t))))
    u = memshot.unit_size_table(rec, n_resamples=opt.n_resamples, seed=opt.seed)
    if u.height:
        s.tables.append(Table("memshot-fig4b", "Evidence recall@k by unit size (%)", u,
                              percent=["recall", "low", "high"], ci={"recall": ("low", "high")},
                              caption="Same units drawn (image) or written (text); 95% CI: bootstrap over "
                                      "conversations (question-level when there is one)."))
        s.figures.append(Figure("memshot-fig4b", "Recall against unit size",
                                *figures.render(figures.recall_by_unit_size(u))))
    if not s.has_data:
        s.empty = ("no recall_hit in the answers and fewer than two unit sizes in memshot_recall "
                   "(run h512 / memshot / h1024 / full-session and their -no-render twins)")
    return s


def pixels_section(readings: pl.DataFrame | None, latency: pl.DataFrame | None, dataset: str | None = None) -> Section:
    """The pixel reader's read rate per variant and construction latency per variant."""
    s = Section("memshot-construction", "MemShot: read rate of the shots and construction latency")
    rt = order_rows(readrate_table(readings), "variant", "memshot", family=None)
    if rt.height:
        s.tables.append(Table("memshot-readrate", "Read rate: share of each shot's words the OCR text holds (%)",
                              rt, percent=["read_rate", "mean_shot", "min_shot", "share_at_goal"],
                              caption=f"Goal: {GOAL:.0%} of the words; share_at_goal = shots at or above it. "
                                      "Measured by the pixel reader (ocr-minilm, a stand-in for the paper's "
                                      "multimodal embedder): it also checks the shots are legible."))
    lt = order_rows(latency_table(latency, dataset), "variant", "memshot", after=["embedder"], family=None)
    if lt.height:
        s.tables.append(Table("memshot-latency", "Memory-construction latency per conversation (s)", lt,
                              caption="render + unit embedding (OCR included for a pixel reader, so a stand-in's "
                                      "latency is not the paper's); paper_s is Table 1's value, quoted for the two "
                                      "rows it reports (MemShot, Text RAG on LoCoMo). Caveat: the paper states no "
                                      "unit or scope for it; read here as seconds per conversation."))
    if not s.has_data:
        s.empty = "no memshot_readrate / memshot_latency table (set memshot.image_embedder to a pixel reader)"
    return s


def setting_caption(t: pl.DataFrame) -> str:
    """Which setting the rows ran: answering model, retriever and judge as the rows record them."""
    parts = []
    for col, what in (("model", "answering model"), ("embedder", "retriever"), ("judge", "judge")):
        vals = sorted({str(v) for v in t[col].to_list() if v is not None}) if col in t.columns else []
        parts.append(f"{what} {' / '.join(vals) if vals else 'not recorded'}")
    return "Setting (per row in its columns): " + "; ".join(parts) + ". "


def judged_caption(t: pl.DataFrame) -> str:
    """What the second Acc column is, where a judge failed (:data:`vismem.analysis.memshot.ACC_JUDGED_ONLY`)."""
    if memshot.ACC_JUDGED_ONLY not in t.columns:
        return ""
    return (f" Overall Acc counts a judge failure (an answer without a verdict) wrong, as the official scripts do; "
            f"{memshot.ACC_JUDGED_ONLY} is the other reading, over judged answers only.")


#: Where our LongMemEval shots differ from the paper's text (App. A.3: a turn-pair taller than the
#: shot "expands" the image, no bound stated): a shot grows to at most 4 x its maximum height
#: (``vismem.memory.dialogue.pack.GROW_LIMIT``; a test holds the two equal) and a taller pair is split.
LME_SHOT_RULE = ("LongMemEval shots: the paper lets a shot grow when one turn-pair does not fit (App. A.3) and states "
                 "no bound; here a shot grows to at most 4 x its maximum height, and a turn-pair taller than that is "
                 "split over several shots of at most the maximum height (a difference from the paper's text).")


def lme_section(lme: pl.DataFrame | None) -> Section:
    """LongMemEval's own retrieval metrics (``memshot_lme_retrieval``: recall_any / recall_all /
    NDCG@k per variant, corpus granularity and level), as its ``src/retrieval`` evaluation
    reports them."""
    s = Section("memshot-lme-retrieval", "MemShot: LongMemEval's retrieval metrics")
    if lme is None or not lme.height:
        s.empty = "no memshot_lme_retrieval table (dataset longmemeval only)"
        return s
    for (corpus, level), t in sorted(lme.group_by(["corpus", "level"]), key=lambda g: g[0]):
        name = f"{corpus}→{level}" if corpus != level else corpus
        t = t.drop("corpus", "level", "schema_version", strict=False).sort("variant", "k")
        s.tables.append(Table(f"memshot-lme-{corpus}-{level}", f"LongMemEval retrieval, {name} (%)", t,
                              percent=["recall_any", "recall_all", "ndcg_any", "by_position"],
                              caption="recall_any / recall_all / NDCG@k per question over the whole ranking (every "
                                      "unit ranked, as upstream ranks its whole corpus), averaged over questions with "
                                      "a has_answer user turn, abstention (_abs) questions left out (as upstream). "
                                      "flat-bm25 is upstream's; dense is a stand-in for its flat-contriever (the run's "
                                      "embedder). by_position: share of the top-k items no retrieved unit showed "
                                      "(they follow in haystack order; 0 unless a memory cached before whole rankings "
                                      "were kept)."))
    s.notes.append(LME_SHOT_RULE)
    return s


def fig1_table(ans: pl.DataFrame | None) -> pl.DataFrame:
    """Fig. 1's points: Table 1 (LoCoMo) as quoted -- backbone, method, construction latency,
    Overall Acc -- plus the run's measured LoCoMo rows that have both (the answering model as
    backbone, ``<variant>@<k>`` as method, ``source`` measured)."""
    from vismem.analysis.memshot_paper import quoted_rows

    q = (quoted_rows().filter((pl.col("table") == "Table 1") & (pl.col("category") == "Overall")
                              & pl.col("latency_s").is_not_null())
         .select("backbone", "method", "latency_s", "acc", "source"))
    if ans is None or not ans.height or "latency_s" not in ans.columns or "model" not in ans.columns:
        return q
    loc = ans.filter(pl.col("dataset") == "locomo")
    t = memshot.category_table(loc) if loc.height else pl.DataFrame()
    if not t.height or "Latency (s)" not in t.columns or "Overall Acc" not in t.columns:
        return q
    m = (t.filter(pl.col("Overall Acc").is_not_null() & pl.col("Latency (s)").is_not_null())
         .select(pl.col("model").alias("backbone"),
                 pl.format("{}@{}", pl.col("variant"), pl.col("k")).alias("method"),
                 pl.col("Latency (s)").alias("latency_s"), pl.col("Overall Acc").alias("acc"),
                 pl.lit("measured").alias("source")))
    return pl.concat([q, m.cast(q.schema)])


#: Fig. 1's rendered ``(png, svg)`` by its table's rows. Without measured latency the table is the
#: paper's quoted rows alone, the same for every report, yet drawing it (four log-scale panels,
#: PNG and SVG) cost more than the rest of a small report; figures are deterministic for the same
#: input, so a redraw would give these bytes again. A few entries: measured rows make new tables.
#: A caller that must see every figure a report draws go through ``figures.render`` (a layout
#: check) swaps in an empty dict.
FIG1_DRAWN: dict[tuple, tuple[bytes, bytes]] = {}


def _fig1_images(t: pl.DataFrame) -> tuple[bytes, bytes]:
    key = (tuple(t.columns), tuple(t.iter_rows()))
    if key not in FIG1_DRAWN:
        if len(FIG1_DRAWN) >= 8:
            FIG1_DRAWN.clear()
        FIG1_DRAWN[key] = figures.render(figures.latency_accuracy(t))
    return FIG1_DRAWN[key]


def fig1_section(ans: pl.DataFrame | None) -> Section:
    """Fig. 1: construction latency against accuracy per model size, from Table 1's data."""
    s = Section("memshot-fig1", "MemShot: latency against accuracy per model size (Fig. 1)")
    t = fig1_table(ans)
    s.tables.append(Table("memshot-fig1", "Construction latency (s) and Overall Acc (%) per backbone", t,
                          percent=["acc"], caption="Table 1 (LoCoMo) as quoted, hollow points; measured rows of "
                          "this run filled. The paper states no unit for its latency column (read as seconds "
                          "per conversation)."))
    s.figures.append(Figure("memshot-fig1", "Latency against accuracy", *_fig1_images(t)))
    return s


def baselines_section(datasets: list[str]) -> Section:
    """The paper's Tables 1, 2 and 4 for the run's datasets, every row marked quoted."""
    s = Section("memshot-baselines", "MemShot: the paper's baselines (Tables 1, 2, 4) — quoted, not measured")
    for ds in datasets:
        t = quoted_table(ds)
        if not t.height:
            continue
        pct = [c for c in t.columns if c.endswith(" Acc") or c.endswith(" F1")]
        s.tables.append(Table(f"memshot-quoted-{ds}", f"{ds}: the paper's rows (%), {QUOTED}", t, percent=pct,
                              caption=f"Not measured here. {', '.join(EXTERNAL)} run only where an adapter is "
                                      "plugged in (memory.dialogue.memories); these are the paper's numbers."))
    if not s.has_data:
        s.empty = "no quoted table for the run's datasets"
    return s


def memshot_extra_sections(tables: dict[str, pl.DataFrame], opt: Any, links: Any) -> list[Section]:
    """Every section above, from the run's tables (answers, recall and the side tables)."""
    ans, rec = tables.get("memshot_answers"), tables.get("memshot_recall")
    if (ans is None or not ans.height) and (rec is None or not rec.height):
        return []
    datasets = sorted({*(ans["dataset"].unique().to_list() if ans is not None and ans.height else []),
                       *(rec["dataset"].unique().to_list() if rec is not None and rec.height else [])})
    pixels = pixels_section(tables.get("memshot_readrate"), tables.get("memshot_latency"),
                            datasets[0] if len(datasets) == 1 else None)
    # The side tables come from the stage only (no empty section for runs scored from tables).
    lme = lme_section(tables.get("memshot_lme_retrieval"))
    fig1 = [fig1_section(ans)] if "locomo" in datasets else []
    return [*fig1, fig4_section(ans, rec, opt, links), *([pixels] if pixels.has_data else []),
            *([lme] if lme.has_data else []), baselines_section(datasets)]


#: Caption of the recall tables' intervals.
CI_RECALL = ("[95% CI: bootstrap over conversations (questions clustered by conversation); "
             "question-level where the rows come from one conversation.]")


def cluster_ci_long(df: pl.DataFrame, by: list[str], value: str, opt: Any, overall: str | None = None) -> pl.DataFrame:
    """Conversation-clustered intervals per ``by`` (plus one "Overall" row per group without
    ``overall`` when given), in the long form ``vismem.analysis.intervals.attach`` joins."""
    kw = dict(n_resamples=opt.n_resamples, seed=opt.seed)
    per = memshot.cluster_mean_ci(df, by, value, **kw)
    if overall is None or overall not in by:
        return per
    rest = [c for c in by if c != overall]
    tot = memshot.cluster_mean_ci(df, rest, value, **kw).with_columns(pl.lit("Overall").alias(overall))
    return pl.concat([per, tot.select(per.columns)])
