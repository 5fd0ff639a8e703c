"""The benchmarks' synthetic prose compresses like English words, not like a few repeated ones."""

from __future__ import annotations

import gzip
import random

from vismem.bench.prose import prose


def test_prose_is_seeded_and_compresses_like_english_words():
    a, b = prose(random.Random(3), 50_000), prose(random.Random(3), 50_000)
    assert a == b and a != prose(random.Random(4), 50_000)
    words = a.split()
    assert len(words) == 50_000 and 4.8 < len(a) / len(words) < 6.0  # LoCoMo: 5.5 characters a word with its space
    ratio = len(a.encode()) / len(gzip.compress(a.encode(), 6))
    assert 2.2 < ratio < 3.2  # LoCoMo's words drawn independently: 2.5; its text: 3.1
    assert len(set(words)) > 3000  # a vocabulary, not a handful
