"""Our LongMemEval ``flat-bm25`` / ``flat-contriever`` and retrieval metrics against upstream's code.

``lme_upstream.json`` holds what upstream's ``run_retrieval`` (``flat-bm25`` and ``flat-contriever``
with a tiny seeded model, session and turn granularity) ranked and scored on generated files
(``scripts/lme_upstream_fixture.py`` made it; its docstring says how to regenerate). Here the
same files are generated again (their SHA-256 checked), read with our loader, ranked by our
memories and scored over the whole ranking: every ranking and every averaged metric must equal
upstream's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest

from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval
from vismem.memory.dialogue.datasets import get_dataset
from vismem.memory.dialogue.memories import build_memory
from tests.memory.dialogue.tiny_contriever import build_tiny_contriever

FIXTURE = json.loads(Path(__file__).with_name("lme_upstream.json").read_text())


@pytest.fixture(scope="module", params=range(len(FIXTURE["files"])), ids=lambda i: f"file{i}")
def case(request, tmp_path_factory):
    rec = FIXTURE["files"][request.param]
    path = tmp_path_factory.mktemp("lme") / "longmemeval_s_cleaned.json"
    write_synthetic_longmemeval(path, **rec["generator"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == rec["sha256"], "generator changed: regenerate the fixture"
    return rec, list(get_dataset("longmemeval").load(path)), path


def _memory(retriever: str, gran: str, path: Path):
    """Our memory for ``retriever``; flat-contriever runs the tiny model built from the file's words."""
    if retriever != "flat-contriever":
        return build_memory({"name": retriever, "args": {"granularity": gran}})
    tiny = path.parent / "tiny"
    if not tiny.exists():
        entries = json.loads(path.read_text())
        build_tiny_contriever(tiny, [t["content"] for e in entries for s in e["haystack_sessions"] for t in s]
                              + [e["question"] for e in entries])
    return build_memory({"name": retriever, "args": {"granularity": gran, "path": str(tiny)}})


def _ours(mem, conv, gran: str) -> tuple[list[str], int]:
    """A memory's ranking of the whole corpus, as upstream's corpus ids (``sid`` / ``sid_turn``),
    and how many of its scores tie with another."""
    mem.ingest(conv)
    cid, question = conv.conversation_id, conv.questions[0].question
    got = mem.retrieve(cid, question, len(mem.units(cid)))
    scores = mem.scores(cid, question).tolist()
    tied = sum(scores.count(s) > 1 for s in scores)
    return [u.dia_ids[0].replace(":", "_") if gran == "turn" else u.unit_id.split(":", 1)[1] for u in got], tied


@pytest.mark.parametrize("retriever", ["flat-bm25", "flat-contriever"])
def test_upstream_retrievers_rank_every_question_as_upstream(case, retriever):
    rec, convs, path = case
    by_q = {c.questions[0].question_id: c for c in convs}
    mems = {g: _memory(retriever, g, path) for g in ("session", "turn")}
    tied, n = 0, 0
    for q in rec["questions"]:
        if q["retriever"] != retriever:
            continue
        want = [i.replace("noans", "answer") for i in q["ranked"]]  # upstream renames unlabelled answer items
        got, n_tied = _ours(mems[q["granularity"]], by_q[q["question_id"]], q["granularity"])
        assert got == want, (q["question_id"], q["granularity"])
        tied, n = tied + n_tied, n + 1
    assert n == 2 * len(convs)
    if retriever == "flat-bm25":
        assert tied > 20  # many equal (zero) scores: the tie order is part of what is compared


def test_metrics_over_the_whole_bm25_ranking_equal_upstreams_averages(case):
    from vismem.pipelines.memshot.lme import lme_tables

    rec, convs, _path = case
    rows, units = [], []
    for c in convs:
        for g in ("session", "turn"):
            mem = build_memory({"name": "flat-bm25", "args": {"granularity": g}})
            mem.ingest(c)
            cid, built = c.conversation_id, mem.units(c.conversation_id)
            units += [{"variant": mem.name, "conversation_id": cid, "unit_id": u.unit_id, "dia_ids": list(u.dia_ids)}
                      for u in built]
            rows += [{"variant": mem.name, "question_id": c.questions[0].question_id, "conversation_id": cid,
                      "rank": r + 1, "unit_id": u.unit_id}
                     for r, u in enumerate(mem.retrieve(cid, c.questions[0].question, len(built)))]
    got = lme_tables(convs, pl.DataFrame(rows), pl.DataFrame(units), {})
    # Upstream's averages: abstention and target-less questions left out, as its main() does.
    keep = {c.questions[0].question_id for c in convs if "_abs" not in c.questions[0].question_id
            and any(t.has_answer and t.role == "user" for s in c.sessions for t in s.turns)}
    checked = 0
    for gran in ("session", "turn"):
        qs = [q for q in rec["questions"] if q["granularity"] == gran and q["question_id"] in keep
              and q["retriever"] == "flat-bm25"]
        ours = got.filter((pl.col("variant") == f"flat-bm25:{gran}") & (pl.col("corpus") == gran))
        for level in qs[0]["metrics"]:
            if not qs[0]["metrics"][level]:
                continue
            for r in ours.filter(pl.col("level") == level).iter_rows(named=True):
                for m in ("recall_any", "recall_all", "ndcg_any"):
                    want = sum(q["metrics"][level][f"{m}@{r['k']}"] for q in qs) / len(qs)
                    assert r[m] == pytest.approx(want, abs=1e-12), (gran, level, m, r["k"])
                    checked += 1
        assert ours["by_position"].max() == 0  # the whole corpus ranked: no position fills in
    assert checked == 3 * 6 * 3  # session, turn and turn→session levels, 6 ks, 3 metrics
