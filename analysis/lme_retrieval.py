"""LongMemEval's own retrieval metrics, as its ``src/retrieval`` evaluation defines them.

Beside our evidence recall@k (the share of evidence turns shown), LongMemEval reports per question
and then averages:

* ``recall_any@k``: 1 if any relevant item is among the top k, ``recall_all@k``: 1 if all are;
* ``ndcg_any@k``: DCG of the top-k relevance list over the DCG of the ideal one, with
  LongMemEval's discount -- the first *two* positions count fully (item ``i`` >= 2, 1-based, is
  divided by ``log2(i)``), the ideal list being every relevant item of the whole corpus first;
* session level: from a session ranking, or from a turn ranking (``turn→session``) where each
  turn stands for its session and k grows until the top k turns cover k distinct sessions
  (relevance then counts per turn, as upstream);
* k in 1, 3, 5, 10, 30, 50; abstention questions (``_abs`` in the id) and questions whose
  haystack has no user turn labelled ``has_answer`` are left out of the averages.

The corpus is LongMemEval's: user turns only (a session is its user turns); an item is relevant
when its session is an answer session (``answer`` in the id) and, for a turn, it is labelled
``has_answer``, for a session, one of its user turns is
(``vismem.env.dialogue.longmemeval.retrieval_corpus`` builds it from a conversation).

Frames
``ranked``    question_id, rank (1-based), corpus_id [, lme_session for turn→session]: a question's
              whole corpus, best first (``ranking_from_units`` makes one from ranked memory units)
``relevant``  question_id, corpus_id: the relevant items of each question's corpus
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import polars as pl

#: The cut-offs LongMemEval reports.
KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
METRICS: tuple[str, ...] = ("recall_any", "recall_all", "ndcg_any")
_TURNS_PER_UNIT = 1 << 20  # sort key rank * this + turn position within the unit
_OUT = {"question_id": pl.String, "level": pl.String, "k": pl.Int64,
        "recall_any": pl.Float64, "recall_all": pl.Float64, "ndcg_any": pl.Float64}


def dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's DCG@k: ``r1 + sum_{i>=2} r_i / log2(i)`` over the first k (1-based i)."""
    r = list(relevances)[:k]
    return (r[0] + sum(r[i] / math.log2(i + 1) for i in range(1, len(r)))) if r else 0.0


def evaluate(ranked_ids: Sequence[str], correct: Iterable[str], k: int) -> tuple[float, float, float]:
    """``(recall_any, recall_all, ndcg_any)`` at k of one question's full ranking (upstream
    ``evaluate_retrieval``; ``ranked_ids`` may repeat an id, each occurrence counting)."""
    correct = set(correct)
    top = set(ranked_ids[:k])
    rels = [1.0 if i in correct else 0.0 for i in ranked_ids]
    ideal = dcg(sorted(rels, reverse=True), k)
    nd = dcg(rels[:k], k) / ideal if ideal else 0.0
    return float(any(c in top for c in correct)), float(all(c in top for c in correct)), nd


def evaluate_turn_to_session(turn_sessions: Sequence[str], correct_sessions: Iterable[str],
                             k: int) -> tuple[float, float, float]:
    """Session-level metrics of a turn ranking given as each ranked turn's session (upstream
    ``evaluate_retrieval_turn2session``): k grows until the top turns cover k sessions."""
    eff = k
    while eff <= len(turn_sessions) and len(set(turn_sessions[:eff])) < k:
        eff += 1
    return evaluate(turn_sessions, correct_sessions, eff)


def _grouped(ranked: pl.DataFrame, relevant: pl.DataFrame, col: str) -> list[tuple[str, list[str], set[str]]]:
    need = {"question_id", "rank", col}
    if missing := need - set(ranked.columns):
        from vismem.core.errors import DataError

        raise DataError(f"ranked frame lacks column(s) {sorted(missing)}; has {ranked.columns}")
    order = ranked.sort("question_id", "rank").group_by("question_id", maintain_order=True).agg(pl.col(col))
    rel: dict[str, set[str]] = {}
    for qid, cid in relevant.select("question_id", "corpus_id").iter_rows():
        rel.setdefault(qid, set()).add(cid)
    return [(qid, ids, rel.get(qid, set())) for qid, ids in order.iter_rows()]


