"""MemShot tables on hand-built answers with known Acc/F1."""

from __future__ import annotations

import math

import polars as pl

from vismem.analysis import memshot
from vismem.analysis.schemas import validate


def _ans(q, cat, variant, k, label, f1, *, height=None, hit=None):
    return {"dataset": "locomo", "conversation_id": "c0", "question_id": q, "question": "?", "category": cat,
            "variant": variant, "k": k, "prediction": "x", "judge_label": label, "f1": f1, "recall_hit": hit,
            "model": "m", "max_height": height}


def _known():
    rows = [
        _ans("q1", "single-hop", "memshot", 5, True, 1.0, hit=True),
        _ans("q2", "single-hop", "memshot", 5, False, 0.5, hit=False),
        _ans("q3", "temporal", "memshot", 5, True, 0.0, hit=True),
        _ans("q4", "adversarial", "memshot", 5, False, 0.0, hit=False),
        _ans("q1", "single-hop", "memshot", 10, True, 1.0, hit=True),
        _ans("q2", "single-hop", "memshot", 10, None, 0.2, hit=True),
        _ans("q3", "temporal", "memshot", 10, True, 0.4, hit=True),
        _ans("q4", "adversarial", "memshot", 10, True, 1.0, hit=True),
    ]
    return validate(pl.DataFrame(rows, schema_overrides={"max_height": pl.Int64}), "memshot_answers")


def test_category_table_known_values_and_adversarial_excluded():
    t = memshot.category_table(_known())
    assert [c for c in t.columns if c.endswith("Acc") and c != memshot.ACC_JUDGED_ONLY] == \
        ["temporal Acc", "single-hop Acc", "Overall Acc"]
    r5 = t.filter(pl.col("k") == 5).row(0, named=True)
    assert r5["single-hop Acc"] == 0.5 and r5["single-hop F1"] == 0.75 and r5["temporal Acc"] == 1.0
    assert r5["Overall Acc"] == 2 / 3 and r5["Overall F1"] == 0.5 and r5["n"] == 3
    assert r5["coverage"] == 1.0
    r10 = t.filter(pl.col("k") == 10).row(0, named=True)
    assert r10["single-hop Acc"] == 0.5  # an answer the judge gave no verdict on is wrong (official) ...
    assert r10["Overall Acc"] == 2 / 3 and r10["coverage"] == 2 / 3  # ... and coverage says so
    assert r10[memshot.ACC_JUDGED_ONLY] == 1.0 and r5[memshot.ACC_JUDGED_ONLY] == 2 / 3  # the other reading
    assert math.isclose(r10["single-hop F1"], 0.6)  # F1 counts it
    with_adv = memshot.category_table(_known(), exclude_categories=())
    assert "adversarial Acc" in with_adv.columns


def test_by_k_tables_and_height_sweep():
    base = _known()
    ab = memshot.ablation_table(base)
    assert ab.columns == ["dataset", "model", "variant", "paper_row", "embedder", "max_height", "Top-5 Acc",
                          "Top-5 F1", "Top-10 Acc", "Top-10 F1"]
    assert ab.row(0, named=True)["Top-5 Acc"] == 2 / 3
    assert memshot.height_table(base).height == 0  # no sweep
    sweep = pl.concat([base.with_columns(pl.lit(h, pl.Int64).alias("max_height")) for h in (512, 768)])
    ht = memshot.height_table(sweep)
    assert ht["max_height"].to_list() == [512, 768] and ht["Top-10 Acc"].to_list() == [2 / 3, 2 / 3]


def test_recall_table_from_recall_rows_or_answer_hits():
    rec = validate(pl.DataFrame({"dataset": ["locomo"] * 4, "conversation_id": ["c"] * 4,
                                 "question_id": ["a", "b", "a", "b"], "category": ["x"] * 4,
                                 "variant": ["memshot"] * 4, "k": [1, 1, 5, 5], "recall": [0.0, 0.5, 1.0, 0.5],
                                 "hit": [False, True, True, True]}), "memshot_recall")
    t = memshot.recall_table(rec)
    assert t["k"].to_list() == [1, 5] and t["recall"].to_list() == [0.25, 0.75] and t["hit"].to_list() == [0.5, 1.0]
    from_answers = memshot.recall_table(None, _known())
    assert from_answers.filter(pl.col("k") == 5)["hit"][0] == 0.5
    assert memshot.recall_table(None, None).height == 0


