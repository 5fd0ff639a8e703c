"""LongMemEval's retrieval metrics on hand-computed cases (its DCG discount, turn→session, exclusions)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from vismem.analysis.lme_retrieval import (
    dcg, evaluate, ranking_from_units, retrieval_metrics, summary, turn_to_session_metrics)


def _ranked(qid: str, ids: list[str], sessions: list[str] | None = None) -> pl.DataFrame:
    d = {"question_id": [qid] * len(ids), "rank": list(range(1, len(ids) + 1)), "corpus_id": ids}
    if sessions is not None:
        d["lme_session"] = sessions
    return pl.DataFrame(d)


def _rel(qid: str, ids: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"question_id": [qid] * len(ids), "corpus_id": ids})


def test_dcg_counts_the_first_two_positions_fully():
    assert dcg([1, 1, 1], 3) == pytest.approx(1 + 1 + 1 / math.log2(3))
    assert dcg([0, 0, 0, 1], 3) == 0.0 and dcg([], 5) == 0.0


def test_session_level_by_hand():
    m = retrieval_metrics(_ranked("q", ["B", "A", "D", "C"]), _rel("q", ["B", "D"]), level="session", ks=(1, 3))
    r1, r3 = m.row(0, named=True), m.row(1, named=True)
    assert (r1["recall_any"], r1["recall_all"], r1["ndcg_any"]) == (1.0, 0.0, 1.0)
    assert (r3["recall_any"], r3["recall_all"]) == (1.0, 1.0)
    # actual [1,0,1] -> 1 + 0/1 + 1/log2 3; ideal [1,1,0] -> 2 (a log2(i+1) discount would give 0.92)
    assert r3["ndcg_any"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert r3["level"] == "session" and m.height == 2


def test_no_relevant_item_scores_zero_ndcg_and_vacuous_recall_all():
    assert evaluate(["A", "B"], [], 1) == (0.0, 1.0, 0.0)


def test_turn_to_session_grows_k_and_counts_turns():
    ranked = _ranked("q", ["t1", "t2", "t3", "t4", "t5"], ["S1", "S1", "S2", "S3", "S2"])
    m = turn_to_session_metrics(ranked, _rel("q", ["t3"]), ks=(1, 2))
    r1, r2 = m.row(0, named=True), m.row(1, named=True)
    assert (r1["recall_any"], r1["recall_all"], r1["ndcg_any"]) == (0.0, 0.0, 0.0)
    # k=2 needs 3 turns to cover 2 sessions; S2 has two turns, so the ideal list is [1, 1, 0]
    assert (r2["recall_any"], r2["recall_all"]) == (1.0, 1.0)
    assert r2["ndcg_any"] == pytest.approx((1 / math.log2(3)) / 2)
    with pytest.raises(Exception, match="lme_session"):
        turn_to_session_metrics(ranked.drop("lme_session"), _rel("q", ["t3"]))


def test_summary_leaves_out_abstention_and_targetless_questions():
    per = pl.concat([
        retrieval_metrics(_ranked(q, ["A", "B"]), _rel(q, [rel]), level="session", ks=(1,))
        for q, rel in (("q1", "A"), ("q2", "B"), ("q3_abs", "A"), ("q4", "A"))])
    qs = pl.DataFrame({"question_id": ["q1", "q2", "q3_abs", "q4"], "has_target": [True, True, True, False]})
    s = summary(per, qs)
    row = s.row(0, named=True)
    assert s.height == 1 and row["n"] == 2 and row["recall_any"] == 0.5 and row["k"] == 1


def test_ranking_from_units_orders_by_first_showing_unit():
    units = pl.DataFrame({"conversation_id": ["c", "c"], "unit_id": ["U1", "U2"],
                          "dia_ids": [["s1:1", "s2:1"], ["s3:1"]]})
    ranked_units = pl.DataFrame({"question_id": ["q", "q"], "conversation_id": ["c", "c"],
                                 "rank": [2, 1], "unit_id": ["U1", "U2"]})
    corpus = pl.DataFrame({"question_id": ["q"] * 4, "corpus_id": ["s1:1", "s2:1", "s3:1", "s4:1"],
                           "session_id": ["s1", "s2", "s3", "s4"],
                           "dia_ids": [["s1:1"], ["s2:1"], ["s3:1"], ["s4:1"]], "position": [0, 1, 2, 3]})
    out = ranking_from_units(ranked_units, units, corpus)
    assert out["corpus_id"].to_list() == ["s3:1", "s1:1", "s2:1", "s4:1"]
    assert out["rank"].to_list() == [1, 2, 3, 4] and out["retrieved"].to_list() == [True, True, True, False]


def test_oracle_ranking_of_a_synthetic_file(tmp_path):
    from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval
    from vismem.env.dialogue.longmemeval import has_retrieval_target, load_longmemeval, retrieval_corpus

    write_synthetic_longmemeval(tmp_path / "s.json", seed=4, n_questions=12, sessions_per_question=8)
    convs = load_longmemeval(tmp_path / "s.json")
    corpus = pl.DataFrame([r for c in convs for r in retrieval_corpus(c, "turn")])
    oracle = corpus.sort("question_id", pl.col("relevant").not_(), "position").with_columns(
        pl.int_range(1, pl.len() + 1).over("question_id").alias("rank"))
    rel = corpus.filter("relevant").select("question_id", "corpus_id")
    turn = retrieval_metrics(oracle, rel, level="turn")
    sess = turn_to_session_metrics(oracle, rel)
    qs = pl.DataFrame({"question_id": [c.conversation_id for c in convs],
                       "has_target": [has_retrieval_target(c) for c in convs]})
    s = summary(pl.concat([turn, sess]), qs)
    # 12 questions: 2 abstention, 2 single-session-assistant (evidence in an assistant turn) left out
    assert set(s["n"].to_list()) == {8}
    assert s.filter(pl.col("k") >= 3)["recall_all"].min() == 1.0 and s["ndcg_any"].min() == 1.0
    sessions = pl.DataFrame([r for c in convs for r in retrieval_corpus(c, "session")])
    assert sessions.filter("relevant").height == sum(
        len(c.questions[0].evidence_sessions) for c in convs if c.questions[0].category != "single-session-assistant")
    oracle_s = sessions.sort("question_id", pl.col("relevant").not_(), "position").with_columns(
        pl.int_range(1, pl.len() + 1).over("question_id").alias("rank"))
    s2 = summary(retrieval_metrics(oracle_s, sessions.filter("relevant"), level="session"), qs)
    assert s2["ndcg_any"].min() == 1.0 and s2.filter(pl.col("k") == 1)["recall_all"].max() < 1.0  # 2-3 answer sessions
