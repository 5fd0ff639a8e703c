"""LongMemEval's standard retrieval baselines behind the DialogueMemory protocol: BM25 (``bm25``,
with ``rank_bm25``) and dense (``dense``, with the run's text embedder), over sessions or turns.

As LongMemEval's ``src/retrieval`` indexes them, a unit's *key* (what is matched against the
question) is its user turns when the dialogue has roles (LongMemEval: a session is keyed by
its user turns joined by spaces, a turn by its text) and every turn otherwise (LoCoMo, whose
two speakers are both users); its *value* (what the answering model is shown) is the session,
or the turn, in LoCoMo's text format with the session's date. A turn unit shows one user turn
(with roles) or one turn; a session unit shows every turn of the session.

Construction latency (``ingest``) covers building the units and the index (tokenising and the
BM25 statistics; embedding the keys for ``dense``), like MemShot's render + embedding.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

import numpy as np

from vismem.memory.dialogue.memories import MEMORIES, MemoryUnit
from vismem.memory.dialogue.memories.base import RetrievingMemory

Granularity = Literal["session", "turn"]
_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode word characters), BM25's terms."""
    return _WORD.findall(text.lower())


def keyed_units(conversation: Any, granularity: Granularity) -> list[tuple[str, MemoryUnit]]:
    """``(key, unit)`` per session or turn of ``conversation`` (keys and values as the module says)."""
    from vismem.memory.dialogue.text import session_text, unit_text

    if granularity not in ("session", "turn"):
        from vismem.core.errors import ConfigError

        raise ConfigError(f"granularity must be 'session' or 'turn', got {granularity!r}")
    roles = any(t.role for s in conversation.sessions for t in s.turns)
    cid = conversation.conversation_id
    out: list[tuple[str, MemoryUnit]] = []
    for s in conversation.sessions:
        keyed = [t for t in s.turns if t.role == "user"] if roles else list(s.turns)
        if granularity == "session":
            if keyed:
                out.append((" ".join(t.text for t in keyed),
                            MemoryUnit(f"{cid}:{s.session_id}", cid, s.index, tuple(t.dia_id for t in s.turns),
                                       "text", session_text(s))))
            continue
        for t in keyed:
            out.append((t.text, MemoryUnit(f"{cid}:{t.dia_id}", cid, s.index, (t.dia_id,), "text",
                                           unit_text(s, [t]))))
    return out


@MEMORIES.register("bm25")
class BM25Memory:
    """BM25 (Okapi, ``rank_bm25`` defaults k1 1.5, b 0.75) over a conversation's sessions or turns."""

    modality = "text"

    def __init__(self, *, granularity: Granularity = "session", label: str | None = None,
                 text_embedder: Any = None, image_embedder: Any = None) -> None:
        # the run's embedders are injected into every memory's args; BM25 reads no vectors
        keyed_units(_Empty(), granularity)  # a bad granularity fails here, before any work
        self.granularity = granularity
        self.name = label or f"bm25:{granularity}"
        self.spec = {"name": "bm25", "args": {"granularity": granularity, **({"label": label} if label else {})}}
        self._units: dict[str, list[MemoryUnit]] = {}
        self._index: dict[str, Any] = {}

    def ingest(self, conversation: Any) -> float:
        """Build the units and their BM25 index; returns the seconds spent."""
        from rank_bm25 import BM25Okapi

        t0 = time.perf_counter()
        pairs = keyed_units(conversation, self.granularity)
        cid = conversation.conversation_id
        self._units[cid] = [u for _k, u in pairs]
        # an all-empty corpus has no statistics: such a conversation retrieves nothing
        docs = [tokenize(k) or [""] for k, _u in pairs]
        self._index[cid] = BM25Okapi(docs) if docs else None
        return time.perf_counter() - t0

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        return list(self._units.get(conversation_id, []))

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        """The k best BM25 scores for the question's tokens, ties in memory order."""
        index, units = self._index.get(conversation_id), self._units.get(conversation_id, [])
        if index is None or not units:
            return []
        scores = np.asarray(index.get_scores(tokenize(question)), dtype=np.float64)
        return [units[i] for i in np.argsort(-scores, kind="stable")[:k]]


class _Empty:
    conversation_id = ""
    sessions: tuple = ()


@MEMORIES.register("dense")
class DenseMemory(RetrievingMemory):
    """Dense retrieval over sessions or turns with the run's text embedder (``memshot.text_embedder``,
    injected by the stage): keys embedded at ingest, the question with ``embed_queries``, cosine top-k."""

    modality = "text"

    def __init__(self, *, granularity: Granularity = "session", label: str | None = None,
                 text_embedder: Any = None, image_embedder: Any = None) -> None:
        keyed_units(_Empty(), granularity)
        self.granularity = granularity
        self.name = f"dense:{granularity}"
        super().__init__(label=label, text_embedder=text_embedder, image_embedder=image_embedder)
        self._pending: list[str] = []  # the keys of the units build_units just made

    def build_units(self, conversation: Any) -> list[MemoryUnit]:
        pairs = keyed_units(conversation, self.granularity)
        self._pending = [k for k, _u in pairs]
        return [u for _k, u in pairs]

    def _embed_units(self, units: list[MemoryUnit]) -> np.ndarray:
        from vismem.serve.embed import l2_normalise

        if not units:
            return np.zeros((0, 1), np.float32)
        return l2_normalise(self.embedder.embed_texts(self._pending))