def test_empty_and_all_unjudged():
    empty = _known().head(0)
    assert memshot.category_table(empty).height == 0
    assert memshot.ablation_table(empty).height == 0
    unjudged = _known().with_columns(pl.lit(None, pl.Boolean).alias("judge_label"))
    t = memshot.category_table(unjudged)
    assert t["Overall Acc"].is_null().all() and t["Overall F1"].is_not_null().all()


def test_height_sweep_from_variant_names():
    base = _known()
    named = pl.concat([base, base.with_columns(pl.lit("h512").alias("variant")),
                       base.with_columns(pl.lit("h1024").alias("variant"))])
    ht = memshot.height_table(named)
    assert ht["max_height"].to_list() == [512, 1024] and ht["variant"].to_list() == ["h512", "h1024"]


def test_latency_is_averaged_per_conversation():
    base = _known()
    two = pl.concat([base.with_columns(pl.lit(2.0).alias("latency_s")),
                     base.with_columns(pl.lit("c1").alias("conversation_id"), pl.lit(4.0).alias("latency_s"))])
    t = memshot.category_table(two)
    assert t["Latency (s)"].to_list() == [3.0, 3.0]
    assert "Latency (s)" not in memshot.category_table(base).columns


def test_recall_per_category_in_paper_order_with_overall():
    rec = validate(pl.DataFrame({"dataset": ["locomo"] * 4, "conversation_id": ["c"] * 4,
                                 "question_id": ["a", "b", "c", "d"],
                                 "category": ["single-hop", "multi-hop", "single-hop", "temporal"],
                                 "variant": ["memshot"] * 4, "k": [5] * 4, "recall": [1.0, 0.5, 0.0, 0.25],
                                 "hit": [True, True, False, True]}), "memshot_recall")
    t = memshot.recall_category_table(rec)
    assert t.columns[t.columns.index("k") + 1:] == ["multi-hop", "temporal", "single-hop", "Overall", "n"]
    row = t.row(0, named=True)
    assert (row["multi-hop"], row["temporal"], row["single-hop"]) == (0.5, 0.25, 0.5)
    assert row["Overall"] == 1.75 / 4 and row["n"] == 4
    assert memshot.recall_category_table(None).height == 0


def test_acc_denominator_includes_an_unanswered_question():
    """An unanswered question (no prediction, so never judged) is wrong, not left out."""
    rows = [_ans("q1", "single-hop", "memshot", 5, True, 1.0), _ans("q2", "single-hop", "memshot", 5, True, 1.0),
            {**_ans("q3", "single-hop", "memshot", 5, None, 0.0), "prediction": None}]
    df = validate(pl.DataFrame(rows, schema_overrides={"max_height": pl.Int64}), "memshot_answers")
    long = memshot.scores(df).filter(pl.col("category") == "Overall").row(0, named=True)
    assert long["acc"] == 2 / 3 and long["n"] == 3 and long["judged"] == 2 and long["coverage"] == 2 / 3
    assert memshot.category_table(df)["Overall Acc"][0] == 2 / 3
    # the interval helper sees the same outcome: nulls become False where the group was judged
    assert memshot.with_outcome(df)["judge_label"].to_list() == [True, True, False]
    none = df.with_columns(pl.lit(None, pl.Boolean).alias("judge_label"))
    assert memshot.with_outcome(none)["judge_label"].null_count() == 3  # no judge at all: stays unknown


def test_a_judge_failure_counts_wrong_as_the_official_scripts_and_the_other_reading_is_labelled():
    """An answered question without a verdict (empty or unparseable judge reply) is wrong, as
    LongMemEval's ``evaluate_qa`` scores it (``'yes' in reply.lower()``: no reply, no yes); Acc over
    judged answers only stands beside it, labelled, only where a judge failed."""
    replies = ["yes", "no", ""]  # the third: a judge failure
    official = sum("yes" in r.lower() for r in replies) / len(replies)
    rows = [_ans("q1", "single-hop", "memshot", 5, True, 1.0), _ans("q2", "single-hop", "memshot", 5, False, 0.0),
            _ans("q3", "single-hop", "memshot", 5, None, 0.0)]
    df = validate(pl.DataFrame(rows, schema_overrides={"max_height": pl.Int64}), "memshot_answers")
    long = memshot.scores(df).filter(pl.col("category") == "Overall").row(0, named=True)
    assert long["acc"] == official == 1 / 3 and long["n"] == 3 and long["judged"] == 2 and long["coverage"] == 2 / 3
    assert long["acc_judged"] == 0.5 and long["judge_failures"] == 1
    assert memshot.with_outcome(df)["judge_label"].to_list() == [True, False, False]
    t = memshot.category_table(df).row(0, named=True)
    assert t["Overall Acc"] == 1 / 3 and t[memshot.ACC_JUDGED_ONLY] == 0.5
    # no judge failure (an unanswered question is no failure of the judge): no second reading
    ok = df.with_columns(pl.when(pl.col("question_id") == "q3").then(None).otherwise(pl.col("prediction"))
                         .alias("prediction"))
    assert memshot.ACC_JUDGED_ONLY not in memshot.category_table(ok).columns


