"""The official retrieval formulas as pure functions over numpy arrays and token sets.

Every function mirrors one piece of the official code (``/work/notes/dmv-official.md`` §1.6,
§1.10-§1.13) so the architectures stay thin and the formulas can be tested on hand-computed
banks. Conventions shared by all of them:

* a *missing* channel value (no image, no caption) is ``-inf`` in raw cosine arrays, as the
  official retrievers score it;
* ranking is a **stable** sort on the negated score, so ties keep bank insertion order (the
  official code sorts Python lists with ``key=lambda x: -x[0]``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

_TOKEN_RE = re.compile(r"[a-z0-9]+")
_BM25_SPLIT = re.compile(r"\W+")


def tokens(text: str) -> frozenset[str]:
    """The adapters' tokenizer (``_common.tokens``): lower-cased ASCII ``[a-z0-9]+`` runs, as a set."""
    return frozenset(_TOKEN_RE.findall(text.lower()))


def token_overlap(a: str | frozenset[str], b: str | frozenset[str]) -> int:
    """``len(tokens(a) & tokens(b))``; either side may be given as a token set already."""
    ta = a if isinstance(a, frozenset) else tokens(a)
    tb = b if isinstance(b, frozenset) else tokens(b)
    return len(ta & tb)


def minmax(xs: np.ndarray) -> np.ndarray:
    """Min-max normalisation of one channel over the bank (``hybrid_retriever._minmax``).

    ``-inf`` (missing) maps to 0; all missing gives all 0; zero span gives 0.5 to every present
    value. The arithmetic is float64, as the official code's: it turns each cosine into a Python
    float (``float(np.dot(...))``) before normalising, so float32 cosines are widened first.
    """
    xs = np.asarray(xs, dtype=np.float64)
    present = np.isfinite(xs)
    out = np.zeros(xs.shape, dtype=np.float64)
    if not present.any():
        return out
    finite = xs[present]
    lo, hi = finite.min(), finite.max()
    span = hi - lo
    if span == 0:
        out[present] = 0.5
        return out
    out[present] = (finite - lo) / span
    return out


def hybrid_scores(v: np.ndarray, t: np.ndarray, alpha: float) -> np.ndarray:
    """DualMem's ``HybridNormRetriever``: ``alpha * minmax(v) + (1 - alpha) * minmax(t)``.

    ``alpha`` weights the visual channel. Float64 throughout, as the official Python-float
    arithmetic (``alpha * v + (1 - alpha) * t``, in that order).
    """
    return float(alpha) * minmax(v) + (1.0 - float(alpha)) * minmax(t)


def rank(scores: Sequence[float] | np.ndarray, k: int | None = None) -> np.ndarray:
    """Indices by descending score, ties in insertion order; the first ``k`` (all when None)."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    return order if k is None else order[: max(int(k), 0)]


def maxabs(xs: np.ndarray) -> np.ndarray:
    """M2A-lite's ``_norm``: divide by the largest absolute value (1 when that is 0)."""
    xs = np.asarray(xs, dtype=np.float64)
    if xs.size == 0:
        return xs
    mx = float(np.max(np.abs(xs))) or 1.0
    return xs / mx


def exp_decay(age_sessions: float, half_life: float) -> float:
    """MMA-lite's temporal term: 1 at age 0, 0.5 at ``half_life`` sessions."""
    return math.exp(-math.log(2.0) * age_sessions / max(half_life, 1e-6))


def bm25_tokens(text: str) -> list[str]:
    """M2A-lite's BM25 tokenizer: split on ``\\W+`` (Unicode-aware, keeps ``_``), drop empties,
    keep duplicates."""
    return [t for t in _BM25_SPLIT.split(text.lower()) if t]


