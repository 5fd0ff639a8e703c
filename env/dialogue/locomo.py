"""LoCoMo (``locomo10.json``) → ``Conversation``.

Pitfalls of the official file handled here (counts checked in tests):

* ``session_N_date_time`` keys exist for sessions that have no ``session_N`` list (conv-26 has
  35 dates and 19 sessions): only existing, non-empty session lists are read;
* ``answer`` is sometimes an int (stored as text);
* category 5 (adversarial) items carry ``adversarial_answer`` and mostly no ``answer``: kept with
  ``scored=False`` (the paper's tables leave them out);
* a ``sample_id`` repeated in the file, or a ``dia_id`` repeated in a conversation, is an error
  naming both records (keyed by id, one would silently replace the other);
* 4 questions have empty evidence, and some evidence strings are malformed (``'D8:6; D9:17'``,
  ``'D'``, ``'D:11:26'``, ``'D30:05'``, several ids joined by spaces) or name turns that do not
  exist: every id that can be parsed and resolved is kept, the rest is recorded verbatim in
  ``evidence_unparsed``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from vismem.env.dialogue.model import LOCOMO_CATEGORIES, Conversation, Question, Session, Turn
from vismem.core.errors import DataError
from vismem.core.unique import UniqueIds, json_loads_unique

#: Largest LoCoMo-format file read (bytes).
MAX_LOCOMO_BYTES = 256 << 20
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


def parse_locomo_date(text: str) -> datetime | None:
    """LoCoMo session timestamps; None when a value does not follow the usual format."""
    try:
        return datetime.strptime(text.strip(), _DATE_FORMAT)
    except ValueError:
        return None


def parse_evidence(raw: list[Any], known: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split raw evidence strings into normalised dia_ids that exist, and unresolved leftovers.

    ``known`` maps dia_id → session_id. One raw string may hold several ids (``;``/``,``/space).
    """
    ids: list[str] = []
    bad: list[str] = []
    for item in raw:
        s = str(item)
        parts = [p for p in re.split(r"[;,\s]+", s.strip()) if p]
        ok_any, leftover = False, False
        for p in parts:
            m = _DIA_ID.fullmatch(p)
            dia = f"D{int(m.group(1))}:{int(m.group(2))}" if m else None
            if dia and dia in known:
                if dia not in ids:
                    ids.append(dia)
                ok_any = True
            else:
                leftover = True
        if leftover or not ok_any:
            bad.append(s)
    return tuple(ids), tuple(bad)


