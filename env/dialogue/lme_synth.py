"""Synthetic LongMemEval files in the upstream schema, with the real files' quirks.

The real files (``longmemeval_s_cleaned.json``, ``_m_cleaned.json``, ``longmemeval_oracle.json``)
live on a model hub and are never shipped; tests and benchmarks write one of these instead.
Every record has the upstream fields and shapes, and the generator reproduces what the loader and
the metrics must cope with:

* a haystack session repeated inside a record with identical turns under a later date
  (upstream issue xiaowu0162/LongMemEval#54), every ``dup_every``-th record;
* abstention questions (``_abs`` ids), every ``abs_every``-th record;
* several answer sessions (``answer_<hex>_<n>``) for multi-session, temporal and
  knowledge-update questions; ``has_answer`` labels on evidence turns (a user turn, or an
  assistant turn for single-session-assistant) and ``false`` elsewhere in answer sessions,
  filler turns with and without the key;
* multi-turn sessions with several assistant turns, Chinese/Japanese/Korean turns, and code
  whose indentation (spaces and a tab) matters.

Filler sessions are drawn from one seeded pool, as LongMemEval_M's haystacks are; the file is
written record by record so a multi-gigabyte file costs little memory.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

from vismem.env.dialogue.model import LONGMEMEVAL_COLUMNS

_WORDS = ("trip plan museum coffee garden budget recipe guitar lesson train ticket weekend paint "
          "novel chapter market salad running shoes river camera battery email meeting project "
          "deadline yoga class movie review bread oven flight hotel beach mountain").split()
#: Non-Latin turns: Chinese, Japanese, Korean (the renderer's CJK fallback must draw them).
NON_LATIN = (
    "我上周去了北京的博物馆，那里的展览非常有意思。",
    "明日は東京で友達とラーメンを食べに行きます。",
    "저는 주말마다 한강에서 자전거를 탑니다.",
)
#: A code reply whose meaning lives in its indentation (four spaces, eight, and a tab).
CODE = ("Here is the function:\n\ndef total(items):\n    s = 0\n    for x in items:\n        s += x\n"
        "    return s\n\nbuild:\n\tpython -m build\n")
_FACTS = ("I graduated with a degree in {w}.", "My cat is called {w}.", "I moved to {w} street last month.",
          "I bought a {w} for 120 dollars.", "My favourite hobby is now {w}.")


@dataclass(frozen=True)
class SynthStats:
    """What :func:`write_synthetic_longmemeval` wrote."""

    path: Path
    records: int
    bytes: int
    duplicate_sessions: int
    abstention: int


def _date(t: datetime) -> str:
    return t.strftime("%Y/%m/%d (%a) %H:%M")


def _hex(rng: random.Random) -> str:
    return f"{rng.getrandbits(32):08x}"


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _filler_pool(rng: random.Random, size: int, turns: int, words: int) -> list[tuple[str, list[dict]]]:
    pool = []
    for n in range(size):
        sid = f"sharegpt_{_hex(rng)}_{n % 3}" if n % 2 else f"ultrachat_{rng.randrange(10**5, 10**6)}"
        sess = []
        for j in range(turns):
            role = "user" if j % 2 == 0 else "assistant"
            text = _sentence(rng, words)
            if n % 7 == 3 and j == 0:
                text = NON_LATIN[(n // 7) % len(NON_LATIN)]
            if n % 11 == 5 and role == "assistant" and j == 1:
                text = CODE
            turn: dict[str, Any] = {"role": role, "content": text}
            if n % 2 == 0:  # some filler sources carry the key, some do not
                turn["has_answer"] = False
            sess.append(turn)
        pool.append((sid, sess))
    return pool


def _answer_session(rng: random.Random, fact: str, turns: int, words: int, in_assistant: bool) -> list[dict]:
    turns = max(turns, 4)  # several user and several assistant turns
    evidence_at = 3 if in_assistant else 2
    sess = []
    for j in range(turns):
        role = "user" if j % 2 == 0 else "assistant"
        text = fact if j == evidence_at else _sentence(rng, words)
        sess.append({"role": role, "content": text, "has_answer": j == evidence_at})
    return sess


def synthetic_records(*, seed: int = 0, n_questions: int = 12, sessions_per_question: int = 6,
                      turns_per_session: int = 4, words_per_turn: int = 12, pool_size: int = 40,
                      dup_every: int = 4, abs_every: int = 5) -> Iterator[dict[str, Any]]:
    """LongMemEval records in the upstream schema (see the module doc), deterministic in ``seed``."""
    rng = random.Random(seed)
    pool = _filler_pool(rng, max(pool_size, sessions_per_question), turns_per_session, words_per_turn)
    for i in range(n_questions):
        qtype = LONGMEMEVAL_COLUMNS[i % len(LONGMEMEVAL_COLUMNS)]
        base = _hex(rng)
        qid = (f"gpt4_{base}" if qtype == "temporal-reasoning" else base) + ("_abs" if abs_every and i % abs_every == abs_every - 1 else "")
        n_ans = 2 + i % 2 if qtype in ("multi-session", "temporal-reasoning", "knowledge-update") else 1
        word = rng.choice(_WORDS)
        fact = _FACTS[i % len(_FACTS)].format(w=word)
        answers = [(f"answer_{base}_{k + 1}" if n_ans > 1 else f"answer_{base}",
                    _answer_session(rng, fact, turns_per_session, words_per_turn, qtype == "single-session-assistant"))
                   for k in range(n_ans)]
        fillers = rng.sample(pool, max(sessions_per_question - n_ans, 0))  # 0: an oracle-style file
        haystack = fillers + answers
        rng.shuffle(haystack)
        if fillers and dup_every and i % dup_every == 0:  # upstream #54: the same session again, later
            haystack.append(fillers[0])
        t = datetime(2023, 1, 1) + timedelta(days=rng.randrange(200))
        dates = []
        for _ in haystack:
            t += timedelta(hours=rng.randrange(5, 60), minutes=rng.randrange(60))
            dates.append(_date(t))
        yield {
            "question_id": qid, "question_type": qtype,
            "question": f"What did I tell you about {word}?",
            "answer": (i + 3) if qtype == "temporal-reasoning" else word,
            "question_date": _date(t + timedelta(days=3)),
            "haystack_session_ids": [sid for sid, _ in haystack],
            "haystack_dates": dates,
            "haystack_sessions": [sess for _, sess in haystack],
            "answer_session_ids": [sid for sid, _ in answers],
        }


def write_synthetic_longmemeval(path: str | Path, *, target_bytes: int | None = None, **kw: Any) -> SynthStats:
    """Write a synthetic LongMemEval file (one JSON array, ASCII-escaped like ``json.dump``).

    With ``target_bytes`` records are written until the file reaches that size (``n_questions``
    is then only an upper bound, default unbounded); ``kw`` goes to :func:`synthetic_records`.
    """
    path = Path(path)
    if target_bytes is not None:
        kw.setdefault("n_questions", 10**9)
    n = size = dups = n_abs = 0
    with open(path, "w", encoding="ascii") as fh:
        fh.write("[")
        size = 1
        for rec in synthetic_records(**kw):
            if target_bytes is not None and size >= target_bytes and n:
                break
            text = ("" if n == 0 else ",\n") + json.dumps(rec)
            fh.write(text)
            size += len(text)
            n += 1
            dups += len(rec["haystack_session_ids"]) - len(set(rec["haystack_session_ids"]))
            n_abs += "_abs" in rec["question_id"]
        fh.write("]\n")
        size += 2
    return SynthStats(path=path, records=n, bytes=size, duplicate_sessions=dups, abstention=n_abs)
