"""The MemShot sample viewer's data: per question what every variant retrieved, answered and got judged.

Built from frames (the pipelines layer reads the run's ranking, units, answers, the OCR texts
its pixel reader read and the truncation its text embedder applied): each question with its gold
answer, category and evidence turns; per retrieval variant the top-k units with their dia_ids
(evidence turns marked), the rank of the first unit holding an evidence turn, the text the
retriever actually embedded (a pixel reader's OCR text, a text unit's words, each cut where the
embedder's truncation cut it) and -- when the run had a VLM -- the prediction, the judge's verdict
and token F1 at each k. The page (:mod:`vismem.analysis.samples_page`) shows every variant side
by side on one question.

:func:`shots_gallery` is the page ``vismem shots`` writes: one conversation's shots in order.
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import polars as pl

from vismem.analysis.samples_page import render_samples
from vismem.analysis.viewer_common import data_uri, page

#: Characters of a unit's text (or OCR text) kept in the page: the longest LoCoMo session as one
#: unit (Text RAG, full-session shots) is ~6,200, so every LoCoMo unit is shown whole; a longer
#: one ends in a line saying how much the page left out.
UNIT_TEXT_CAP = 8000


def _shot_map(units: pl.DataFrame) -> dict[str, str]:
    """unit_id -> the shot key that renders it (the ``memshot`` variant first, then any image variant)."""
    if "key" not in units.columns:
        return {}
    img = units.filter(pl.col("key").is_not_null())
    order = sorted(img["variant"].unique().to_list(), key=lambda v: (v != "memshot", v))
    out: dict[str, str] = {}
    for v in order:
        for uid, key in img.filter(pl.col("variant") == v).select("unit_id", "key").iter_rows():
            out.setdefault(uid, key)
    return out


def _per_question(frame: pl.DataFrame | None, cols: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """``(question_id, variant) -> {k: {col: value}}`` from a recall or answers table."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if frame is None or frame.height == 0:
        return out
    have = [c for c in cols if c in frame.columns]
    for r in frame.iter_rows(named=True):
        out.setdefault((r["question_id"], r["variant"]), {})[str(r["k"])] = {c: r[c] for c in have}
    return out


class _Texts:
    """Distinct strings of the page, each stored once (``memshot`` and ``no-render`` units hold
    the same words; a unit's OCR text is often its neighbour's overlap)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def add(self, text: Any) -> int | None:
        if not isinstance(text, str) or not text:
            return None
        if len(text) > UNIT_TEXT_CAP:
            text = text[:UNIT_TEXT_CAP] + f"\n[… {len(text) - UNIT_TEXT_CAP:,} more characters not kept in this page]"
        if text not in self.index:
            self.index[text] = len(self.items)
            self.items.append(text)
        return self.index[text]


def first_evidence_rank(dia_lists: Sequence[Sequence[str]], evidence: Sequence[str]) -> int | None:
    """1-based rank of the first ranked unit holding an evidence turn (None: none of them does)."""
    ev = set(evidence)
    return next((r + 1 for r, dia in enumerate(dia_lists) if ev.intersection(dia)), None)


def turn_spans(text: str, n_turns: int) -> list[list[int]] | None:
    """``[start, end)`` character spans of a LoCoMo-format text unit's turn lines
    (:mod:`vismem.memory.dialogue.text`: header lines, ``CONVERSATION:``, one line per turn in
    dia_id order); None when the text does not have exactly ``n_turns`` such lines."""
    head = text.find("CONVERSATION:\n")
    if head < 0:
        return None
    pos, spans = head + len("CONVERSATION:\n"), []
    for line in text[pos:].split("\n"):
        if line:
            spans.append([pos, pos + len(line)])
        pos += len(line) + 1
    return spans if len(spans) == n_turns else None


def _unit_rows(units: pl.DataFrame, texts: _Texts,
               readings: Mapping[tuple[str, str], Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict]:
    """The page's unit records and ``(variant, unit_id) -> index``.

    Optional unit columns the pipelines layer adds: ``ocr_text`` (what a pixel reader read from
    the shot), ``embedded`` (``"ocr"`` / ``"text"``: which text the retriever embedded; null:
    the shot itself) and ``embedded_chars`` (characters of that text the embedder kept before
    its truncation; null: all of it, or unknown)."""
    shot_of = _shot_map(units)
    index: dict[tuple[str, str], int] = {}
    out: list[dict[str, Any]] = []
    for r in units.iter_rows(named=True):
        index[(r["variant"], r["unit_id"])] = len(out)
        rec = {"id": r["unit_id"], "variant": r["variant"], "dia": list(r.get("dia_ids") or []),
               "t": texts.add(r.get("text")), "shot": r.get("key") or shot_of.get(r["unit_id"]),
               "own_shot": bool(r.get("key"))}
        if r.get("ocr_text") is not None:
            rec["ocr"] = texts.add(r["ocr_text"])
        if r.get("embedded"):
            rec["emb"] = r["embedded"]
            if r.get("embedded_chars") is not None:
                rec["cut"] = int(r["embedded_chars"])
                # Where each turn sits, so the page can say whether an evidence turn was embedded.
                spans = turn_spans(r.get("text") or "", len(rec["dia"])) if r["embedded"] == "text" else None
                if spans:
                    rec["spans"] = spans
        rd = readings.get((r["variant"], r["unit_id"]))
        if rd:
            rec["read"] = {"rate": None if rd.get("read_rate") is None else round(float(rd["read_rate"]), 4),
                           "missed": rd.get("missed") or ""}
        out.append(rec)
    return out, index


def _readings(frame: pl.DataFrame | None) -> dict[tuple[str, str], dict[str, Any]]:
    if frame is None or frame.height == 0 or not {"variant", "unit_id"} <= set(frame.columns):
        return {}
    return {(r["variant"], r["unit_id"]): r for r in frame.iter_rows(named=True)}


def _far(frame: pl.DataFrame | None, unit_index: Mapping[tuple[str, str], int]) -> dict[tuple[str, str], list[Any]]:
    """``(question_id, variant) -> [rank, unit index, score, units ranked]`` of the first evidence
    unit in the whole ranking, from the run's evidence-rank rows (units the page lacks: skipped)."""
    out: dict[tuple[str, str], list[Any]] = {}
    if frame is None or frame.height == 0:
        return out
    for r in frame.drop_nulls("evidence_rank").iter_rows(named=True):
        i = unit_index.get((r["variant"], r["evidence_unit"]))
        if i is not None:
            score = None if r.get("evidence_score") is None else round(float(r["evidence_score"]), 4)
            out[(r["question_id"], r["variant"])] = [int(r["evidence_rank"]), i, score, r.get("n_units")]
    return out


