"""Retrieval on a hand-made conversation: ranking, exact evidence recall@k, item building."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vismem.memory.dialogue import retrieval as R
from vismem.serve.embed import l2_normalise

VOCAB = ["dog", "paris", "painting", "guitar", "sunrise", "job", "cat"]


class BagOfWords:
    """A transparent embedder: one dimension per vocabulary word (tests only)."""

    name = "bow"
    dim = len(VOCAB)

    def embed_texts(self, texts):
        return l2_normalise(np.array([[t.lower().count(w) + 1e-3 * (i + 1) for i, w in enumerate(VOCAB)]
                                      for t in texts], dtype=np.float32))

    def embed_images(self, images, texts=None):
        # "images" here are bytes holding text: enough to check the image path is taken.
        return self.embed_texts([b.decode() for b in images])


def _units() -> pl.DataFrame:
    return pl.DataFrame({
        "variant": ["text-rag"] * 3 + ["memshot"] * 2,
        "conversation_id": ["c1"] * 5,
        "unit_id": ["s1", "s2", "s3", "m1", "m2"],
        "dia_ids": [["D1:1", "D1:2"], ["D2:1", "D2:2"], ["D3:1"], ["D1:1", "D1:2", "D2:1"], ["D2:2", "D3:1"]],
        "modality": ["text"] * 3 + ["image"] * 2,
        "text": ["my dog likes paris", "painting a sunrise", "new job, new guitar", None, None],
        "image_key": [None, None, None, "shots/m1.png", "shots/m2.png"],
    })


def _questions() -> pl.DataFrame:
    return pl.DataFrame({
        "conversation_id": ["c1", "c1", "c1"],
        "question_id": ["q1", "q2", "q3"],
        "question": ["Where did the dog go?", "What did she paint at sunrise?", "What about the guitar and the dog?"],
        "evidence": [["D1:1"], ["D2:2"], ["D3:1", "D1:2"]],
        "category": ["single-hop", "single-hop", "multi-hop"],
    })


IMAGES = {"shots/m1.png": b"dog paris painting", "shots/m2.png": b"sunrise guitar job"}


def _ranked(k_max=3):
    units, qs = _units(), _questions()
    items = R.embedding_items(units, qs)
    vecs, secs = R.embed_items(items, BagOfWords(), read_image=IMAGES.__getitem__, batch_size=2)
    assert vecs.shape == (items.height, len(VOCAB)) and secs.shape == (items.height,) and (secs >= 0).all()
    return R.rank_units(units, qs, dict(zip(items["item_id"].to_list(), vecs)), k_max), units, qs


def test_embedding_items_dedupes_questions_and_keeps_modalities():
    units, qs = _units(), _questions()
    items = R.embedding_items(units, pl.concat([qs, qs]))
    assert items.height == 5 + 3
    assert items.filter(pl.col("modality") == "image")["image_key"].to_list() == ["shots/m1.png", "shots/m2.png"]
    assert items["item_id"][0] == "u:text-rag:s1" and items["item_id"][-1] == "q:c1:q3"


def test_rank_units_by_cosine_within_variant():
    ranked, _, _ = _ranked()
    top1 = {(r["variant"], r["question_id"]): r["unit_id"] for r in ranked.filter(pl.col("rank") == 1).iter_rows(named=True)}
    assert top1[("text-rag", "q1")] == "s1"
    assert top1[("text-rag", "q2")] == "s2"
    assert top1[("memshot", "q2")] == "m2"  # image path: read through the store reader
    # memshot has only 2 units: k_max=3 yields 2 ranks; scores are non-increasing
    assert ranked.filter((pl.col("variant") == "memshot") & (pl.col("question_id") == "q1")).height == 2
    for _, g in ranked.group_by(["variant", "question_id"]):
        s = g.sort("rank")["score"].to_list()
        assert s == sorted(s, reverse=True)


def test_evidence_recall_exact_from_recorded_dia_ids():
    # A hand-written ranking so recall is computed from known top-k sets.
    ranked = pl.DataFrame({
        "variant": ["text-rag"] * 6, "conversation_id": ["c1"] * 6,
        "question_id": ["q1", "q1", "q2", "q2", "q3", "q3"],
        "rank": [1, 2, 1, 2, 1, 2], "unit_id": ["s2", "s1", "s1", "s3", "s3", "s2"], "score": [0.0] * 6,
    })
    rec = R.evidence_recall(ranked, _units(), _questions(), ks=[1, 2])
    got = {(r["question_id"], r["k"]): (r["recall"], r["hit"]) for r in rec.iter_rows(named=True)}
    assert got[("q1", 1)] == (0.0, False)   # s2 shows D2:*, not D1:1
    assert got[("q1", 2)] == (1.0, True)    # s1 shows D1:1
    assert got[("q2", 1)] == (0.0, False)
    assert got[("q2", 2)] == (0.0, False)   # D2:2 is only in s2
    assert got[("q3", 1)] == (0.5, True)    # s3 shows D3:1 but not D1:2
    assert got[("q3", 2)] == (0.5, True)
    assert set(rec["n_evidence"].to_list()) == {1, 2}


def _locomo_recall(evidence: list[str], shown: set[str]) -> float:
    """LoCoMo's ``eval_question_answering`` recall of one question (turn-level context), re-written:
    the share of evidence shown, and 1 for a question with no evidence."""
    return sum(e in shown for e in evidence) / len(evidence) if evidence else 1.0


def test_recall_of_a_question_without_evidence_is_one_as_locomo_scores_it_or_left_out():
    qs = _questions().with_columns(pl.when(pl.col("question_id") == "q2").then(pl.lit([], pl.List(pl.Utf8)))
                                   .otherwise(pl.col("evidence")).alias("evidence"))
    ranked, units, _ = _ranked()
    rec = R.evidence_recall(ranked, units, qs, ks=[1, 3])
    dia = {(v, u): set(d) for v, u, d in units.select("variant", "unit_id", "dia_ids").iter_rows()}
    ev = dict(qs.select("question_id", "evidence").iter_rows())
    for r in rec.iter_rows(named=True):  # every row as the official code scores it
        top = ranked.filter((pl.col("variant") == r["variant"]) & (pl.col("question_id") == r["question_id"])
                            & (pl.col("rank") <= r["k"]))["unit_id"].to_list()
        shown = set().union(*[dia[(r["variant"], u)] for u in top])
        assert r["recall"] == pytest.approx(_locomo_recall(ev[r["question_id"]], shown))
    q2 = rec.filter(pl.col("question_id") == "q2")
    assert q2.height == 4 and q2["hit"].null_count() == 4 and set(q2["n_evidence"]) == {0}
    summary = R.recall_summary(rec)
    overall = summary.filter((pl.col("category") == "overall") & (pl.col("variant") == "text-rag") & (pl.col("k") == 3))
    assert overall["n"][0] == 3
    # text-rag has 3 units, so k=3 shows every dia_id: recall 1 (q2 too); hit over the two with evidence
    assert overall["recall"][0] == pytest.approx(1.0) and overall["hit_rate"][0] == pytest.approx(1.0)
    dropped = R.evidence_recall(ranked, units, qs, ks=[1, 3], no_evidence="drop")  # LongMemEval's rule
    assert "q2" not in dropped["question_id"].to_list() and dropped.height == rec.height - 4
    with pytest.raises(ValueError, match="no_evidence"):
        R.evidence_recall(ranked, units, qs, ks=[1], no_evidence="zero")


def test_missing_columns_raise_data_error():
    from vismem.core.errors import DataError

    with pytest.raises(DataError, match="dia_ids"):
        R.embedding_items(_units().drop("dia_ids"), _questions())


def test_questions_use_the_query_instruction_of_instruction_aware_embedders():
    class Instructed(BagOfWords):
        def __init__(self):
            self.queries: list[str] = []

        def embed_queries(self, texts):
            self.queries += list(texts)
            return self.embed_texts(texts)

    units, qs = _units(), _questions()
    items = R.embedding_items(units, qs)
    assert set(items.filter(pl.col("item_id").str.starts_with("q:"))["modality"]) == {"query"}
    emb = Instructed()
    R.embed_items(items, emb, read_image=IMAGES.__getitem__)
    assert emb.queries == qs["question"].to_list()  # units never go through the query path


def test_a_question_with_no_ranked_unit_scores_zero_not_dropped():
    ranked, units, qs = _ranked(k_max=3)
    extra = pl.DataFrame({"conversation_id": ["c2"], "question_id": ["q9"], "question": ["dog?"],
                          "evidence": [["D9:1"]], "category": ["single-hop"]})
    rec = R.evidence_recall(ranked, units, pl.concat([qs, extra]), ks=[5])
    row = rec.filter(pl.col("question_id") == "q9")
    assert row.height == 2  # one per ranked variant
    assert row["recall"].to_list() == [0.0, 0.0] and row["hit"].to_list() == [False, False]


def test_evidence_ranks_place_the_first_evidence_unit_in_the_whole_ranking():
    """Where the first unit holding an evidence turn sits in the full ranking, with rank_units'
    order: within the top k it equals the kept ranking's first evidence rank; below it, a rank
    the kept ranking cannot give."""
    units = _units()
    # q4 asks about the dog in Paris; its evidence is the guitar turn (ranked low by both variants).
    qs = pl.concat([_questions(), pl.DataFrame({"conversation_id": ["c1"], "question_id": ["q4"],
                                                "question": ["dog in paris?"], "evidence": [["D3:1"]],
                                                "category": ["single-hop"]})])
    items = R.embedding_items(units, qs)
    vecs, _ = R.embed_items(items, BagOfWords(), read_image=IMAGES.__getitem__, batch_size=2)
    vectors = dict(zip(items["item_id"].to_list(), vecs))
    full = R.rank_units(units, qs, vectors, 10)
    top1 = R.rank_units(units, qs, vectors, 1)
    er = R.evidence_ranks(units, qs, vectors)
    assert er.height == 2 * 4  # one row per variant x question with evidence
    dia = {(v, u): set(d) for v, u, d in units.select("variant", "unit_id", "dia_ids").iter_rows()}
    ev = {q: set(e) for q, e in qs.select("question_id", "evidence").iter_rows()}
    below = 0
    for r in er.iter_rows(named=True):
        order = full.filter((pl.col("variant") == r["variant"]) & (pl.col("question_id") == r["question_id"])).sort("rank")
        want = next(i + 1 for i, u in enumerate(order["unit_id"]) if dia[(r["variant"], u)] & ev[r["question_id"]])
        assert r["evidence_rank"] == want and r["evidence_unit"] == order["unit_id"][want - 1]
        assert r["evidence_score"] == pytest.approx(order["score"][want - 1], abs=1e-6)
        assert r["n_units"] == order.height
        kept = top1.filter((pl.col("variant") == r["variant"]) & (pl.col("question_id") == r["question_id"]))
        below += r["evidence_rank"] > kept.height
    assert below > 0  # some evidence ranked below the kept top 1: what the new column tells
    none = R.evidence_ranks(units, qs.with_columns(pl.lit(["D9:9"]).alias("evidence")), vectors)
    assert none["evidence_rank"].null_count() == none.height and none["evidence_unit"].null_count() == none.height
