"""Packing turn-pairs into units: the paper's overlap-two rule on heights alone."""

from __future__ import annotations

import pytest

from vismem.memory.dialogue.pack import pack
from vismem.core.errors import DataError


def covered(spans, n):
    return sorted({i for s in spans for i in range(s.start, s.end)}) == list(range(n))


def test_fits_in_one_unit():
    spans = pack([100, 100, 100], 68, 768)
    assert [(s.start, s.end, s.overlap) for s in spans] == [(0, 3, 0)]
    assert spans[0].height == 368


def test_overlap_two_by_default():
    h = [150] * 10
    spans = pack(h, 68, 768)  # 4 pairs fit (68 + 600 = 668; a 5th would be 818)
    assert [(s.start, s.end, s.overlap) for s in spans] == [(0, 4, 0), (2, 6, 2), (4, 8, 2), (6, 10, 2)]
    assert all(s.height <= 768 for s in spans) and covered(spans, 10)
    # every new unit starts with the previous unit's last two pairs
    for a, b in zip(spans, spans[1:]):
        assert b.start == a.end - 2


def test_overlap_reduced_only_when_it_cannot_fit():
    # After [0,1], the next pair (500) fits with one repeated pair (68+150+500=718) but not two.
    h = [150, 150, 500, 150]
    spans = pack(h, 68, 768)
    assert [(s.start, s.end, s.overlap) for s in spans] == [(0, 2, 0), (1, 3, 1), (2, 4, 1)]
    # A pair that fits only alone: overlap 0.
    spans = pack([300, 300, 690], 68, 768)
    assert [(s.start, s.end, s.overlap) for s in spans] == [(0, 2, 0), (2, 3, 0)]


def test_single_pair_unit_cannot_be_repeated():
    # [0] ended because pair 1 did not fit after it, so repeating pair 0 cannot fit either.
    spans = pack([650, 100, 100], 68, 768)
    assert [(s.start, s.end, s.overlap) for s in spans] == [(0, 1, 0), (1, 3, 0)]


def test_pairs_never_split_and_every_pair_shown():
    import random

    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 30)
        h = [rng.randint(40, 600) for _ in range(n)]
        for mh in (512, 768, 1024):
            spans = pack(h, 68, mh, overlap=2)
            assert covered(spans, n)
            for s in spans:
                assert s.height == 68 + sum(h[s.start:s.end])  # whole pairs only
                assert s.height <= mh or (s.end - s.start == 1 and s.overflow)
                assert 0 <= s.overlap <= 2
            for a, b in zip(spans, spans[1:]):
                assert b.start == a.end - b.overlap and b.end > a.end  # progress, contiguous


def test_oversize_grow_or_error():
    spans = pack([100, 900, 100], 68, 768, oversize="grow")
    assert [(s.start, s.end, s.overflow) for s in spans] == [(0, 1, False), (1, 2, True), (2, 3, False)]
    assert spans[1].height == 968
    with pytest.raises(DataError, match="conv-x/session_1: turn-pair 1 is 968 px"):
        pack([100, 900], 68, 768, oversize="error", where="conv-x/session_1")


def test_full_session_and_empty():
    spans = pack([300] * 7, 68, None)
    assert len(spans) == 1 and spans[0].height == 68 + 2100
    assert pack([], 68, 768) == []


def test_overlap_zero():
    spans = pack([300] * 5, 68, 768, overlap=0)
    assert [(s.start, s.end) for s in spans] == [(0, 2), (2, 4), (4, 5)]