class BM25Index:
    """Okapi BM25 exactly as M2A-lite's ``_bm25_scores`` (k1 1.5, b 0.75, Lucene-style idf
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``, query tokens counted *with* repeats).

    Documents are appended as the bank grows; per-document term counts and the document
    frequencies are kept incrementally so a query costs ``O(docs × query tokens)`` dict lookups.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = float(k1), float(b)
        self.tf: list[Counter] = []
        self.dl: list[int] = []
        self.df: Counter = Counter()

    def __len__(self) -> int:
        return len(self.tf)

    def add(self, text: str) -> None:
        """Append one document."""
        toks = bm25_tokens(text)
        tf = Counter(toks)
        self.tf.append(tf)
        self.dl.append(len(toks))
        self.df.update(tf.keys())

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float64, insertion order)."""
        n = len(self.tf)
        out = np.zeros(n, dtype=np.float64)
        if n == 0:
            return out
        avgdl = (sum(self.dl) / n) or 1.0
        q_toks = bm25_tokens(query)
        idf = {q: math.log(1 + (n - self.df[q] + 0.5) / (self.df[q] + 0.5)) for q in set(q_toks) if self.df[q]}
        k1, b = self.k1, self.b
        for i, (tf, dl) in enumerate(zip(self.tf, self.dl)):
            score = 0.0
            norm = k1 * (1 - b + b * dl / avgdl)
            for q in q_toks:  # repeats count, as in the official loop
                f = tf.get(q)
                if not f or q not in idf:
                    continue
                score += idf[q] * (f * (k1 + 1)) / (f + norm)
            out[i] = score
        return out


def bm25_scores(query: str, docs: Iterable[str], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """One-shot BM25 over ``docs`` (for tests and small banks)."""
    idx = BM25Index(k1, b)
    for d in docs:
        idx.add(d)
    return idx.scores(query)


class VectorChannel:
    """One embedding channel of a bank: rows deduplicated by content, appended as the bank grows.

    Identical content (every ``"a chair"``, a product seen under two keys) shares one row, so its
    entries score *exactly* alike and ties fall to insertion order, as in the official lists.
    """

    def __init__(self) -> None:
        self._rows: np.ndarray | None = None
        self._n_rows = 0
        self._row_of: dict[str, int] = {}
        self._idx = np.zeros(16, dtype=np.int64)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, content: str | None, vec: np.ndarray | None) -> None:
        """Add one entry; ``vec=None`` is a missing value (scored ``-inf``)."""
        row = -1
        if vec is not None:
            row = self._row_of.get(content) if content is not None else None
            if row is None:
                row = self._add_row(np.asarray(vec, dtype=np.float32))
                if content is not None:
                    self._row_of[content] = row
        if self._n == len(self._idx):
            self._idx = np.concatenate([self._idx, np.zeros(len(self._idx), dtype=np.int64)])
        self._idx[self._n] = row
        self._n += 1

    def _add_row(self, vec: np.ndarray) -> int:
        if self._rows is None:
            self._rows = np.zeros((16, vec.shape[0]), dtype=np.float32)
        elif self._n_rows == len(self._rows):
            self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
        self._rows[self._n_rows] = vec
        self._n_rows += 1
        return self._n_rows - 1

    @property
    def any_present(self) -> bool:
        return self._n_rows > 0

    def present(self) -> np.ndarray:
        """Which entries have a value."""
        return self._idx[: self._n] >= 0

    def vectors(self) -> np.ndarray:
        """``(n, dim)`` entry vectors (zeros where missing)."""
        if self._rows is None:
            return np.zeros((self._n, 0), dtype=np.float32)
        idx = self._idx[: self._n]
        out = self._rows[np.maximum(idx, 0)].copy()
        out[idx < 0] = 0.0
        return out

    def scores(self, q: np.ndarray) -> np.ndarray:
        """Cosine (dot of unit vectors) of every entry with ``q``; ``-inf`` where missing."""
        out = np.full(self._n, -np.inf, dtype=np.float32)
        if self._rows is None or self._n == 0:
            return out
        uniq = self._rows[: self._n_rows] @ np.asarray(q, dtype=np.float32)
        idx = self._idx[: self._n]
        ok = idx >= 0
        out[ok] = uniq[idx[ok]]
        return out