def test_fig4a_accuracy_conditioned_on_retrieval():
    """Hand-made answers: Acc | hit and Acc | miss, and their mix gives the overall Acc."""
    rows = [_ans("q1", "single-hop", "memshot", 5, True, 1.0, hit=True),
            _ans("q2", "single-hop", "memshot", 5, True, 1.0, hit=True),
            _ans("q3", "temporal", "memshot", 5, False, 0.0, hit=True),
            _ans("q4", "temporal", "memshot", 5, True, 1.0, hit=False),
            {**_ans("q5", "multi-hop", "memshot", 5, None, 0.0, hit=False), "prediction": None},  # unanswered: wrong
            _ans("q6", "multi-hop", "memshot", 5, True, 1.0, hit=None),    # hit unknown: left out
            _ans("q7", "adversarial", "memshot", 5, True, 1.0, hit=True),  # excluded category
            _ans("q1", "single-hop", "text-rag", 5, False, 0.0, hit=False),
            _ans("q2", "single-hop", "text-rag", 5, True, 1.0, hit=True)]
    df = validate(pl.DataFrame(rows, schema_overrides={"max_height": pl.Int64}), "memshot_answers")
    t = memshot.retrieval_conditioned(df)
    m = t.filter(pl.col("variant") == "memshot").row(0, named=True)
    assert (m["n"], m["hits"], m["hit_rate"]) == (5, 3, 0.6)
    assert m["acc_given_hit"] == 2 / 3 and m["acc_given_miss"] == 0.5 and m["acc"] == 3 / 5
    assert math.isclose(m["acc"], m["hit_rate"] * m["acc_given_hit"] + (1 - m["hit_rate"]) * m["acc_given_miss"])
    r = t.filter(pl.col("variant") == "text-rag").row(0, named=True)
    assert (r["acc_given_hit"], r["acc_given_miss"]) == (1.0, 0.0)
    assert memshot.retrieval_conditioned(df.drop("recall_hit")).height == 0


def _clustered(n_conv=40, per=(3, 12), seed=1):
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_conv):
        base = rng.uniform(0.2, 0.9)  # conversations differ: questions within one are correlated
        for q in range(int(rng.integers(*per))):
            rows.append({"conversation_id": f"c{c}", "question_id": f"q{q}", "variant": "memshot", "k": 5,
                         "recall": float(np.clip(base + rng.normal(0, 0.1), 0, 1))})
    return pl.DataFrame(rows)


def test_cluster_ci_matches_statsmodels_cluster_robust_se():
    """The conversation bootstrap's spread agrees with the cluster-robust SE of a mean
    (statsmodels OLS on a constant, cov_type="cluster"), and is wider than the iid one."""
    import numpy as np
    import statsmodels.api as sm

    df = _clustered()
    t = memshot.cluster_mean_ci(df, ["variant", "k"], "recall", n_resamples=4000, seed=3).row(0, named=True)
    y = df["recall"].to_numpy()
    groups = df["conversation_id"].cast(pl.Categorical).to_physical().to_numpy()
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert math.isclose(t["mean"], y.mean(), rel_tol=1e-12) and t["clusters"] == 40 and t["ci"] == "conversation"
    se_boot = (t["high"] - t["low"]) / (2 * 1.959964)
    assert abs(se_boot / fit.bse[0] - 1) < 0.15
    iid = sm.OLS(y, np.ones_like(y)).fit().bse[0]
    assert se_boot > 1.5 * iid  # ignoring the clustering would understate the uncertainty


