"""LongMemEval (``longmemeval_s`` / ``_m`` / ``_oracle`` JSON) → ``Conversation``.

Each record is one question with its own haystack of sessions, so each record becomes one
``Conversation`` (id = ``question_id``) holding one question. Turns get the deterministic
dia_id ``{session_id}:{turn_number}`` (1-based, like LoCoMo's ``D3:7``) so that evidence — the
``has_answer`` turns and ``answer_session_ids`` — is scored exactly like LoCoMo evidence.
The files live on a model hub, never in this repository: the loader takes a path. All three
(``longmemeval_s_cleaned.json``, ``longmemeval_m_cleaned.json``, ``longmemeval_oracle.json``)
share one schema and are read the same way: record by record (:class:`LongMemEvalReader`), so
the ~2.7 GB ``_m`` file never sits in memory as JSON. A session id repeated inside a record with
identical turns (upstream issue #54) is kept once and counted; with other turns it is a
:class:`DuplicateSessionError`; a question id repeated across records is a ``DataError`` naming
both. :func:`retrieval_corpus` gives LongMemEval's own retrieval
corpus and labels (``vismem.analysis.lme_retrieval`` scores rankings over it).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from vismem.env.dialogue.model import LONGMEMEVAL_COLUMNS, Conversation, Question, Session, Turn
from vismem.core.errors import DataError
from vismem.core.jsonarray import iter_json_array
from vismem.core.unique import UniqueIds

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


class DuplicateSessionError(DataError):
    """A record repeats a haystack session id with different content (upstream repeats are identical)."""


class LongMemEvalConversations(list):
    """The conversations of one LongMemEval file, with what loading had to repair.

    ``duplicate_sessions`` counts haystack sessions dropped because their record had already
    listed the same id with identical turns (upstream issue xiaowu0162/LongMemEval#54: 13
    histories of ``longmemeval_s_cleaned.json`` repeat a session under another date);
    ``duplicates`` names them as ``(question_id, session_id)`` pairs.
    """

    duplicate_sessions: int = 0
    duplicates: tuple[tuple[str, str], ...] = ()


class LongMemEvalReader:
    """Stream a LongMemEval file one record (one ``Conversation``) at a time.

    The file is one JSON array; it is read incrementally (:mod:`vismem.core.jsonarray`) so a
    LongMemEval_M file (~2.7 GB) never sits in memory whole. ``duplicates`` grows as records are
    read. With ``share_turns`` a session met again in a later record with identical turns reuses
    the first one's ``Turn`` objects (LongMemEval_M draws its haystacks from one pool of
    sessions), which keeps a fully loaded list small; streaming callers leave it off.
    """

    def __init__(self, path: str | Path, *, limit: int | None = None, share_turns: bool = False) -> None:
        self.path = Path(path)
        self.limit = limit
        self.duplicates: list[tuple[str, str]] = []
        self._shared: dict[str, tuple[Turn, ...]] | None = {} if share_turns else None

    def __iter__(self) -> Iterator[Conversation]:
        n = 0
        # A question id names the record's conversation (and its store keys): a repeat would
        # overwrite the first record's shots, so it is an error naming both.
        ids = UniqueIds("question_id")
        try:
            if self.limit is not None and self.limit <= 0:
                return
            for i, rec in enumerate(iter_json_array(self.path)):
                conv = _record(self.path, i, rec, self.duplicates, self._shared)
                ids.add(conv.conversation_id, f"record #{i}", prefix=f"{self.path}: ")
                yield conv
                n += 1
                if n == self.limit:
                    return
        except FileNotFoundError:
            raise DataError(f"{self.path}: LongMemEval file not found (download longmemeval_s/_m/_oracle "
                            "yourself and pass its path)") from None
        if n == 0:
            raise DataError(f"{self.path}: the LongMemEval file holds no question records (an empty list)")


def load_longmemeval(path: str | Path, *, limit: int | None = None) -> LongMemEvalConversations:
    """Read a LongMemEval file (``_s``, ``_m`` or ``oracle``); ``limit`` keeps the first N records.

    Records are parsed one at a time; sessions repeated inside a record with identical content
    are kept once and counted (``.duplicate_sessions`` of the result); a repeat with different
    content raises :class:`DuplicateSessionError`.
    """
    reader = LongMemEvalReader(path, limit=limit, share_turns=True)
    out = LongMemEvalConversations(reader)
    out.duplicates = tuple(reader.duplicates)
    out.duplicate_sessions = len(out.duplicates)
    return out


def _fail(path: Path, where: str, fld: str, why: str) -> DataError:
    return DataError(f"{path}: record {where}: field {fld!r} {why}")


def _record(path: Path, i: int, rec: Any, duplicates: list[tuple[str, str]],
            shared: dict[str, tuple[Turn, ...]] | None) -> Conversation:
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
    seen: dict[str, tuple[Turn, ...]] = {}
    for k, (sid, date_text, turns_raw) in enumerate(zip(ids, dates, sess)):
        if not isinstance(sid, str) or not isinstance(date_text, str):
            raise _fail(path, where, f"haystack_session_ids[{k}]/haystack_dates[{k}]", "must be strings")
        turns = _turns(path, where, k, sid, turns_raw)
        if sid in seen:
            if seen[sid] != turns:
                first = next(i for i, x in enumerate(ids) if x == sid)
                raise DuplicateSessionError(
                    f"{path}: record {where}: field 'haystack_session_ids' repeats session {sid!r} "
                    f"(positions {first} and {k}) with different turns; an identical repeat would be kept once")
            duplicates.append((qid, sid))  # identical repeat (upstream #54): keep the first
            continue
        if shared is not None:
            first = shared.setdefault(sid, turns)
            turns = first if first == turns else turns
        seen[sid] = turns
        sessions.append(Session(session_id=sid, index=len(sessions) + 1, date_text=date_text,
                                date=parse_lme_date(date_text), turns=turns))
    evidence = [t.dia_id for s in sessions for t in s.turns if t.has_answer]
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


def _turns(path: Path, where: str, k: int, sid: str, turns_raw: Any) -> tuple[Turn, ...]:
    if not isinstance(turns_raw, list):
        raise _fail(path, where, f"haystack_sessions[{k}]", "must be a list of turns")
    turns = []
    for j, t in enumerate(turns_raw):
        fld = f"haystack_sessions[{k}][{j}]"
        if not isinstance(t, dict) or t.get("role") not in ROLE_NAMES:
            raise _fail(path, where, f"{fld}.role", "must be 'user' or 'assistant'")
        if not isinstance(t.get("content"), str):
            raise _fail(path, where, f"{fld}.content", "is missing or not a string")
        turns.append(Turn(dia_id=f"{sid}:{j + 1}", speaker=ROLE_NAMES[t["role"]], text=t["content"],
                          role=t["role"], has_answer=bool(t.get("has_answer", False))))
    return tuple(turns)


def retrieval_corpus(conv: Conversation, granularity: str) -> list[dict[str, Any]]:
    """LongMemEval's retrieval corpus of one question (its ``run_retrieval`` flat index), as rows
    for :mod:`vismem.analysis.lme_retrieval`.

    ``granularity="turn"``: one item per *user* turn (``corpus_id`` its dia_id), relevant when its
    session is an answer session (``answer`` in the id) and the turn is labelled ``has_answer``;
    ``lme_session`` is the session key upstream's turn→session metrics see (``noans`` in place of
    ``answer`` for an unlabelled turn of an answer session).
    ``"session"``: one item per session (``corpus_id`` the session id; text its user turns joined
    by spaces; ``dia_ids`` every turn, so a memory unit showing any of the session retrieves it),
    relevant when an answer session has a labelled user turn. An identical repeated session is in
    the corpus once (the loader keeps it once), where upstream would index it twice.
    """
    if granularity not in ("turn", "session"):
        raise ValueError(f"granularity must be 'turn' or 'session', got {granularity!r}")
    qid = conv.questions[0].question_id if conv.questions else conv.conversation_id
    rows: list[dict[str, Any]] = []
    for s in conv.sessions:
        answer = "answer" in s.session_id
        users = [t for t in s.turns if t.role == "user"]
        if granularity == "session":
            rows.append({"question_id": qid, "corpus_id": s.session_id, "session_id": s.session_id,
                         "dia_ids": [t.dia_id for t in s.turns], "text": " ".join(t.text for t in users),
                         "relevant": answer and any(t.has_answer for t in users), "position": len(rows)})
            continue
        for t in users:
            rel = answer and t.has_answer
            # upstream renames an unlabelled turn of an answer session to noans_…: its own session
            key = s.session_id if rel or not answer else s.session_id.replace("answer", "noans")
            rows.append({"question_id": qid, "corpus_id": t.dia_id, "session_id": s.session_id,
                         "lme_session": key, "dia_ids": [t.dia_id], "text": t.text, "relevant": rel,
                         "position": len(rows)})
    return rows


def has_retrieval_target(conv: Conversation) -> bool:
    """Whether a user turn of the haystack is labelled ``has_answer`` (upstream leaves questions
    without one out of its retrieval averages, e.g. single-session-assistant ones)."""
    return any(t.has_answer and t.role == "user" for s in conv.sessions for t in s.turns)