def retrieval_metrics(ranked: pl.DataFrame, relevant: pl.DataFrame, *, level: str,
                      ks: Sequence[int] = KS) -> pl.DataFrame:
    """Per question and k: recall_any, recall_all, ndcg_any of a ranking at its own granularity
    (``level``: ``session`` or ``turn``, a label for the output)."""
    rows = [(qid, level, k, *evaluate(ids, rel, k))
            for qid, ids, rel in _grouped(ranked, relevant, "corpus_id") for k in ks]
    return pl.DataFrame(rows, schema=_OUT, orient="row")


def turn_to_session_metrics(ranked: pl.DataFrame, relevant: pl.DataFrame, *, ks: Sequence[int] = KS,
                            session_col: str = "lme_session") -> pl.DataFrame:
    """Session-level metrics of a *turn* ranking (``ranked`` with ``session_col``; ``relevant``
    holds relevant turn ids, whose sessions are the relevant sessions).

    ``session_col`` is each turn's session as LongMemEval keys it: upstream renames the id of an
    unlabelled turn of an answer session (``answer_…`` → ``noans_…``) before stripping the turn
    number, so such a turn stands for a session of its own, never the relevant one
    (``retrieval_corpus`` writes that key as ``lme_session``).
    """
    if session_col not in ranked.columns:
        from vismem.core.errors import DataError

        raise DataError(f"ranked frame lacks column {session_col!r} (turn→session); has {ranked.columns}")
    sess = relevant.join(ranked.select("question_id", "corpus_id", session_col).unique(),
                         on=["question_id", "corpus_id"], how="inner")
    rel = sess.select("question_id", pl.col(session_col).alias("corpus_id")).unique()
    rows = [(qid, "session", k, *evaluate_turn_to_session(sids, r, k))
            for qid, sids, r in _grouped(ranked, rel, session_col) for k in ks]
    return pl.DataFrame(rows, schema=_OUT, orient="row")


def summary(per_question: pl.DataFrame, questions: pl.DataFrame, *, by: Sequence[str] = ()) -> pl.DataFrame:
    """Means per (``by``..., level, k) as LongMemEval reports them, with ``n`` questions.

    ``questions``: question_id, has_target (a user turn labelled ``has_answer``); ``_abs``
    questions and those without a target are left out, as upstream.
    """
    keep = questions.filter(~pl.col("question_id").str.contains("_abs", literal=True) & pl.col("has_target"))
    df = per_question.join(keep.select("question_id"), on="question_id", how="semi")
    keys = [*by, "level", "k"]
    return (df.group_by(keys).agg(pl.len().alias("n"), *[pl.col(m).mean() for m in METRICS])
            .sort(keys))


def ranking_from_units(ranked_units: pl.DataFrame, units: pl.DataFrame, corpus: pl.DataFrame) -> pl.DataFrame:
    """A full corpus ranking induced by ranked memory units (shots, text chunks).

    ``ranked_units``: question_id, conversation_id, rank, unit_id; ``units``: conversation_id,
    unit_id, dia_ids; ``corpus``: question_id, corpus_id, session_id, dia_ids, position. An item
    ranks where the first unit showing one of its dia_ids ranks (ties in the unit's turn order);
    items no unit shows follow in corpus order with ``retrieved`` false -- metrics at a k past
    the retrieved depth then rank them by position, not by the retriever.
    """
    shown = (ranked_units.join(units.select("conversation_id", "unit_id", "dia_ids"),
                               on=["conversation_id", "unit_id"], how="inner")
             .with_columns(pl.col("dia_ids").list.eval(pl.int_range(pl.len())).alias("_pos"))
             .explode("dia_ids", "_pos").rename({"dia_ids": "dia_id"}))
    items = corpus.explode("dia_ids").rename({"dia_ids": "dia_id"})
    first = (items.join(shown.select("question_id", "dia_id", "rank", "_pos"), on=["question_id", "dia_id"])
             .group_by("question_id", "corpus_id")
             .agg((pl.col("rank").cast(pl.Int64) * _TURNS_PER_UNIT + pl.col("_pos")).min().alias("_key")))
    out = (corpus.drop("dia_ids").join(first, on=["question_id", "corpus_id"], how="left")
           .with_columns(pl.col("_key").is_not_null().alias("retrieved"))
           .sort("question_id", "_key", "position", nulls_last=True)
           .with_columns(pl.int_range(1, pl.len() + 1).over("question_id").alias("rank")))
    return out.drop("_key")
