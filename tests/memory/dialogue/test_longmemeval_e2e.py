"""LongMemEval end to end on a synthetic file in the upstream schema (its quirks included):
load -> render shots -> retrieve -> evidence recall and LongMemEval's own metrics -> answers and
judge over the local OpenAI-compatible server -> scores. The embedder is a bag-of-words test
double that reads a shot through the text it was drawn from (retrieval quality is not what is
tested here; the path and its bookkeeping are)."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import polars as pl

from vismem.analysis.lme_retrieval import ranking_from_units, retrieval_metrics, summary, turn_to_session_metrics
from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval
from vismem.env.dialogue.longmemeval import has_retrieval_target, retrieval_corpus
from vismem.memory.dialogue import answering as A
from vismem.memory.dialogue.datasets import get_dataset
from vismem.memory.dialogue.render import conversation_units
from vismem.memory.dialogue.retrieval import embed_items, embedding_items, evidence_recall, questions_frame, rank_units
from vismem.memory.dialogue.scoring import accuracy_table, score_answers
from vismem.memory.dialogue.variants import load_variant
from vismem.serve.backends.scripted import ScriptedVLM
from vismem.serve.openai_server import LocalOpenAIServer
from vismem.serve.build import build_vlm


class BagOfWords:
    """Hashed bag-of-words vectors; an image is embedded as the text its shot was drawn from."""

    name = "bow"

    def __init__(self, drawn: dict[bytes, str], dim: int = 256) -> None:
        self.drawn, self.dim = drawn, dim

    def embed_texts(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.sha256(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    def embed_images(self, images):
        return self.embed_texts([self.drawn[b] for b in images])


def test_longmemeval_end_to_end(tmp_path):
    path = tmp_path / "longmemeval_s_cleaned.json"
    stats = write_synthetic_longmemeval(path, seed=7, n_questions=6, sessions_per_question=4, pool_size=12)
    ds = get_dataset("longmemeval")
    convs = ds.load(path)
    assert convs.duplicate_sessions == stats.duplicate_sessions == 2

    variant = load_variant("memshot")
    rows, images, drawn = [], {}, {}
    for c in convs:
        for u in conversation_units(c, variant):
            key = f"shots/{u.unit_id}.png"
            images[key], drawn[u.image] = u.image, u.text
            rows.append({"variant": "memshot", "conversation_id": c.conversation_id, "unit_id": u.unit_id,
                         "dia_ids": list(u.dia_ids), "modality": "image", "text": None, "image_key": key,
                         "session_index": u.session_index, "unit_index": u.unit})
    units = pl.DataFrame(rows, schema_overrides={"text": pl.Utf8})
    assert units["conversation_id"].n_unique() == 6 and all(img.startswith(b"\x89PNG") for img in images.values())

    questions = questions_frame(convs)
    items = embedding_items(units, questions)
    vecs, _secs = embed_items(items, BagOfWords(drawn), read_image=images.__getitem__)
    vectors = dict(zip(items["item_id"].to_list(), vecs))
    ranked = rank_units(units, questions, vectors, k_max=50)
    recall = evidence_recall(ranked, units, questions, ks=[1, 3])
    assert recall.height == 12 and recall["recall"].is_between(0, 1).all()

    # LongMemEval's own metrics from the same ranking, abstention and target-less questions left out
    corpus = pl.DataFrame([r for c in convs for r in retrieval_corpus(c, "turn")])
    turn_ranked = ranking_from_units(ranked, units, corpus)
    rel = corpus.filter("relevant").select("question_id", "corpus_id")
    per_q = pl.concat([retrieval_metrics(turn_ranked, rel, level="turn", ks=(1, 5)),
                       turn_to_session_metrics(turn_ranked, rel, ks=(1, 5))])
    qs = pl.DataFrame({"question_id": [c.conversation_id for c in convs],
                       "has_target": [has_retrieval_target(c) for c in convs]})
    lme = summary(per_q, qs)
    assert lme.height == 4 and set(lme["n"].to_list()) == {4}  # 6 - 1 abstention - 1 assistant-evidence
    at5 = lme.filter(pl.col("k") == 5)
    assert (at5["recall_any"] >= lme.filter(pl.col("k") == 1)["recall_any"]).all()

    tasks = A.answer_tasks(ranked, ks=[3])
    answerer = ScriptedVLM(["Business Administration", "I don't know", "3 days"], label="answers")
    judge = ScriptedVLM(["Yes.", "no", "unsure"], label="judge")
    with LocalOpenAIServer(answerer, model_id="scripted-answers") as a, \
            LocalOpenAIServer(judge, model_id="scripted-judge") as j:
        spec = lambda srv: build_vlm({"name": "openai", "args": {"model": srv.model_id, "base_url": srv.base_url,  # noqa: E731
                                                                "api_key_env": None, "max_retries": 0,
                                                                "timeout_s": 10}})
        answers = A.generate_answers(tasks, units, questions, spec(a), dataset="longmemeval",
                                     read_image=images.__getitem__, concurrency=1)
        judged = A.judge_answers(answers, questions, spec(j), dataset="longmemeval", concurrency=1)
    assert (judged["n_images"] == 3).all() and (judged["answer_status"] == "ok").all()
    # "unsure" is no verdict: asked again, so every question ends with one
    assert judged["judge_label"].null_count() == 0 and set(judged["judge_status"].to_list()) == {"ok"}
    full = judged.join(questions.select("conversation_id", "question_id", "answer", "category"),
                       on=["conversation_id", "question_id"])
    scored = score_answers(full.with_columns(pl.col("judge_label").alias("correct")), "longmemeval")
    table = accuracy_table(scored)
    overall = table.filter(pl.col("category") == "overall").row(0, named=True)
    assert overall["n"] == 6 and overall["judge_failures"] == 0 and 0 <= overall["accuracy"] <= 1
    assert set(table["category"].to_list()) == {*ds.columns, "overall"}
