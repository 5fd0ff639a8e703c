"""The render job's input: one JSON-carrying row per non-empty session, built in bounded waves.

Every row carries its session as JSON (the Ray Data task rebuilds the ``Session`` from it). For
LongMemEval_M every record's haystack is a copy of ~500 sessions drawn from one pool, so the rows
of the whole file are about the file's size in JSON text -- 2.7 GB -- while the loaded
conversations share the pool's turns and stay small. :func:`session_waves` builds and hands the
rows to the job a wave (:data:`WAVE_BYTES` of session JSON) at a time, so the driver and the
object store hold one wave, never the file's worth.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Iterator

from vismem.env.dialogue.model import Conversation, Session, session_to_dict

#: Session JSON handed to one render wave (bytes).
WAVE_BYTES = 64 << 20


def _row(c: Conversation, s: Session) -> dict[str, Any]:
    return {"dataset": c.dataset, "source": c.source, "conversation_id": c.conversation_id,
            "speakers": json.dumps(list(c.speakers)), "session_id": s.session_id, "session_index": s.index,
            "session_json": json.dumps(session_to_dict(s))}


def session_rows(conversations: Iterable[Conversation]) -> list[dict[str, Any]]:
    """The job's input: one JSON-carrying row per non-empty session (pure)."""
    return [_row(c, s) for c in conversations for s in c.sessions if s.turns]


def session_waves(conversations: Iterable[Conversation], skip: set[str] | frozenset[str] = frozenset(), *,
                  key: Callable[[str, str], str] = lambda c, s: f"{c}/{s}",
                  wave_bytes: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """:func:`session_rows` in waves of at most ``wave_bytes`` of session JSON (a larger session
    is a wave of its own), leaving out the sessions whose ``key(conversation_id, session_id)`` is
    in ``skip`` (pure); ``wave_bytes`` None: :data:`WAVE_BYTES` as it is at the call."""
    wave_bytes = WAVE_BYTES if wave_bytes is None else wave_bytes
    wave: list[dict[str, Any]] = []
    size = 0
    for c in conversations:
        for s in c.sessions:
            if not s.turns or key(c.conversation_id, s.session_id) in skip:
                continue
            row = _row(c, s)
            if wave and size + len(row["session_json"]) > wave_bytes:
                yield wave
                wave, size = [], 0
            wave.append(row)
            size += len(row["session_json"])
    if wave:
        yield wave