def _fail(path: Path, record: str, fld: str, why: str) -> DataError:
    return DataError(f"{path}: record {record}: field {fld!r} {why}")


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read ``locomo10.json`` into conversations (speaker_a on the left, speaker_b right)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_LOCOMO_BYTES:  # read whole: ~10x its size in Python objects
            raise DataError(f"{path}: {size:,} bytes, more than the {MAX_LOCOMO_BYTES:,} a LoCoMo-format file "
                            "may have (it is read whole; locomo10.json has 2.8 MB)")
        raw = json_loads_unique(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise DataError(f"{path}: LoCoMo file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not valid JSON ({err})") from None
    except RecursionError:
        raise DataError(f"{path}: not valid JSON (nested too deep to read)") from None
    if not isinstance(raw, list):
        raise DataError(f"{path}: expected a JSON list of conversations, got {type(raw).__name__}")
    if not raw:
        raise DataError(f"{path}: the LoCoMo file holds no conversations (an empty list)")
    ids = UniqueIds("sample_id")
    out = []
    for i, rec in enumerate(raw):
        conv = _conversation(path, i, rec)
        ids.add(conv.conversation_id, f"record #{i}", prefix=f"{path}: ")
        out.append(conv)
    return out


def _conversation(path: Path, i: int, rec: Any) -> Conversation:
    if not isinstance(rec, dict):
        raise _fail(path, f"#{i}", "<record>", "must be an object")
    cid = rec.get("sample_id")
    if not isinstance(cid, str) or not cid:
        raise _fail(path, f"#{i}", "sample_id", "is missing or not a string")
    where = f"#{i} ({cid})"
    conv = rec.get("conversation")
    if not isinstance(conv, dict):
        raise _fail(path, where, "conversation", "is missing or not an object")
    speakers = []
    for k in ("speaker_a", "speaker_b"):
        if not isinstance(conv.get(k), str):
            raise _fail(path, where, f"conversation.{k}", "is missing or not a string")
        speakers.append(conv[k])
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
    sessions: list[Session] = []
    for n in numbers:
        key = f"session_{n}"
        turns_raw = conv[key]
        if not isinstance(turns_raw, list):
            raise _fail(path, where, f"conversation.{key}", "must be a list of turns")
        if not turns_raw:
            continue
        date_text = conv.get(f"{key}_date_time")
        if not isinstance(date_text, str):
            raise _fail(path, where, f"conversation.{key}_date_time", "is missing for an existing session")
        turns = []
        for j, t in enumerate(turns_raw):
            fld = f"conversation.{key}[{j}]"
            if not isinstance(t, dict):
                raise _fail(path, where, fld, "must be an object")
            for req in ("speaker", "dia_id", "text"):
                if not isinstance(t.get(req), str):
                    raise _fail(path, where, f"{fld}.{req}", "is missing or not a string")
            cap = t.get("blip_caption")
            turns.append(Turn(dia_id=t["dia_id"], speaker=t["speaker"], text=t["text"],
                              image_caption=cap if isinstance(cap, str) and cap else None))
        sessions.append(Session(session_id=key, index=n, date_text=date_text,
                                date=parse_locomo_date(date_text), turns=tuple(turns)))
    turn_ids = UniqueIds("dia_id")
    for s in sessions:
        for j, t in enumerate(s.turns):
            turn_ids.add(t.dia_id, f"conversation.{s.session_id}[{j}]", prefix=f"{path}: record {where}: ")
    known = {t.dia_id: s.session_id for s in sessions for t in s.turns}
    qa = rec.get("qa", [])
    if not isinstance(qa, list):
        raise _fail(path, where, "qa", "must be a list")
    questions = [_question(path, where, cid, j, q, known) for j, q in enumerate(qa)]
    return Conversation(dataset="locomo", conversation_id=cid, speakers=(speakers[0], speakers[1]),
                        sessions=tuple(sessions), questions=tuple(questions), source=str(path))


def _question(path: Path, where: str, cid: str, j: int, q: Any, known: dict[str, str]) -> Question:
    fld = f"qa[{j}]"
    if not isinstance(q, dict):
        raise _fail(path, where, fld, "must be an object")
    if not isinstance(q.get("question"), str):
        raise _fail(path, where, f"{fld}.question", "is missing or not a string")
    cat = q.get("category")
    if cat not in LOCOMO_CATEGORIES:
        raise _fail(path, where, f"{fld}.category", f"must be one of 1..5, got {cat!r}")
    ev_raw = q.get("evidence", [])
    if not isinstance(ev_raw, list):
        raise _fail(path, where, f"{fld}.evidence", "must be a list")
    answer = q.get("answer")
    adversarial = cat == 5
    if answer is None and not adversarial:
        raise _fail(path, where, f"{fld}.answer", "is missing")
    if answer is not None and not isinstance(answer, (str, int, float)):
        raise _fail(path, where, f"{fld}.answer", f"must be text or a number, got {type(answer).__name__}")
    evidence, unparsed = parse_evidence(ev_raw, known)
    sessions = tuple(dict.fromkeys(known[d] for d in evidence))
    adv = q.get("adversarial_answer")
    return Question(
        question_id=f"{cid}:q{j}", question=q["question"],
        answer=None if answer is None else str(answer),
        category=LOCOMO_CATEGORIES[cat], category_code=str(cat), evidence=evidence,
        evidence_sessions=sessions, evidence_unparsed=unparsed,
        adversarial_answer=None if adv is None else str(adv), scored=not adversarial,
    )