def test_cluster_ci_falls_back_to_questions_for_one_conversation():
    from vismem.analysis.intervals import mean_ci

    one = _clustered(n_conv=1, per=(30, 31))
    t = memshot.cluster_mean_ci(one, ["variant", "k"], "recall", n_resamples=2000, seed=0).row(0, named=True)
    ref = mean_ci(one, ["variant", "k"], "recall", order=["conversation_id", "question_id"], n_resamples=2000,
                  seed=0).row(0, named=True)
    assert t["ci"] == "question" and t["clusters"] == 1
    assert (t["low"], t["high"]) == (ref["low"], ref["high"]) and t["low"] < t["mean"] < t["high"]


def test_fig4b_unit_size_table_order_and_modalities():
    base = _clustered(n_conv=3, per=(4, 5))
    parts = []
    for size, variant, mod, shift in (("1024", "h1024", "image", 0.0), ("512", "h512", "image", 0.0),
                                      ("768", "memshot", "image", 0.0), ("session", "full-session", "image", 0.0),
                                      ("768", "no-render", "text", -0.1), (None, "text-rag", "text", 0.0)):
        parts.append(base.with_columns(pl.lit(variant).alias("variant"), pl.lit(size, pl.String).alias("unit_size"),
                                       pl.lit(mod).alias("unit_modality"), pl.lit("locomo").alias("dataset"),
                                       pl.lit("e").alias("embedder"), (pl.col("recall") + shift).clip(0, 1)))
    t = memshot.unit_size_table(pl.concat(parts), n_resamples=500)
    img = t.filter(pl.col("unit_modality") == "image")
    assert img["unit_size"].to_list() == ["512", "768", "1024", "session"]
    txt = t.filter(pl.col("unit_modality") == "text")
    assert txt["unit_size"].to_list() == ["768"]  # Text RAG (no unit size) is not a point of Fig. 4b
    assert txt["recall"][0] < img.filter(pl.col("unit_size") == "768")["recall"][0]
    assert (t["ci"] == "conversation").all() and (t["low"] <= t["recall"]).all()


def test_extra_sections_read_rate_latency_fig4_and_quoted_baselines():
    from vismem.analysis.memshot_sections import memshot_extra_sections, readrate_table
    from vismem.analysis.report_sections import Links, ReportOptions

    readings = pl.DataFrame({"variant": ["memshot"] * 3, "n_words": [100, 50, 0], "n_read": [99, 40, 0]})
    rt = readrate_table(readings).row(0, named=True)
    assert rt["read_rate"] == 139 / 150 and rt["min_shot"] == 0.8 and rt["share_at_goal"] == 2 / 3
    latency = pl.DataFrame({"conversation_id": ["c0", "c1"], "variant": ["memshot"] * 2, "embedder": ["e"] * 2,
                            "render_s": [0.1, 0.3], "embed_s": [1.0, 2.0], "construction_s": [1.1, 2.3]})
    secs = memshot_extra_sections({"memshot_answers": _known(), "memshot_recall": None,
                                   "memshot_readrate": readings, "memshot_latency": latency},
                                  ReportOptions(n_resamples=200), Links())
    ids = [s.id for s in secs]
    assert ids == ["memshot-fig1", "memshot-fig4", "memshot-construction", "memshot-baselines"]
    tables = {t.id: t for s in secs for t in s.tables}
    assert tables["memshot-latency"].df.row(0, named=True)["construction_s"] == 1.7
    assert tables["memshot-latency"].df.row(0, named=True)["paper_s (quoted)"] == 9.56
    quoted = tables["memshot-quoted-locomo"].df
    assert (quoted["source"] == "quoted (paper)").all()
    lm = quoted.filter((pl.col("method") == "LightMem") & (pl.col("backbone") == "Qwen3-VL-8B-Instruct")).row(0, named=True)
    assert (lm["Overall Acc"], lm["Overall F1"], lm["Latency (s)"]) == (0.6799, 0.4753, 439.06)  # Table 1 as printed
    assert tables["memshot-fig4a"].df.height == 2  # memshot@5, memshot@10
    assert memshot_extra_sections({}, ReportOptions(), Links()) == []


