"""The official scoring formulas against hand-computed values and the official test vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vismem.memory.agent.scoring import (BM25Index, bm25_scores, bm25_tokens, exp_decay, hybrid_scores, maxabs, minmax, rank,
                                  token_overlap, tokens)
from vismem.memory.agent.architectures.worldmm import route, routing_prompt

NEG = -np.inf


@pytest.mark.parametrize("xs, want", [
    ([0.2, NEG, 0.4, 0.3], [0.0, 0.0, 1.0, 0.5]),   # official vectors (spec §1.6)
    ([0.3, 0.3, NEG], [0.5, 0.5, 0.0]),              # zero span -> 0.5, missing -> 0
    ([NEG], [0.0]),                                  # all missing -> 0
    ([NEG, NEG], [0.0, 0.0]),
    ([0.7], [0.5]),                                  # a one-entry bank: 0.5 on a present channel
])
def test_minmax_rules(xs, want):
    assert minmax(np.array(xs, dtype=np.float32)).tolist() == pytest.approx(want, abs=1e-6)


def _official_minmax(xs):
    """The official ``HybridNormRetriever._minmax`` rule on Python floats, written out here."""
    finite = [x for x in xs if x != -math.inf]
    if not finite:
        return [0.0] * len(xs)
    lo, hi = min(finite), max(finite)
    if hi == lo:
        return [0.0 if x == -math.inf else 0.5 for x in xs]
    return [0.0 if x == -math.inf else (x - lo) / (hi - lo) for x in xs]


def test_minmax_and_hybrid_are_float64_like_the_official_python_floats():
    # float32 cosines (our feature rows); the official code widens each with float(np.dot(...))
    v32 = np.array([0.1, 0.9, 0.5, 0.30000001, NEG], dtype=np.float32)
    t32 = np.array([0.7, NEG, 0.2, 0.33, 0.1], dtype=np.float32)
    v, t = [float(x) for x in v32], [float(x) for x in t32]
    assert minmax(v32).dtype == np.float64 and minmax(v32).tolist() == _official_minmax(v)
    for alpha in (0.25, 0.5, 0.75):
        want = [alpha * a + (1 - alpha) * b for a, b in zip(_official_minmax(v), _official_minmax(t))]
        assert hybrid_scores(v32, t32, alpha).tolist() == want  # bit for bit, not approximately


def test_hybrid_three_item_bank_by_hand():
    v = np.array([1.0, 0.0, 0.6], dtype=np.float32)          # minmax -> 1, 0, 0.6
    t = np.array([0.6, 1.0, NEG], dtype=np.float32)          # minmax -> 0, 1, 0 (missing)
    assert hybrid_scores(v, t, 0.75).tolist() == pytest.approx([0.75, 0.25, 0.45], abs=1e-6)
    assert hybrid_scores(v, t, 0.25).tolist() == pytest.approx([0.25, 0.75, 0.15], abs=1e-6)
    both = hybrid_scores(v, t, 0.5)
    assert both.tolist() == pytest.approx([0.5, 0.5, 0.3], abs=1e-6)
    assert rank(both).tolist() == [0, 1, 2]                  # the 0.5 tie keeps bank order


def test_rank_is_stable_and_missing_ranks_last():
    assert rank([1.0, 3.0, 3.0, NEG, 2.0]).tolist() == [1, 2, 4, 0, 3]
    assert rank([0.0, 0.0, 0.0], k=2).tolist() == [0, 1]
    assert rank([NEG, NEG]).tolist() == [0, 1]


def test_tokens_and_overlap_are_ascii_sets():
    assert tokens("Product with Red wool-scarf CURRENT: /product/df5b5fde") == {
        "product", "with", "red", "wool", "scarf", "current", "df5b5fde"}
    assert token_overlap("red red cap", "a red cap, red") == 2
    assert tokens("café") == {"caf"}                         # only [a-z0-9] are token characters


def test_bm25_official_vector_exactly():
    got = bm25_scores("product with red wool scarf CURRENT: /product/df5b5fde",
                      ["a chair A red wool scarf on a modern chair.", "a chair A blue lamp."])
    assert got.tolist() == [1.8082100362433353, 0.0]


def test_bm25_tokenizer_keeps_repeats_and_underscores():
    assert bm25_tokens("Product with /product/ab plant_pot") == ["product", "with", "product", "ab", "plant_pot"]


def _official_bm25(query, docs, k1=1.5, b=0.75):
    """The released ``_bm25_scores`` transcribed (dict-based, query tokens with repeats)."""
    from collections import Counter

    toks = lambda s: [t for t in __import__("re").split(r"\W+", s.lower()) if t]  # noqa: E731
    q, dt = toks(query), [toks(d) for d in docs]
    avgdl = (sum(map(len, dt)) / len(dt)) or 1.0
    df = Counter(t for ts in dt for t in set(ts))
    out = []
    for ts in dt:
        tf, s = Counter(ts), 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (len(dt) - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * (tf[w] * (k1 + 1)) / (tf[w] + k1 * (1 - b + b * len(ts) / avgdl))
        out.append(s)
    return out


DOCS = ["a chair A red wool scarf on a modern chair.", "a lamp A blue lamp with a brass base, product shot.",
        "a rug A woven rug; red and cream.", "a chair chair chair", "a vase"]
QUERY = "product with red wool scarf CURRENT: /product/df5b5fde product"


def test_bm25_incremental_index_matches_the_released_function():
    idx = BM25Index()
    for d in DOCS:
        idx.add(d)
    assert idx.scores(QUERY).tolist() == _official_bm25(QUERY, DOCS)


def test_bm25_against_rank_bm25_with_lucene_idf():
    rank_bm25 = pytest.importorskip("rank_bm25")

    class LuceneIdf(rank_bm25.BM25Okapi):  # the released idf: ln(1 + (N - df + .5) / (df + .5))
        def _calc_idf(self, nd):
            for word, freq in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    lib = LuceneIdf([bm25_tokens(d) for d in DOCS], k1=1.5, b=0.75)
    ours = bm25_scores(QUERY, DOCS)
    assert ours == pytest.approx(lib.get_scores(bm25_tokens(QUERY)), rel=1e-12)


def test_maxabs_scaling():
    assert maxabs(np.array([2.0, -4.0, 1.0])).tolist() == [0.5, -1.0, 0.25]
    assert maxabs(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]  # max |x| = 0 -> divide by 1


def test_exp_decay_half_life():
    assert exp_decay(0, 5) == 1.0
    assert exp_decay(5, 5) == pytest.approx(0.5)
    assert exp_decay(2, 5) == pytest.approx(2 ** (-2 / 5))


@pytest.mark.parametrize("query, module", [
    ("product with red wool scarf CURRENT: /", "visual"),           # official test vectors
    ("product with yellow wool scarf CURRENT: /", "semantic"),
    ("product with black leather belt CURRENT: /category/chair", "visual"),
    ("the one I saw earlier in the last session", "episodic"),
    ("similar style, not that one", "semantic"),
])
def test_worldmm_keyword_router(query, module):
    assert route(query) == module


def test_worldmm_routing_prompt_is_verbatim():
    got = routing_prompt("product with red cap", ["visual"], ["[visual] a=3.0, b=1.4"])
    assert got == ("Retrieval task. Query: 'product with red cap'\nModules already queried: ['visual']\n"
                   "Top candidates so far: [visual] a=3.0, b=1.4\nReply with the NEXT memory module to query from "
                   "[episodic, semantic, visual], or 'done' if the evidence so far is sufficient.\n"
                   "Format: 'NEXT: <module-or-done>'")
