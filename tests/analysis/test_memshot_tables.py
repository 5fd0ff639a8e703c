"""MemShot tables on hand-built answers with known Acc/F1."""

from __future__ import annotations

import math

import polars as pl

from analysis import memshot
from analysis.schemas import validate


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
    assert [c for c in t.columns if c.endswith("Acc")] == ["temporal Acc", "single-hop Acc", "Overall Acc"]
    r5 = t.filter(pl.col("k") == 5).row(0, named=True)
    assert r5["single-hop Acc"] == 0.5 and r5["single-hop F1"] == 0.75 and r5["temporal Acc"] == 1.0
    assert r5["Overall Acc"] == 2 / 3 and r5["Overall F1"] == 0.5 and r5["n"] == 3
    assert r5["coverage"] == 1.0
    r10 = t.filter(pl.col("k") == 10).row(0, named=True)
    assert r10["single-hop Acc"] == 0.5  # the unanswered/unjudged answer counts as wrong ...
    assert r10["Overall Acc"] == 2 / 3 and r10["coverage"] == 2 / 3  # ... in the denominator, and coverage says so
    assert math.isclose(r10["single-hop F1"], 0.6)  # F1 counts it too
    with_adv = memshot.category_table(_known(), exclude_categories=())
    assert "adversarial Acc" in with_adv.columns


def test_by_k_tables_and_height_sweep():
    base = _known()
    ab = memshot.ablation_table(base)
    assert ab.columns == ["dataset", "model", "variant", "max_height", "Top-5 Acc", "Top-5 F1", "Top-10 Acc",
                          "Top-10 F1"]
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