def test_headline_recall_keeps_retrievers_apart():
    """With a second retriever (memshot.extra_retrievers) the run's headline gives each embedder
    its own row; a variant with one embedder keeps its plain name."""
    from vismem.analysis.report import ReportOptions, headline

    def rows(variant, embedder, recalls):
        return [{"dataset": "locomo", "conversation_id": f"c{i % 2}", "question_id": f"q{i}", "category": "single-hop",
                 "variant": variant, "embedder": embedder, "k": 5, "recall": r, "hit": r > 0}
                for i, r in enumerate(recalls)]

    rec = pl.DataFrame(rows("memshot", "ocr-minilm (stand-in)", [1.0, 1.0, 0.0, 1.0])
                       + rows("memshot", "jina-embeddings-v4", [0.0, 0.0, 0.0, 1.0])
                       + rows("text-rag", "minilm", [0.5, 0.5, 0.5, 0.5]))
    head = headline({"memshot_recall": rec}, ReportOptions(n_resamples=200))["memshot_recall"]
    got = dict(zip(head["variant"], head["recall"]))
    assert got == {"memshot [ocr-minilm (stand-in)]": 0.75, "memshot [jina-embeddings-v4]": 0.25, "text-rag": 0.5}
    assert head["n"].to_list() == [4, 4, 4]


def test_recall_intervals_for_rows_without_a_unit_height():
    """Text RAG (and memories) have no max_height: their recall rows still get an interval,
    in the one-conversation fallback too (a null key is a group, not a missing one)."""
    from vismem.analysis.report_sections import Links, ReportOptions, memshot_sections

    rows = [{"dataset": "locomo", "conversation_id": "c0", "question_id": f"q{i}", "category": "single-hop",
             "variant": v, "embedder": "minilm", "max_height": h, "k": 5, "recall": float(i % 3 > 0), "hit": i % 3 > 0}
            for i in range(12) for v, h in (("no-render", 768), ("text-rag", None))]
    rec = pl.DataFrame(rows, schema_overrides={"max_height": pl.Int64})
    ci = memshot.cluster_mean_ci(rec, ["variant", "max_height", "k"], "recall", n_resamples=300)
    assert ci["low"].null_count() == 0 and ci["high"].null_count() == 0 and (ci["ci"] == "question").all()
    secs = memshot_sections(None, rec, ReportOptions(n_resamples=300), Links())
    (t,) = [t for s in secs for t in s.tables if t.id == "memshot-recall"]
    rag = t.df.filter(pl.col("variant") == "text-rag").row(0, named=True)
    assert rag["recall lo"] is not None and rag["recall lo"] <= rag["recall"] <= rag["recall hi"]
    assert rag["hit lo"] is not None


def test_lme_retrieval_section_one_table_per_corpus_and_level():
    from vismem.analysis.memshot_sections import memshot_extra_sections
    from vismem.analysis.report_sections import Links, ReportOptions

    rows = [{"variant": "text-rag", "embedder": "minilm", "corpus": c, "level": lv, "k": k, "n": 3,
             "recall_any": 0.5, "recall_all": 0.25, "ndcg_any": 0.4, "by_position": 0.0}
            for c, lv in (("turn", "turn"), ("turn", "session"), ("session", "session")) for k in (1, 5)]
    secs = memshot_extra_sections({"memshot_answers": _known(), "memshot_recall": None,
                                   "memshot_lme_retrieval": pl.DataFrame(rows)}, ReportOptions(n_resamples=50), Links())
    lme = next(s for s in secs if s.id == "memshot-lme-retrieval")
    assert [t.id for t in lme.tables] == ["memshot-lme-session-session", "memshot-lme-turn-session",
                                          "memshot-lme-turn-turn"]
    assert "turn→session" in lme.tables[1].title and lme.tables[0].df.columns[:3] == ["variant", "embedder", "k"]


def test_paper_f1_is_the_f1_column_and_the_official_one_stands_beside_it():
    ans = _known().with_columns((pl.col("f1") / 2).alias("f1_mem0"), pl.lit("minilm (stand-in)").alias("embedder"))
    t = memshot.category_table(ans)
    r5 = t.filter(pl.col("k") == 5).row(0, named=True)
    assert r5["single-hop F1"] == 0.375 and r5["Overall F1"] == 0.25  # the paper's (f1_mem0)
    assert r5[f"Overall {memshot.OFFICIAL_F1}"] == 0.5  # the official LoCoMo F1, named
    assert r5["embedder"] == "minilm (stand-in)"  # the retriever, stand-in marked, like the recall tables
    from vismem.memory.dialogue.scoring import F1_NAMES

    assert memshot.F1_NAMES == F1_NAMES and "paper" in F1_NAMES["f1_mem0"]
    assert memshot.by_k_table(ans, ["variant"]).row(0, named=True)["Top-5 F1"] == 0.25


