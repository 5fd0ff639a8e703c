"""LongMemEval's standard retrieval baselines behind the DialogueMemory protocol: upstream's
``flat-bm25`` (``rank_bm25``, as ``src/retrieval/run_retrieval.py`` runs it) and dense retrieval
(``dense``, with the run's text embedder: a stand-in, named so, for upstream's
``flat-contriever`` -- :mod:`vismem.memory.dialogue.memories.contriever`, where its weights are
at hand -- and ``flat-stella`` / ``flat-gte``, not implemented), over sessions or turns.

As LongMemEval's ``src/retrieval`` indexes them, a unit's *key* (what is matched against the
question) is its user turns when the dialogue has roles (LongMemEval: a session is keyed by
its user turns joined by spaces -- a session without a user turn by the empty string, still a
document -- a turn by its text) and every turn otherwise (LoCoMo, whose two speakers are both
users); its *value* (what the answering model is shown) is the session, or the turn, in
LoCoMo's text format with the session's date. A turn unit shows one user turn (with roles) or
one turn; a session unit shows every turn of the session.

``flat-bm25`` is upstream's, not a BM25 of our own: terms are the key split on single spaces,
case kept (``doc.split(" ")``, the question likewise), and the ranking is numpy's default
``argsort`` of the scores reversed, so tied scores come in upstream's order. One difference
stays: an identical repeated haystack session is indexed once (the loader keeps it once),
where upstream indexes it twice. ``bm25`` is kept as another name of ``flat-bm25`` (configs
written before the rename).

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
#: Upstream's dense retriever the ``dense`` memory stands in for (named in its results' label).
DENSE_STANDS_IN_FOR = "flat-contriever"


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode word characters)."""
    return _WORD.findall(text.lower())


def upstream_tokens(text: str) -> list[str]:
    """``flat-bm25``'s terms: the text split on single spaces, case and punctuation kept."""
    return text.split(" ")


def upstream_order(scores: np.ndarray) -> np.ndarray:
    """``flat-bm25``'s ranking: numpy's default (introsort) ``argsort`` reversed, so ties come in
    the order upstream's ``np.argsort(scores)[::-1]`` gives them."""
    return np.argsort(scores)[::-1]


def check_granularity(granularity: str) -> None:
    """Raise ConfigError unless ``granularity`` is ``session`` or ``turn`` (before any work)."""
    keyed_units(_Empty(), granularity)  # type: ignore[arg-type]


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
            if keyed or (roles and s.turns):  # upstream indexes a session without user turns as ""
                out.append((" ".join(t.text for t in keyed),
                            MemoryUnit(f"{cid}:{s.session_id}", cid, s.index, tuple(t.dia_id for t in s.turns),
                                       "text", session_text(s))))
            continue
        for t in keyed:
            out.append((t.text, MemoryUnit(f"{cid}:{t.dia_id}", cid, s.index, (t.dia_id,), "text",
                                           unit_text(s, [t]))))
    return out


@MEMORIES.register("flat-bm25")
class BM25Memory:
    """Upstream LongMemEval's ``flat-bm25`` (``rank_bm25`` Okapi, k1 1.5, b 0.75; its tokeniser and
    tie order, see the module) over a conversation's sessions or turns."""

    modality = "text"

    def __init__(self, *, granularity: Granularity = "session", label: str | None = None,
                 text_embedder: Any = None, image_embedder: Any = None) -> None:
        # the run's embedders are injected into every memory's args; BM25 reads no vectors
        check_granularity(granularity)  # a bad granularity fails here, before any work
        self.granularity = granularity
        self.name = label or f"flat-bm25:{granularity}"
        self.spec = {"name": "flat-bm25", "args": {"granularity": granularity, **({"label": label} if label else {})}}
        self._units: dict[str, list[MemoryUnit]] = {}
        self._index: dict[str, Any] = {}

    def ingest(self, conversation: Any) -> float:
        """Build the units and their BM25 index; returns the seconds spent."""
        from rank_bm25 import BM25Okapi

        t0 = time.perf_counter()
        pairs = keyed_units(conversation, self.granularity)
        cid = conversation.conversation_id
        self._units[cid] = [u for _k, u in pairs]
        self._index[cid] = BM25Okapi([upstream_tokens(k) for k, _u in pairs]) if pairs else None
        return time.perf_counter() - t0

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        return list(self._units.get(conversation_id, []))

    def scores(self, conversation_id: str, question: str) -> np.ndarray:
        """Every unit's BM25 score for the question (memory order), as upstream computes it."""
        index = self._index.get(conversation_id)
        if index is None:
            return np.zeros(0)
        return np.asarray(index.get_scores(upstream_tokens(question)), dtype=np.float64)

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        """The k best BM25 scores for the question, ties in upstream's order."""
        units = self._units.get(conversation_id, [])
        if not units:
            return []
        return [units[i] for i in upstream_order(self.scores(conversation_id, question))[:k]]


MEMORIES.register("bm25")(BM25Memory)


class _Empty:
    conversation_id = ""
    sessions: tuple = ()


@MEMORIES.register("dense")
class DenseMemory(RetrievingMemory):
    """Dense retrieval over sessions or turns with the run's text embedder (``memshot.text_embedder``,
    injected by the stage): keys embedded at ingest, the question with ``embed_queries``, cosine
    top-k. A stand-in for upstream's dense retrievers (:data:`DENSE_STANDS_IN_FOR`), so named."""

    modality = "text"
    stands_in_for = DENSE_STANDS_IN_FOR

    def __init__(self, *, granularity: Granularity = "session", label: str | None = None,
                 text_embedder: Any = None, image_embedder: Any = None) -> None:
        check_granularity(granularity)
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
