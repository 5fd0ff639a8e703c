"""Answers join recall rows of the retriever that chose their units only (found by the engine tier's
paper-shape run: with ``memshot.extra_retrievers`` every answer was written once per retriever and
the answers table refused its duplicate keys at the end of the stage)."""

from __future__ import annotations

import polars as pl

from vismem.pipelines.memshot.answers import answer_hits


def test_extra_retrievers_recall_rows_do_not_multiply_the_answers():
    recall = pl.DataFrame({
        "variant": ["memshot", "memshot", "text-rag", "text-rag"], "conversation_id": ["c"] * 4,
        "question_id": ["q1"] * 4, "k": [5] * 4, "hit": [True, False, False, True],
        "embedder": ["qwen3-vl-embedding-8b", "jina-embeddings-v4", "qwen3-vl-embedding-8b", "jina-embeddings-v4"]})
    hits = answer_hits(recall, {"memshot": "qwen3-vl-embedding-8b", "text-rag": "qwen3-vl-embedding-8b"})
    assert hits.sort("variant").to_dicts() == [
        {"variant": "memshot", "conversation_id": "c", "question_id": "q1", "k": 5, "recall_hit": True},
        {"variant": "text-rag", "conversation_id": "c", "question_id": "q1", "k": 5, "recall_hit": False}]
    answers = pl.DataFrame({"variant": ["memshot", "text-rag"], "conversation_id": ["c"] * 2,
                            "question_id": ["q1"] * 2, "k": [5, 5]})
    assert answers.join(hits, on=["variant", "conversation_id", "question_id", "k"], how="left").height == 2
    # without an embedder map (or column) every row is the answers' own
    assert answer_hits(recall.drop("embedder"), None).height == 4