def test_table3_names_text_rag_as_full_session_without_rendering_and_table5_keeps_full_session():
    base = _known()
    rows = pl.concat([base.with_columns(pl.lit(v).alias("variant"), pl.lit(h, pl.Int64).alias("max_height"))
                      for v, h in (("text-rag", None), ("full-session-no-render", None), ("h512", 512),
                                   ("memshot", 768), ("full-session", None))])
    ab = memshot.ablation_table(rows)
    named = dict(zip(ab["variant"], ab["paper_row"]))
    assert named["text-rag"].startswith("Full Session w/o Rendering (= Text RAG")
    assert "not in the paper" in named["full-session-no-render"]
    ht = memshot.height_table(rows)
    assert ht["variant"].to_list() == ["h512", "memshot", "full-session"]
    assert ht["max_height"].to_list() == [512, 768, None]


def test_quoted_latency_only_where_table1_shows_it_and_fig1_points():
    from vismem.analysis.memshot_sections import fig1_table, latency_table

    lat = pl.DataFrame({"conversation_id": ["c0"] * 3, "variant": ["memshot", "no-header", "text-rag"],
                        "render_s": [0.1] * 3, "embed_s": [1.0] * 3, "construction_s": [1.1] * 3})
    q = dict(zip(*latency_table(lat).select("variant", "paper_s (quoted)").to_dict(as_series=False).values()))
    assert q == {"memshot": 9.56, "no-header": None, "text-rag": 2.10}
    assert latency_table(lat, "longmemeval")["paper_s (quoted)"].is_null().all()
    quoted = fig1_table(None)
    assert set(quoted["backbone"]) >= {"Qwen3-VL-2B-Instruct", "Qwen3-VL-8B-Instruct", "Qwen3-VL-32B-Instruct"}
    ms = quoted.filter((pl.col("method") == "MemShot") & (pl.col("backbone") == "Qwen3-VL-8B-Instruct")).row(0, named=True)
    assert (ms["latency_s"], ms["acc"]) == (9.56, 0.7513)
    measured = fig1_table(_known().with_columns(pl.lit(3.0).alias("latency_s")))
    m = measured.filter(pl.col("source") == "measured")
    assert m["method"].to_list() == ["memshot@5", "memshot@10"] and (m["latency_s"] == 3.0).all()
    from vismem.analysis import figures

    png, _svg = figures.render(figures.latency_accuracy(measured))
    assert png.startswith(b"\x89PNG")


def test_report_captions_name_both_f1s_and_intervals_follow_the_paper_f1():
    from vismem.analysis.report_sections import Links, ReportOptions, memshot_sections

    ans = _known().with_columns((pl.col("f1") / 2).alias("f1_mem0"))
    main = memshot_sections(ans, None, ReportOptions(n_resamples=50), Links())[0]
    t = main.tables[0]
    assert "paper F1" in t.caption and f"Overall {memshot.OFFICIAL_F1}: official LoCoMo F1" in t.caption
    r5 = t.df.filter(pl.col("k") == 5).row(0, named=True)
    assert r5["Overall F1 lo"] <= r5["Overall F1"] == 0.25 <= r5["Overall F1 hi"] <= 0.5


def test_acc_tables_name_who_judged_when_the_answers_carry_it():
    from vismem.analysis.render import to_html
    from vismem.analysis.report import ReportOptions, build_report

    judged = _known().with_columns(pl.lit("scripted:judge (stand-in)").alias("judge"))
    cat = memshot.category_table(judged)
    assert cat.columns[:3] == ["dataset", "model", "judge"] and cat["judge"].unique().to_list() == [
        "scripted:judge (stand-in)"]
    # The same numbers as without the column: one judge per run adds a label, not a split.
    assert cat.drop("judge").equals(memshot.category_table(_known()))
    abl = memshot.ablation_table(judged)
    assert abl.columns[:4] == ["dataset", "model", "judge", "variant"] and abl.height == 1
    rep = build_report({"memshot_answers": judged}, "j", options=ReportOptions(n_resamples=100, seed=1))
    tables = {t.id: t for t in rep.tables()}
    for tid in ("memshot-locomo", "memshot-ablations"):
        assert tables[tid].df["judge"].to_list()[0] == "scripted:judge (stand-in)" and tables[tid].ci, tid
    assert "scripted:judge (stand-in)" in to_html(rep)
    # Answers without the column (no judge ran, or an older run): tables as before.
    assert "judge" not in memshot.category_table(_known()).columns
