"""MemShot answer scoring: token F1 (official LoCoMo and mem0 variants), judge prompts and replies.

Everything here is a pure function (strings in, numbers/labels out; Polars frames in, Polars
frames out) so the scores of a run can be recomputed from its Parquet tables alone.

* :func:`locomo_f1` follows ``snap-research/locomo`` ``task_eval/evaluation.py``: normalise
  (drop commas, lowercase, strip punctuation, drop ``a/an/the/and``, collapse whitespace),
  Porter-stem, multiset-overlap F1. Category 1 (multi-hop) splits prediction and gold on commas
  and averages, over gold parts, the best F1 against any predicted part; category 3 keeps the
  gold only up to its first ``;``; category 5 (adversarial) scores 1 when the prediction says the
  information is not available.
* :func:`set_token_f1` is the MemShot paper's F1: the paper follows LightMem and A-MEM, whose F1
  is A-MEM's set-based token F1 (``utils.calculate_metrics``: lowercase, ``.,!?`` to spaces,
  whitespace tokens as a *set*, no stemming, no article removal), reused unchanged by mem0's
  LoCoMo evaluation (``metrics/utils.py``) -- hence the answers' column name ``f1_mem0`` and the
  alias :func:`mem0_f1`. The tables the official LoCoMo code prints use :func:`locomo_f1`
  (multiset overlap of Porter stems, per-category rules); both are named
  (:data:`F1_NAMES`), and they differ on repeated words, articles and inflections.
* Judge replies are parsed defensively: a malformed reply yields ``label=None`` and a
  ``judge_status`` that says why; it is a judge failure (retried by
  :func:`vismem.memory.dialogue.answering.judge_answers`), never raised and never counted as a
  wrong answer (:func:`accuracy_table` leaves it out; an unanswered question is wrong). A
  thinking model's reasoning (``<think>...</think>``, or a reply cut off inside it) is no verdict
  and is removed before parsing (:func:`strip_thinking`).
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import polars as pl

# -- token F1 ---------------------------------------------------------------------------------

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


@lru_cache(maxsize=1)
def _stemmer():
    # PorterStemmer is pure code (no nltk data download); built once per process.
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def normalize_answer(s: Any) -> str:
    """The official LoCoMo normalisation (commas dropped *before* punctuation, then articles)."""
    s = str(s).replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _stems(s: Any) -> list[str]:
    ps = _stemmer()
    return [ps.stem(w) for w in normalize_answer(s).split()]


def token_f1(prediction: Any, gold: Any) -> float:
    """Stemmed multiset-overlap F1 after LoCoMo normalisation (official ``f1_score``)."""
    pred, ref = _stems(prediction), _stems(gold)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: Any, gold: Any) -> float:
    """Official multi-hop F1: mean over comma-separated gold parts of the best predicted part."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


_ABSTAIN = ("no information available", "not mentioned")


def locomo_f1(prediction: Any, gold: Any, category: int | str | None) -> float:
    """Official LoCoMo QA F1 for one question, by category (1 multi-hop, 3 gold cut at ``;``)."""
    pred = "" if prediction is None else str(prediction)
    gold_s = "" if gold is None else str(gold)
    cat = int(category) if category is not None and str(category).isdigit() else None
    if cat == 5:
        return 1.0 if any(a in pred.lower() for a in _ABSTAIN) else 0.0
    if cat == 3:
        gold_s = gold_s.split(";")[0].strip()
    if cat == 1:
        return float(multi_answer_f1(pred, gold_s))
    return float(token_f1(pred, gold_s))


#: The two F1 scores of an answer: the answers' column and what it is.
F1_NAMES = {"f1": "official LoCoMo F1 (snap-research/locomo task_eval: stemmed multiset overlap, per category)",
            "f1_mem0": "paper F1 (LightMem / A-MEM set-based token F1, as mem0 reuses it)"}


def _set_tokens(text: Any) -> set[str]:
    t = str(text).lower()
    for ch in ".,!?":
        t = t.replace(ch, " ")
    return set(t.split())


def set_token_f1(prediction: Any, gold: Any) -> float:
    """The MemShot paper's F1 (LightMem / A-MEM): set overlap of lowercased whitespace tokens with
    ``.,!?`` turned into spaces; an empty prediction or gold scores 0."""
    return mem0_f1(prediction, gold)


def official_locomo_f1(prediction: Any, gold: Any, category: int | str | None) -> float:
    """The official LoCoMo F1 the benchmark's tables show (:func:`locomo_f1`)."""
    return locomo_f1(prediction, gold, category)


def mem0_f1(prediction: Any, gold: Any) -> float:
    """mem0's LoCoMo F1, A-MEM's set-based token F1 (:func:`set_token_f1`, the paper's)."""
    if prediction is None or gold is None or not str(prediction).strip() or not str(gold).strip():
        return 0.0
    pred, ref = _set_tokens(str(prediction).strip()), _set_tokens(str(gold).strip())
    if not pred or not ref:
        return 0.0
    common = pred & ref
    if not common:
        return 0.0
    p, r = len(common) / len(pred), len(common) / len(ref)
    return 2 * p * r / (p + r)


