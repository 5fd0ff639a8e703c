"""MemShot retrieval: embed memory units and questions, rank units per question, evidence recall@k.

Three layers, each usable alone:

* **Embedding** goes through the :class:`vismem.serve.embed.Embedder` protocol only. Text units
  (Text RAG, w/o Rendering) use ``embed_texts``; image units (memory shots) use
  ``embed_images`` with the shot PNG read from the store. :func:`embed_items` runs in-process
  (small local sizes); the same work as a Ray Data job, one embedder per actor, is
  :func:`vismem.pipelines.memshot.embed.embed_items_ray` (jobs live in the orchestration package).
* **Ranking** (:func:`rank_units`) is cosine top-k within the question's own conversation.
* **Recall** (:func:`evidence_recall`, :func:`recall_summary`) are pure functions over Polars
  frames: a unit *shows* a dia_id when the renderer recorded it in the unit's ``dia_ids``;
  ``recall@k`` is the fraction of a question's evidence dia_ids shown by its top-k units (the
  official LoCoMo ``recall_acc``) and ``hit@k`` whether at least one is.

Frames (column names are the contract with the render job and the analysis schemas):

``units``      variant, conversation_id, unit_id, dia_ids: list[str], modality ("text"|"image"|"ocr"),
               text (text units), image_key (image units); optional session_index, unit_index
``questions``  conversation_id, question_id, question, evidence: list[str], category, ...
``ranked``     variant, conversation_id, question_id, rank (1-based), unit_id, score
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import polars as pl

UNIT_COLUMNS = ("variant", "conversation_id", "unit_id", "dia_ids", "modality")
QUESTION_COLUMNS = ("conversation_id", "question_id", "question", "evidence", "category")


def _require(df: pl.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        from vismem.core.errors import DataError

        raise DataError(f"{what} frame lacks column(s) {missing}; has {df.columns}")


# -- questions from the typed dialogue model -----------------------------------------------------

def questions_frame(conversations: Sequence[Any], *, scored_only: bool = True) -> pl.DataFrame:
    """One row per question of ``vismem.env.dialogue`` Conversations (what retrieval and answering need)."""
    rows = []
    for conv in conversations:
        for q in conv.questions:
            if scored_only and not getattr(q, "scored", True):
                continue
            rows.append({
                "dataset": conv.dataset, "conversation_id": conv.conversation_id,
                "question_id": q.question_id, "question": q.question,
                "answer": None if q.answer is None else str(q.answer),
                "category": q.category, "category_code": str(q.category_code),
                "evidence": list(q.evidence), "abstention": bool(getattr(q, "abstention", False)),
                # The official reader prompt shows the date as the dataset writes it ("2023/05/30 (Tue)
                # 23:40"); the parsed datetime is a fallback for records built without the raw text.
                "question_date": getattr(q, "question_date_text", None)
                or (q.question_date.isoformat() if getattr(q, "question_date", None) else None),
                "adversarial_answer": getattr(q, "adversarial_answer", None),
                "speaker_a": conv.speakers[0], "speaker_b": conv.speakers[1],
            })
    schema = {"dataset": pl.Utf8, "conversation_id": pl.Utf8, "question_id": pl.Utf8, "question": pl.Utf8,
              "answer": pl.Utf8, "category": pl.Utf8, "category_code": pl.Utf8, "evidence": pl.List(pl.Utf8),
              "abstention": pl.Boolean, "question_date": pl.Utf8, "adversarial_answer": pl.Utf8,
              "speaker_a": pl.Utf8, "speaker_b": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


# -- embedding -----------------------------------------------------------------------------------

def unit_item_id() -> pl.Expr:
    """The embedding item id of a unit row, ``u:<variant>:<unit_id>`` (one expression for every
    stage that keys unit vectors or texts)."""
    return (pl.lit("u:") + pl.col("variant") + pl.lit(":") + pl.col("unit_id").cast(pl.Utf8)).alias("item_id")


def embedding_items(units: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """Everything one embedder must encode: each unit once, each question once.

    Columns: ``item_id`` (``u:<variant>:<unit_id>`` / ``q:<conversation_id>:<question_id>``),
    ``modality`` (``text``/``image`` for units, ``query`` for questions), ``text``, ``image_key``.
    Questions are ``query`` rows because instruction-aware embedders (Qwen3-VL-Embedding) encode
    queries with a different instruction than documents.
    """
    _require(units, UNIT_COLUMNS, "units")
    _require(questions, QUESTION_COLUMNS, "questions")
    u = units.select(
        unit_item_id(),
        pl.col("modality"),
        (pl.col("text") if "text" in units.columns else pl.lit(None, pl.Utf8)).alias("text"),
        (pl.col("image_key") if "image_key" in units.columns else pl.lit(None, pl.Utf8)).alias("image_key"),
    )
    q = questions.select(
        (pl.lit("q:") + pl.col("conversation_id") + pl.lit(":") + pl.col("question_id")).alias("item_id"),
        pl.lit("query").alias("modality"), pl.col("question").alias("text"), pl.lit(None, pl.Utf8).alias("image_key"),
    ).unique("item_id", maintain_order=True)
    return pl.concat([u, q])


def embed_batch(embedder: Any, modality: Sequence[str], text: Sequence[str | None],
                 image_key: Sequence[str | None], read_image: Callable[[str], bytes]) -> np.ndarray:
    """Embed one mixed batch: text rows through ``embed_texts``, query rows through
    ``vismem.serve.embed.embed_queries``, image rows through ``embed_images``, and ``ocr`` rows (a
    shot's text as a pixel reader read it, see :mod:`vismem.memory.dialogue.pixels`) through the
    reader's ``embed_ocr_texts``."""
    from vismem.serve.embed import embed_queries

    n = len(modality)
    out: np.ndarray | None = None
    txt_idx = [i for i in range(n) if modality[i] == "text"]
    qry_idx = [i for i in range(n) if modality[i] == "query"]
    img_idx = [i for i in range(n) if modality[i] == "image"]
    ocr_idx = [i for i in range(n) if modality[i] == "ocr"]
    parts: list[tuple[list[int], np.ndarray]] = []
    if ocr_idx:
        from vismem.serve.embed import l2_normalise

        parts.append((ocr_idx, l2_normalise(embedder.embed_ocr_texts([text[i] or "" for i in ocr_idx]))))
    if txt_idx:
        parts.append((txt_idx, np.asarray(embedder.embed_texts([text[i] or "" for i in txt_idx]), dtype=np.float32)))
    if qry_idx:
        parts.append((qry_idx, np.asarray(embed_queries(embedder, [text[i] or "" for i in qry_idx]),
                                          dtype=np.float32)))
    if img_idx:
        images = [read_image(image_key[i]) for i in img_idx]
        parts.append((img_idx, np.asarray(embedder.embed_images(images), dtype=np.float32)))
    for idx, vecs in parts:
        if out is None:
            out = np.zeros((n, vecs.shape[1]), dtype=np.float32)
        out[idx] = vecs
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def embed_items(items: pl.DataFrame, embedder: Any, *, read_image: Callable[[str], bytes] | None = None,
                batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """In-process embedding of an items frame.

    Returns ``(vectors (n, d), seconds (n,))``: each item is charged an equal share of its
    batch's wall time, so construction latency can be attributed per conversation and variant.
    """
    from vismem.core.progress import track

    reader = read_image or (lambda key: (_ for _ in ()).throw(ValueError(f"no image reader for {key}")))
    chunks, secs = [], []
    starts = range(0, items.height, batch_size)
    # A bar: embedding on the driver is a memshot stage's longest step on a CPU.
    for start in track(starts, "memshot: embedding units and questions", total=len(starts)):
        b = items.slice(start, batch_size)
        t0 = time.perf_counter()
        chunks.append(embed_batch(embedder, b["modality"].to_list(), b["text"].to_list(),
                                   b["image_key"].to_list(), reader))
        secs.append(np.full(b.height, (time.perf_counter() - t0) / max(b.height, 1)))
    vecs = np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)
    return vecs, (np.concatenate(secs) if secs else np.zeros(0))


# -- ranking -------------------------------------------------------------------------------------

def rank_units(units: pl.DataFrame, questions: pl.DataFrame, vectors: dict[str, np.ndarray],
               k_max: int | None) -> pl.DataFrame:
    """Top-``k_max`` units per (variant, question) by cosine similarity, within the conversation
    (``k_max`` None: every unit, the whole ranking).

    ``vectors`` maps item ids (see :func:`embedding_items`) to unit-length vectors. Ties break
    by unit order in ``units`` (stable sort), so rankings are deterministic.
    """
    rows: list[dict[str, Any]] = []
    for (variant, conv), grp in units.group_by(["variant", "conversation_id"], maintain_order=True):
        uids = grp["unit_id"].cast(pl.Utf8).to_list()
        U = np.stack([vectors[f"u:{variant}:{u}"] for u in uids])
        qs = questions.filter(pl.col("conversation_id") == conv)
        if qs.height == 0:
            continue
        Q = np.stack([vectors[f"q:{conv}:{q}"] for q in qs["question_id"].to_list()])
        sims = Q @ U.T
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k_max]
        for qi, qid in enumerate(qs["question_id"].to_list()):
            for r, ui in enumerate(order[qi]):
                rows.append({"variant": variant, "conversation_id": conv, "question_id": qid,
                             "rank": r + 1, "unit_id": uids[ui], "score": float(sims[qi, ui])})
    schema = {"variant": pl.Utf8, "conversation_id": pl.Utf8, "question_id": pl.Utf8, "rank": pl.Int64,
              "unit_id": pl.Utf8, "score": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def evidence_ranks(units: pl.DataFrame, questions: pl.DataFrame, vectors: dict[str, np.ndarray]) -> pl.DataFrame:
    """Per (variant, question with evidence turns): where the first unit holding an evidence turn
    sits in the whole ranking of its conversation's units, beyond the top k :func:`rank_units`
    keeps -- ``evidence_rank`` (1-based, the order and ties of :func:`rank_units`; null when no
    unit holds an evidence turn), ``evidence_unit``, ``evidence_score`` and ``n_units`` (units
    ranked). A miss is then "rank 23 of 40", not only "not in the top 10"."""
    rows: list[dict[str, Any]] = []
    ev_of = {q: set(e or []) for q, e in questions.select("question_id", "evidence").iter_rows()}
    for (variant, conv), grp in units.group_by(["variant", "conversation_id"], maintain_order=True):
        uids = grp["unit_id"].cast(pl.Utf8).to_list()
        qids = [q for q in questions.filter(pl.col("conversation_id") == conv)["question_id"].to_list() if ev_of.get(q)]
        if not qids:
            continue
        holders: dict[str, list[int]] = {}  # dia_id -> units holding it (a haystack has thousands of units)
        for ui, dia in enumerate(grp["dia_ids"].to_list()):
            for d in dia or []:
                holders.setdefault(d, []).append(ui)
        U = np.stack([vectors[f"u:{variant}:{u}"] for u in uids])
        sims = np.stack([vectors[f"q:{conv}:{q}"] for q in qids]) @ U.T
        order = np.argsort(-sims, axis=1, kind="stable")
        rank_of = np.empty_like(order)
        np.put_along_axis(rank_of, order, np.arange(len(uids))[None, :].repeat(len(qids), axis=0), axis=1)
        for qi, qid in enumerate(qids):
            held = sorted({ui for d in ev_of[qid] for ui in holders.get(d, [])})
            r = int(rank_of[qi, held].min()) if held else None
            ui = None if r is None else int(order[qi][r])
            rows.append({"variant": variant, "conversation_id": conv, "question_id": qid,
                         "evidence_rank": None if r is None else r + 1, "evidence_unit": None if ui is None else uids[ui],
                         "evidence_score": None if ui is None else float(sims[qi, ui]), "n_units": len(uids)})
    schema = {"variant": pl.Utf8, "conversation_id": pl.Utf8, "question_id": pl.Utf8, "evidence_rank": pl.Int64,
              "evidence_unit": pl.Utf8, "evidence_score": pl.Float64, "n_units": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


# -- recall (pure) -------------------------------------------------------------------------------

def evidence_recall(ranked: pl.DataFrame, units: pl.DataFrame, questions: pl.DataFrame,
                    ks: Sequence[int], *, no_evidence: str = "one") -> pl.DataFrame:
    """Per (variant, question, k): ``recall`` (evidence fraction shown), ``hit``, ``n_evidence``.

    A question without evidence dia_ids scores ``recall`` 1 with ``hit`` null and ``n_evidence``
    0 (``no_evidence="one"``: the official LoCoMo ``eval_question_answering`` appends 1 to its
    recall list for such a question), or is left out (``"drop"``: LongMemEval's retrieval
    evaluation skips questions without a target). Every other question of every ranked variant
    gets a row: one with no ranked unit (its conversation has no units in that variant) scores 0
    rather than silently leaving the mean.
    """
    if no_evidence not in ("one", "drop"):
        raise ValueError(f"no_evidence must be 'one' or 'drop', got {no_evidence!r}")
    shown = units.select("variant", "conversation_id", pl.col("unit_id").cast(pl.Utf8), "dia_ids")
    ev = (questions.select("conversation_id", "question_id", "category", "evidence")
          .with_columns(pl.col("evidence").fill_null(pl.lit([], dtype=pl.List(pl.Utf8))).list.unique()))
    if no_evidence == "drop":
        ev = ev.filter(pl.col("evidence").list.len() > 0)
    outs = []
    for k in sorted(set(int(k) for k in ks)):
        top = (ranked.filter(pl.col("rank") <= k)
               .join(shown, on=["variant", "conversation_id", "unit_id"], how="left")
               .explode("dia_ids")
               .group_by(["variant", "conversation_id", "question_id"])
               .agg(pl.col("dia_ids").drop_nulls().unique().alias("shown")))
        base = ranked.select("variant").unique().join(ev, how="cross")
        n_ev = pl.col("n_evidence")
        outs.append(
            base.join(top, on=["variant", "conversation_id", "question_id"], how="left")
            .with_columns(pl.col("shown").fill_null(pl.lit([], dtype=pl.List(pl.Utf8))))
            .with_columns(
                pl.lit(k, pl.Int64).alias("k"),
                pl.col("evidence").list.len().cast(pl.Int64).alias("n_evidence"),
                pl.col("evidence").list.set_intersection(pl.col("shown")).list.len().alias("_found"),
            )
            .with_columns(pl.when(n_ev == 0).then(1.0).otherwise(pl.col("_found") / n_ev).cast(pl.Float64)
                          .alias("recall"),
                          pl.when(n_ev == 0).then(None).otherwise(pl.col("_found") > 0).alias("hit"))
            .select("variant", "conversation_id", "question_id", "category", "k", "recall", "hit", "n_evidence")
        )
    if not outs:
        return pl.DataFrame(schema={"variant": pl.Utf8, "conversation_id": pl.Utf8, "question_id": pl.Utf8,
                                    "category": pl.Utf8, "k": pl.Int64, "recall": pl.Float64,
                                    "hit": pl.Boolean, "n_evidence": pl.Int64})
    return pl.concat(outs).sort(["variant", "k", "conversation_id", "question_id"])


def recall_summary(recall: pl.DataFrame, by: Sequence[str] = ("variant", "k")) -> pl.DataFrame:
    """Mean recall@k and hit@k per ``by`` and category, plus an ``overall`` row per group."""
    keys = list(by)

    def agg(df: pl.DataFrame, ks: list[str]) -> pl.DataFrame:
        return df.group_by(ks, maintain_order=True).agg(
            pl.len().cast(pl.Int64).alias("n"), pl.col("recall").mean().alias("recall"),
            pl.col("hit").cast(pl.Float64).mean().alias("hit_rate"))

    per_cat = agg(recall.with_columns(pl.col("category").cast(pl.Utf8)), keys + ["category"])
    overall = agg(recall, keys).with_columns(pl.lit("overall").alias("category")).select(per_cat.columns)
    return pl.concat([per_cat, overall]).sort(keys + ["category"])
