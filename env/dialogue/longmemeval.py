"""LongMemEval (``longmemeval_s`` / ``_m`` / ``_oracle`` JSON) → ``Conversation``.

Each record is one question with its own haystack of sessions, so each record becomes one
``Conversation`` (id = ``question_id``) holding one question. Turns get the deterministic
dia_id ``{session_id}:{turn_number}`` (1-based, like LoCoMo's ``D3:7``) so that evidence — the
``has_answer`` turns and ``answer_session_ids`` — is scored exactly like LoCoMo evidence.
The files live on a model hub, never in this repository: the loader takes a path.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from vismem.env.dialogue.model import LONGMEMEVAL_COLUMNS, Conversation, Question, Session, Turn
from vismem.core.errors import DataError

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"  # "2023/05/20 (Sat) 02:21"
#: Display names of the two roles; the assistant is drawn on the left, the user on the right.
ROLE_NAMES = {"assistant": "Assistant", "user": "User"}
_FIELDS = ("question_id", "question_type", "question", "answer", "question_date",
           "haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids")


def parse_lme_date(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), DATE_FORMAT)
    except ValueError:
        return None


def load_longmemeval(path: str | Path, *, limit: int | None = None) -> list[Conversation]:
    """Read a LongMemEval file; ``limit`` keeps the first N records (smoke runs)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: LongMemEval file not found (download longmemeval_s/_m/_oracle "
                        "yourself and pass its path)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(raw, list):
        raise DataError(f"{path}: expected a JSON list of question records, got {type(raw).__name__}")
    if not raw:
        raise DataError(f"{path}: the LongMemEval file holds no question records (an empty list)")
    recs = raw if limit is None else raw[:limit]
    return [_record(path, i, r) for i, r in enumerate(recs)]


def _fail(path: Path, where: str, fld: str, why: str) -> DataError:
    return DataError(f"{path}: record {where}: field {fld!r} {why}")


def _record(path: Path, i: int, rec: Any) -> Conversation:
    if not isinstance(rec, dict):
        raise _fail(path, f"#{i}", "<record>", "must be an object")
    qid = rec.get("question_id")
    where = f"#{i} ({qid})" if isinstance(qid, str) else f"#{i}"
    for f in _FIELDS:
        if f not in rec:
            raise _fail(path, where, f, "is missing")
    if not isinstance(qid, str) or not qid:
        raise _fail(path, where, "question_id", "must be a non-empty string")
    qtype = rec["question_type"]
    if qtype not in LONGMEMEVAL_COLUMNS:
        raise _fail(path, where, "question_type", f"must be one of {', '.join(LONGMEMEVAL_COLUMNS)}, got {qtype!r}")
    if not isinstance(rec["question"], str):
        raise _fail(path, where, "question", "must be a string")
    answer = rec["answer"]
    if not isinstance(answer, (str, int, float)):
        raise _fail(path, where, "answer", f"must be text or a number, got {type(answer).__name__}")
    ids, dates, sess = rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"]
    for name, v in (("haystack_session_ids", ids), ("haystack_dates", dates), ("haystack_sessions", sess),
                    ("answer_session_ids", rec["answer_session_ids"])):
        if not isinstance(v, list):
            raise _fail(path, where, name, "must be a list")
    if not (len(ids) == len(dates) == len(sess)):
        raise _fail(path, where, "haystack_sessions",
                    f"lengths differ: {len(ids)} ids, {len(dates)} dates, {len(sess)} sessions")
    sessions: list[Session] = []
    evidence: list[str] = []
    for k, (sid, date_text, turns_raw) in enumerate(zip(ids, dates, sess)):
        if not isinstance(sid, str) or not isinstance(date_text, str):
            raise _fail(path, where, f"haystack_session_ids[{k}]/haystack_dates[{k}]", "must be strings")
        if not isinstance(turns_raw, list):
            raise _fail(path, where, f"haystack_sessions[{k}]", "must be a list of turns")
        turns = []
        for j, t in enumerate(turns_raw):
            fld = f"haystack_sessions[{k}][{j}]"
            if not isinstance(t, dict) or t.get("role") not in ROLE_NAMES:
                raise _fail(path, where, f"{fld}.role", "must be 'user' or 'assistant'")
            if not isinstance(t.get("content"), str):
                raise _fail(path, where, f"{fld}.content", "is missing or not a string")
            dia = f"{sid}:{j + 1}"
            has = bool(t.get("has_answer", False))
            if has:
                evidence.append(dia)
            turns.append(Turn(dia_id=dia, speaker=ROLE_NAMES[t["role"]], text=t["content"],
                              role=t["role"], has_answer=has))
        sessions.append(Session(session_id=sid, index=k + 1, date_text=date_text,
                                date=parse_lme_date(date_text), turns=tuple(turns)))
    if len({s.session_id for s in sessions}) != len(sessions):
        raise _fail(path, where, "haystack_session_ids", "has duplicate session ids")
    known = {s.session_id for s in sessions}
    ans_sessions = tuple(str(s) for s in rec["answer_session_ids"])
    q = Question(
        question_id=qid, question=rec["question"], answer=str(answer), category=qtype,
        category_code=qtype, evidence=tuple(evidence),
        evidence_sessions=tuple(s for s in ans_sessions if s in known),
        evidence_unparsed=tuple(s for s in ans_sessions if s not in known),
        abstention="_abs" in qid, question_date=parse_lme_date(str(rec["question_date"])),
        question_date_text=str(rec["question_date"]),
    )
    return Conversation(dataset="longmemeval", conversation_id=qid,
                        speakers=(ROLE_NAMES["assistant"], ROLE_NAMES["user"]),
                        sessions=tuple(sessions), questions=(q,), source=str(path))