# -- prompts (data files) ---------------------------------------------------------------------

@lru_cache(maxsize=None)  # read-only package data, asked for once per question
def load_prompt(name: str) -> str:
    """The text of ``memory/dialogue/prompts/<name>.txt`` (kept verbatim as data)."""
    try:
        return resources.files("vismem.memory.dialogue").joinpath("prompts", f"{name}.txt").read_text()
    except FileNotFoundError:
        raise KeyError(f"no prompt named {name!r} in memory/dialogue/prompts/") from None


def fill(template: str, **fields: Any) -> str:
    """Fill ``{name}`` placeholders; only known names are replaced, other braces stay as they are."""
    out = template
    for key, value in fields.items():
        out = out.replace("{" + key + "}", str(value))
    return out


def judge_prompt(dataset: str, *, question: str, gold: Any, prediction: str,
                 category: Any = None, question_id: str = "") -> str:
    """The judge's user message for one answer (the dataset's own prompt; see
    :mod:`vismem.memory.dialogue.datasets`). LoCoMo: the mem0-style CORRECT/WRONG prompt with a JSON
    label. LongMemEval: the official per-type yes/no prompt, the abstention one for ``_abs`` ids."""
    from vismem.memory.dialogue.datasets import get_dataset

    row = {"question": question, "answer": gold, "category": category, "category_code": category,
           "question_id": question_id}
    return get_dataset(dataset).judge_prompt(row, prediction)


# -- judge replies ----------------------------------------------------------------------------

JudgeStatus = Literal["ok", "malformed", "ambiguous", "empty"]
#: Statuses of a reply that holds no verdict: a judge failure, asked again.
JUDGE_FAILURES: tuple[str, ...] = ("malformed", "ambiguous", "empty")

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def strip_thinking(reply: str | None) -> str:
    """``reply`` without a thinking model's reasoning: closed ``<think>`` blocks go, text before a
    lone ``</think>`` (the template opened the block) goes, and so does everything after an
    unclosed ``<think>`` (the reply ran out of tokens while thinking)."""
    text = reply or ""
    if "think>" not in text.lower():
        return text
    text = _THINK.sub("", text)
    low = text.lower()
    if "</think>" in low:
        text = text[low.rindex("</think>") + len("</think>"):]
        low = text.lower()
    if "<think>" in low:
        text = text[:low.index("<think>")]
    return text

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_OBJ = re.compile(r"\{[^{}]*\}", re.DOTALL)
_WORD_CORRECT = re.compile(r"\bCORRECT\b")
_WORD_WRONG = re.compile(r"\bWRONG\b")


def parse_locomo_judge(reply: str | None) -> tuple[bool | None, JudgeStatus, str]:
    """``(label, status, reason)`` from a CORRECT/WRONG judge reply.

    A JSON object with a ``label`` key wins (the last one, fenced or bare). Without one, a reply
    naming exactly one of the two labels as a word is accepted (judges often answer
    ``"... so the answer is CORRECT"``); both or neither → ``ambiguous``/``malformed``.
    """
    text = strip_thinking(reply).strip()
    if not text:
        return None, "empty", ""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [m.group(0) for m in _OBJ.finditer(text)]
    for blob in reversed(candidates):
        try:
            obj = json.loads(blob.strip())
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(obj, dict):
            label = next((v for k, v in obj.items() if str(k).lower() == "label"), None)
            if isinstance(label, str) and label.strip().upper() in ("CORRECT", "WRONG"):
                reason = str(obj.get("reason") or obj.get("explanation") or _reason_before(text, blob))
                return label.strip().upper() == "CORRECT", "ok", reason
    has_c, has_w = bool(_WORD_CORRECT.search(text)), bool(_WORD_WRONG.search(text))
    if has_c and has_w:
        return None, "ambiguous", text[:200]
    if has_c or has_w:
        return has_c, "ok", _reason_before(text, "CORRECT" if has_c else "WRONG")
    return None, "malformed", text[:200]


def _reason_before(text: str, marker: str) -> str:
    head = text.split(marker, 1)[0].strip().strip("`").strip()
    return head[:300]


_YES = re.compile(r"\byes\b", re.IGNORECASE)
_NO = re.compile(r"\bno\b", re.IGNORECASE)