def sample_data(questions: pl.DataFrame, ranked: pl.DataFrame, units: pl.DataFrame, *,
                recall: pl.DataFrame | None = None, answers: pl.DataFrame | None = None,
                readings: pl.DataFrame | None = None, evidence_ranks: pl.DataFrame | None = None,
                variant_info: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The viewer's data (JSON-able): questions with every variant's ranking, first evidence rank,
    the units holding evidence that the ranking left out (``evu``; needs ``conversation_id`` on
    ``units``), recall and answers; units (texts by index into ``texts``); ``vinfo`` per variant (embedder,
    truncation limit) as ``variant_info`` gives it; ``readings``: the run's read-rate rows;
    ``evidence_ranks``: the run's first evidence unit per (variant, question) in the whole ranking
    (:func:`vismem.memory.dialogue.retrieval.evidence_ranks`), given as ``far`` ``[rank, unit,
    score, units ranked]`` where the kept ranking holds no evidence unit."""
    texts = _Texts()
    ulist, unit_index = _unit_rows(units, texts, _readings(readings))
    rec = _per_question(recall, ("recall", "hit"))
    ans = _per_question(answers, ("prediction", "judge_label", "f1", "answer", "answer_status", "judge_status"))
    ranks: dict[tuple[str, str], list[list[Any]]] = {}
    for r in ranked.sort("variant", "question_id", "rank").iter_rows(named=True):
        i = unit_index.get((r["variant"], r["unit_id"]))
        if i is not None:
            # a memory's retrieve() gives an order, not always a score (null)
            score = None if r.get("score") is None else round(float(r["score"]), 4)
            ranks.setdefault((r["question_id"], r["variant"]), []).append([i, score])
    far = _far(evidence_ranks, unit_index)
    variants = sorted({v for _, v in ranks} | {v for _, v in ans})
    holders: dict[tuple[str, str, str], list[int]] = {}  # (variant, conversation, dia_id) -> units holding it
    if "conversation_id" in units.columns:
        for i, conv in enumerate(units["conversation_id"].to_list()):
            for d in ulist[i]["dia"]:
                holders.setdefault((ulist[i]["variant"], conv, d), []).append(i)
    qs = []
    for q in questions.iter_rows(named=True):
        ev = list(q.get("evidence") or [])
        per = {}
        for v in variants:
            key = (q["question_id"], v)
            if key in ranks or key in ans:
                rk = ranks.get(key, [])
                per[v] = {"ranked": rk, "recall": rec.get(key, {}), "ans": ans.get(key, {}),
                          "first": first_evidence_rank([ulist[i]["dia"] for i, _ in rk], ev)}
                # Units holding an evidence turn that the ranking left out: what a miss missed.
                missed = sorted({i for d in ev for i in holders.get((v, q["conversation_id"], d), [])}
                                - {i for i, _ in rk})
                fr = far.get(key) if per[v]["first"] is None and ev else None
                if fr is not None and fr[1] not in {i for i, _ in rk}:
                    per[v]["far"] = fr
                    missed = [fr[1]] + [i for i in missed if i != fr[1]]  # the one ranked first, first
                if missed:
                    per[v]["evu"] = missed[:5]
        if per:
            gold = q.get("answer")
            if gold is None:  # the answers table carries the gold answer when the dataset was not read
                gold = next((a.get("answer") for v in per.values() for a in v["ans"].values() if a.get("answer")), None)
            for v in per.values():  # the gold answer once per question, not per variant and k; "ok" unsaid
                for a in v["ans"].values():
                    a.pop("answer", None)
                    for st in ("answer_status", "judge_status"):
                        if a.get(st) in ("ok", None):
                            a.pop(st, None)
            qs.append({"id": q["question_id"], "conv": q["conversation_id"], "q": q.get("question") or q["question_id"],
                       "gold": gold, "cat": q.get("category"), "ev": ev, "v": per})
    ks = sorted({int(k) for q in qs for v in q["v"].values() for k in (*v["recall"], *v["ans"])})
    vinfo = {v: dict((variant_info or {}).get(v, {})) for v in variants}
    return {"questions": qs, "units": ulist, "texts": texts.items, "variants": variants, "ks": ks, "vinfo": vinfo}


def sample_viewer(questions: pl.DataFrame, ranked: pl.DataFrame, units: pl.DataFrame, *,
                  shots: Mapping[str, bytes] | None = None, shot_urls: Mapping[str, str] | None = None,
                  recall: pl.DataFrame | None = None, answers: pl.DataFrame | None = None,
                  readings: pl.DataFrame | None = None, evidence_ranks: pl.DataFrame | None = None,
                  variant_info: Mapping[str, Mapping[str, Any]] | None = None, run_id: str = "", note: str = "") -> str:
    """The viewer's HTML.

    ``questions``: ``conversation_id``, ``question_id``, ``question``, ``answer``, ``category``,
    ``evidence`` (dia_ids); ``ranked``: ``variant``, ``question_id``, ``rank``, ``unit_id``,
    ``score``; ``units``: ``variant``, ``unit_id``, ``dia_ids``, ``text``, ``key`` (shot key, null for
    text units), optionally ``ocr_text`` / ``embedded`` / ``embedded_chars`` (see
    :func:`sample_data`); ``shot_urls``: shot key → URL the page loads it from (files beside the
    page: what a run's report uses), or ``shots``: shot key → bytes, inlined as data URIs (small
    pages); ``recall`` / ``answers``: the run's ``memshot_recall`` / ``memshot_answers`` rows;
    ``evidence_ranks``: where each miss's first evidence unit ranked (see :func:`sample_data`).
    """
    data = sample_data(questions, ranked, units, recall=recall, answers=answers, readings=readings,
                       evidence_ranks=evidence_ranks, variant_info=variant_info)
    max_k = max(data["ks"]) if data["ks"] else 10
    used = sorted({data["units"][i]["shot"] for q in data["questions"] for v in q["v"].values()
                   for i, _ in v["ranked"][:max_k] if data["units"][i]["shot"]})
    if shot_urls is not None:
        imgs = {k: shot_urls[k] for k in used if k in shot_urls}
    else:
        imgs = {k: data_uri(shots[k]) for k in used if k in (shots or {})}
    has_answers = any(v["ans"] for q in data["questions"] for v in q["v"].values())
    data["note"] = note
    meta = (f"Run {run_id}: {len(data['questions'])} questions, variants {', '.join(data['variants']) or 'none'}, "
            f"{len(imgs)} shots; " + ("answers and judge verdicts included." if has_answers else
                                      "retrieval only (no memshot.vlm configured, so no answers).") + f" {note}")
    return render_samples(data, imgs, title=f"vismem MemShot samples — {run_id}", meta=meta)


def shots_gallery(units: Sequence[Mapping[str, Any]], *, title: str, note: str = "") -> str:
    """A self-contained page of shots in order: each ``{unit_id, dia_ids, image (bytes or None),
    text, height, overflow}``; images are inlined, text units shown as text."""
    cards = []
    for u in units:
        img = (f'<img class="shot" src="{data_uri(u["image"])}" alt="{html.escape(u["unit_id"])}">'
               if u.get("image") else f'<pre>{html.escape(str(u.get("text") or ""))}</pre>')
        cards.append(f'<div class="card unit"><div class="txt"><b>{html.escape(u["unit_id"])}</b>'
                     f'<div class="muted">{len(u.get("dia_ids") or [])} turns: {html.escape(", ".join(u.get("dia_ids") or []))}'
                     f'{" · " + str(u["height"]) + " px" if u.get("height") else ""}'
                     f'{" · overflow" if u.get("overflow") else ""}</div>{img}</div></div>')
    return page(title, note, '<div class="detail">' + "".join(cards) + "</div>", "", css=_GALLERY_CSS)


_GALLERY_CSS = """
.unit .shot{max-width:min(100%,720px);max-height:none;border:1px solid #bbb}.unit.evidence{border-color:#2e7d32;border-width:2px}
.chip{display:inline-block;font-family:monospace;font-size:.8em;background:#eee;border-radius:3px;padding:0 .3em;margin:1px}
.chip.ev{background:#2e7d32;color:#fff}.qa{background:#f7f9fc;border:1px solid #dde;padding:.6em;margin:.6em 0}
"""
