"""MemShot answer generation and judging through the VLM protocol.

For each (variant, k, question) the top-k retrieved units become one user message: memory
shots as images (image units) or the units' text (Text RAG, w/o Rendering), followed by the
benchmark's answer prompt (``memory/dialogue/prompts``). The judge is any VLM spec too (an
LLM endpoint), given the dataset's judge prompt.

Calls are I/O against an OpenAI-compatible endpoint (vLLM / Ray Serve LLM), which does the GPU
batching; a thread pool keeps ``concurrency`` requests in flight. Nothing here raises on a bad
model reply: a :class:`vismem.serve.vlm.VLMError` or a malformed reply becomes a row whose
``answer_status``/``judge_status`` says so (a judge failure, counted, never a crash).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import polars as pl

from vismem.memory.dialogue.datasets import get_dataset

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def is_malformed_answer(text: str | None) -> bool:
    """An empty reply or one carrying control bytes is not an answer (it is recorded as malformed)."""
    return text is None or not text.strip() or bool(_CONTROL.search(text))


def build_answer_message(dataset: str, question: dict[str, Any], units: Sequence[dict[str, Any]],
                         read_image: Callable[[str], bytes] | None = None, *, header: bool = True) -> Any:
    """The one user :class:`vismem.serve.vlm.Message` asking ``question`` over retrieved ``units``.

    ``units`` are unit rows in the order they are shown (``modality``, ``text``, ``image_key``).
    A unit list mixing modalities is allowed: images go first, text units into ``{context}``.
    ``header=False`` (shots drawn without the header band, the w/o Header ablation) asks with the
    dataset's ``shots_noheader`` prompt, which does not point at a header the images lack.
    """
    from vismem.serve.vlm import Message

    images = tuple(read_image(u["image_key"]) for u in units if u.get("modality") == "image") if read_image else ()
    if any(u.get("modality") == "image" for u in units) and read_image is None:
        raise ValueError("image units need a read_image function")
    texts = [str(u.get("text") or "") for u in units if u.get("modality") != "image"]
    mode = ("shots" if header else "shots_noheader") if images and not texts else "text"
    text = get_dataset(dataset).answer_prompt(question, texts, mode=mode)
    return Message(role="user", text=text, images=images)


def headerless_variants(names: Sequence[str]) -> list[str]:
    """Those of ``names`` that are shipped (or YAML-path) variants drawing shots without a header."""
    from vismem.core.errors import ConfigError
    from vismem.memory.dialogue.variants import load_variant

    out = []
    for name in names:
        try:
            v = load_variant(str(name))
        except ConfigError:  # a name the variants folder does not know: keep the header prompt
            continue
        if v.is_image and not v.header:
            out.append(str(name))
    return out


def _answer_one(vlm: Any, msg: Any, max_tokens: int, temperature: float) -> dict[str, Any]:
    from vismem.serve.vlm import VLMError

    try:
        res = vlm.chat([msg], max_tokens=max_tokens, temperature=temperature)
    except VLMError as err:
        return {"prediction": None, "answer_status": f"error:{err.reason}", "answer_latency_s": None,
                "prompt_tokens": None, "completion_tokens": None, "raw_answer": str(err)[:300]}
    bad = is_malformed_answer(res.text)
    return {"prediction": None if bad else res.text.strip(), "answer_status": "malformed" if bad else "ok",
            "answer_latency_s": res.latency_s, "prompt_tokens": res.prompt_tokens,
            "completion_tokens": res.completion_tokens, "raw_answer": (res.text or "")[:300]}


def generate_answers(tasks: pl.DataFrame, units: pl.DataFrame, questions: pl.DataFrame, vlm: Any, *,
                     dataset: str, read_image: Callable[[str], bytes] | None = None,
                     max_tokens: int = 128, temperature: float = 0.0, concurrency: int = 8,
                     order: str = "rank", headerless: Sequence[str] | None = None) -> pl.DataFrame:
    """Answer every (variant, k, conversation_id, question_id, unit_ids) task row with ``vlm``.

    ``order="rank"`` shows units best first (the official LoCoMo RAG order);
    ``"chronological"`` sorts them by ``session_index``/``unit_index`` when present.
    ``headerless``: the variants whose shots have no header (default: the shipped variants
    that draw images without one, :func:`headerless_variants`).
    """
    unit_rows = {(r["variant"], str(r["unit_id"])): r for r in units.iter_rows(named=True)}
    q_rows = {(r["conversation_id"], r["question_id"]): r for r in questions.iter_rows(named=True)}
    post = getattr(get_dataset(dataset), "postprocess_answer", None)
    bare = set(headerless_variants(tasks["variant"].unique().to_list()) if headerless is None else headerless)

    def work(task: dict[str, Any]) -> dict[str, Any]:
        shown = [unit_rows[(task["variant"], str(u))] for u in task["unit_ids"]]
        if order == "chronological":
            shown.sort(key=lambda u: (u.get("session_index") or 0, u.get("unit_index") or 0))
        q = q_rows[(task["conversation_id"], task["question_id"])]
        try:
            msg = build_answer_message(dataset, q, shown, read_image, header=task["variant"] not in bare)
        except Exception as err:  # an unreadable shot is that question's failure, not the run's
            return {**answer_key(task), "prediction": None, "answer_status": f"error:input:{type(err).__name__}",
                    "answer_latency_s": None, "prompt_tokens": None, "completion_tokens": None,
                    "raw_answer": str(err)[:300], "n_images": 0}
        out = _answer_one(vlm, msg, max_tokens, temperature)
        if out["prediction"] is not None and post is not None:
            out["prediction"] = post(q, out["prediction"])  # e.g. LoCoMo's multiple-choice letters
        return {**answer_key(task), **out, "n_images": len(msg.images)}

    rows = _pool_map(work, list(tasks.iter_rows(named=True)), concurrency, "memshot answers")
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)


def judge_answers(answers: pl.DataFrame, questions: pl.DataFrame, judge: Any, *, dataset: str,
                  max_tokens: int | None = None, concurrency: int = 8, parse: str = "official",
                  retries: int = 2) -> pl.DataFrame:
    """Add ``judge_label``/``judge_status``/``judge_reason``/``judge_latency_s`` to ``answers``.

    Unanswered questions (``prediction`` null) are not sent: ``judge_status="skipped"``, label
    null. A judge call that fails after retries is ``error:<reason>``; an unparseable reply is
    ``malformed``/``ambiguous``/``empty`` (see :mod:`vismem.memory.dialogue.scoring`).
    ``max_tokens=None`` is the dataset's own (LongMemEval's official 10); ``parse="strict"``
    uses the dataset's stricter reply parser where it has one (``parse_judge_strict``).
    A reply without a verdict (empty, unparseable, ambiguous: a judge failure, never a wrong
    answer) is asked again up to ``retries`` times; the last reply's status stays if none has one.
    """
    from vismem.serve.vlm import Message, VLMError

    q_rows = {(r["conversation_id"], r["question_id"]): r for r in questions.iter_rows(named=True)}
    ds = get_dataset(dataset)
    if parse not in ("official", "strict"):
        raise ValueError(f"parse must be 'official' or 'strict', got {parse!r}")
    parse_reply = getattr(ds, "parse_judge_strict", ds.parse_judge) if parse == "strict" else ds.parse_judge
    max_tokens = max_tokens or int(getattr(ds, "judge_max_tokens", 256))

    def work(row: dict[str, Any]) -> dict[str, Any]:
        if row["prediction"] is None:
            return {"judge_label": None, "judge_status": "skipped", "judge_reason": None, "judge_latency_s": None}
        q = q_rows[(row["conversation_id"], row["question_id"])]
        prompt = ds.judge_prompt({**q, "question_id": row["question_id"]}, row["prediction"])
        from vismem.memory.dialogue.scoring import JUDGE_FAILURES

        for _attempt in range(max(0, retries) + 1):
            try:
                res = judge.chat([Message(role="user", text=prompt)], max_tokens=max_tokens, temperature=0.0)
            except VLMError as err:
                return {"judge_label": None, "judge_status": f"error:{err.reason}", "judge_reason": str(err)[:300],
                        "judge_latency_s": None}
            label, status, reason = parse_reply(res.text)
            if not (label is None and status in JUDGE_FAILURES):
                break
        return {"judge_label": label, "judge_status": status, "judge_reason": reason, "judge_latency_s": res.latency_s}

    judged = _pool_map(work, list(answers.iter_rows(named=True)), concurrency, "memshot judge")
    extra = pl.DataFrame(judged, schema={"judge_label": pl.Boolean, "judge_status": pl.Utf8,
                                         "judge_reason": pl.Utf8, "judge_latency_s": pl.Float64})
    return pl.concat([answers, extra], how="horizontal")


def answer_tasks(ranked: pl.DataFrame, ks: Sequence[int]) -> pl.DataFrame:
    """(variant, k, conversation_id, question_id, unit_ids) rows: the top-k unit ids per question."""
    outs = [ranked.filter(pl.col("rank") <= k).sort("rank")
            .group_by(["variant", "conversation_id", "question_id"], maintain_order=True)
            .agg(pl.col("unit_id").alias("unit_ids")).with_columns(pl.lit(int(k), pl.Int64).alias("k"))
            for k in sorted(set(ks))]
    return pl.concat(outs).select("variant", "k", "conversation_id", "question_id", "unit_ids") \
        .sort(["variant", "k", "conversation_id", "question_id"])


ANSWER_SCHEMA = {"variant": pl.Utf8, "k": pl.Int64, "conversation_id": pl.Utf8, "question_id": pl.Utf8,
                 "unit_ids": pl.List(pl.Utf8), "prediction": pl.Utf8, "answer_status": pl.Utf8,
                 "answer_latency_s": pl.Float64, "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64,
                 "raw_answer": pl.Utf8, "n_images": pl.Int64}


def answer_key(task: dict[str, Any]) -> dict[str, Any]:
    """The key columns of an answer task row (variant, k, conversation, question)."""
    return {"variant": task["variant"], "k": task["k"], "conversation_id": task["conversation_id"],
            "question_id": task["question_id"], "unit_ids": [str(u) for u in task["unit_ids"]]}


def _pool_map(fn: Callable[[dict[str, Any]], dict[str, Any]], rows: list[dict[str, Any]],
              concurrency: int, description: str = "memshot model calls") -> list[dict[str, Any]]:
    """``map`` over a thread pool with a progress bar; results in input order (deterministic tables)."""
    from vismem.core.progress import track

    if concurrency <= 1 or len(rows) <= 1:
        return [fn(r) for r in track(rows, description, total=len(rows))]
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="memshot-vlm") as pool:
        return list(track(pool.map(fn, rows), description, total=len(rows)))