def parse_yes_no_judge(reply: str | None) -> tuple[bool | None, JudgeStatus, str]:
    """``(label, status, reason)`` from a LongMemEval yes/no judge reply.

    The official script takes ``'yes' in reply.lower()``; we require the word ``yes`` or ``no``
    and call a reply holding both (or neither) a judge failure rather than guess.
    """
    text = strip_thinking(reply).strip()
    if not text:
        return None, "empty", ""
    has_y, has_n = bool(_YES.search(text)), bool(_NO.search(text))
    if has_y and has_n:
        # "Yes." followed by an explanation that happens to contain "no" is still a yes:
        # decide by the first word when it is one of the two.
        first = re.match(r"\W*(\w+)", text)
        if first and first.group(1).lower() in ("yes", "no"):
            return first.group(1).lower() == "yes", "ok", text[:200]
        return None, "ambiguous", text[:200]
    if has_y or has_n:
        return has_y, "ok", text[:200]
    return None, "malformed", text[:200]


def parse_yes_official(reply: str | None) -> tuple[bool | None, JudgeStatus, str]:
    """LongMemEval's official reading of a judge reply: ``'yes' in reply.lower()``.

    Substring, as the official script: "Yes.", "yes, because ..." and also "eyes" are a yes. A
    reply without "yes" is a no when it says the word no; one saying neither ("I think so", a
    reply cut off mid-sentence) or nothing (``empty``, e.g. all thinking) has no verdict: a
    judge failure (``malformed``), where the official script would have scored it wrong.
    """
    text = strip_thinking(reply).strip()
    if not text:
        return None, "empty", ""
    if "yes" in text.lower():
        return True, "ok", text[:200]
    if _NO.search(text):
        return False, "ok", text[:200]
    return None, "malformed", text[:200]


def parse_judge(dataset: str, reply: str | None) -> tuple[bool | None, JudgeStatus, str]:
    """The parser of the dataset's judge prompt."""
    from vismem.memory.dialogue.datasets import get_dataset

    return get_dataset(dataset).parse_judge(reply)  # type: ignore[return-value]


# -- per-answer scores and tables -------------------------------------------------------------

def score_answers(answers: pl.DataFrame, dataset: str) -> pl.DataFrame:
    """Add ``f1`` (the dataset's official rule) and ``f1_mem0`` columns to an answers frame.

    Needs ``prediction``, ``answer`` and ``category`` (the category code) columns.
    """
    from vismem.memory.dialogue.datasets import get_dataset

    rule = get_dataset(dataset).f1
    preds = answers["prediction"].to_list()
    golds = answers["answer"].to_list()
    cats = answers["category"].to_list()
    f1 = [rule(p, g, c) for p, g, c in zip(preds, golds, cats)]
    f1m = [mem0_f1(p, g) for p, g in zip(preds, golds)]
    return answers.with_columns(pl.Series("f1", f1, dtype=pl.Float64), pl.Series("f1_mem0", f1m, dtype=pl.Float64))


def accuracy_table(scored: pl.DataFrame, by: tuple[str, ...] = ("variant", "k")) -> pl.DataFrame:
    """Accuracy and F1 per ``by`` + category, plus an ``overall`` row per ``by`` group.

    ``accuracy`` counts an unanswered question (``prediction`` null) and a judge failure (an
    answer without a verdict: ``correct`` null) as wrong, as the official scripts do
    (LongMemEval's ``evaluate_qa``: a reply without "yes" is wrong), so failures cannot inflate
    it. ``coverage`` is the share that got a verdict and ``judge_failures`` the count that did
    not (unanswered ones included). ``accuracy`` is null only when nothing in the group was
    judged (no judge). ``accuracy_judged`` is the other reading, the mean over verdicts alone.
    Needs ``category`` (cast to string), ``correct`` (bool or null), ``f1``, ``f1_mem0``.
    """
    df = scored.with_columns(pl.col("category").cast(pl.Utf8), pl.col("correct").fill_null(False).alias("_outcome"))

    def agg(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
        return frame.group_by(keys, maintain_order=True).agg(
            pl.len().alias("n"),
            pl.col("correct").is_null().sum().alias("judge_failures"),
            # null (not NaN, not 0) when nothing in the group was judged
            pl.when(pl.col("correct").is_not_null().sum() > 0)
            .then(pl.col("_outcome").cast(pl.Float64).mean()).alias("accuracy"),
            (pl.col("correct").is_not_null().sum() / pl.len()).alias("coverage"),
            pl.when(pl.col("correct").is_not_null().sum() > 0)
            .then(pl.col("correct").fill_null(False).cast(pl.Float64).sum()
                  / pl.col("correct").is_not_null().sum().cast(pl.Float64)).alias("accuracy_judged"),
            pl.col("f1").mean().alias("f1"),
            pl.col("f1_mem0").mean().alias("f1_mem0"),
        )

    keys = list(by)
    per_cat = agg(df, keys + ["category"])
    overall = agg(df, keys).with_columns(pl.lit("overall").alias("category")).select(per_cat.columns)
    out = pl.concat([per_cat, overall]).with_columns(pl.col("judge_failures").cast(pl.Int64),
                                                     pl.col("n").cast(pl.Int64))
    return out.sort(keys + ["category"])
