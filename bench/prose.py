"""Synthetic prose that compresses like English: for benchmarks whose pages gzip their text.

A viewer benchmark's size depends on how well its text compresses, and a handful of repeated
words gzips several times better than real text (a 27-word vocabulary made a paper-sized
trajectory viewer's step logs look half their real size). :func:`prose` draws words from a
fixed pseudo-vocabulary of 6,000 words with Zipf frequencies (the n-th commonest at 1/n), whose
gzip ratio (2.6) and word length (5.4 characters with its space) are those of LoCoMo's words
drawn independently (2.5, 5.5); real text, with its phrases, compresses a little better (3.1).
"""

from __future__ import annotations

import itertools
import random

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: English letter frequencies (percent), a-z.
_FREQ = (8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.77, 4.0, 2.4, 6.7, 7.5, 1.9, 0.1, 6.0, 6.3, 9.1, 2.8,
         1.0, 2.4, 0.15, 2.0, 0.07)


def _vocabulary(n: int = 6000, seed: int = 7) -> tuple[list[str], list[float]]:
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < n:
        w = "".join(rng.choices(_LETTERS, weights=_FREQ, k=min(14, int(rng.expovariate(1 / 3.0)) + 2)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words, list(itertools.accumulate(1 / (r + 1) for r in range(n)))


_WORDS, _CUM = _vocabulary()


def prose(rng: random.Random, n: int) -> str:
    """``n`` words of English-like prose from ``rng`` (the same ``rng`` state, the same words)."""
    return " ".join(rng.choices(_WORDS, cum_weights=_CUM, k=n))


__all__ = ["prose"]
