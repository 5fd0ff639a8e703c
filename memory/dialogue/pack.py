"""Packing turn-pairs into memory-shot units (paper §4 and A.3), on heights alone.

* complete turn-pairs are added to a unit until the next one would pass ``max_height``;
* each new unit of a session first repeats the last ``overlap`` (2) turn-pairs of the previous
  unit, and repeats fewer only when the repeated pairs plus the next new pair do not fit;
* a pair that does not fit even alone either grows the unit (``grow``: the paper's LongMemEval
  rule) or is an error (``error``); pairs are never split here -- but a pair that would grow a
  shot past :data:`GROW_LIMIT` x ``max_height`` is cut into pieces before packing
  (:func:`vismem.memory.dialogue.layout.split_pair`, called by ``plan_session``), so no shot is
  ever taller than that (a 200 KB turn once made one 54,000 px shot nobody could read);
* ``max_height=None`` is "full session": one unit holds every pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from vismem.core.errors import DataError

#: A grown shot (``oversize: grow``) is at most this many times ``max_height``; a taller pair is
#: split over several shots of at most ``max_height`` each.
GROW_LIMIT = 4


@dataclass(frozen=True, slots=True)
class Span:
    """Pairs ``[start, end)`` of a session; the first ``overlap`` of them repeat the last unit."""

    start: int
    end: int
    overlap: int
    height: int
    overflow: bool  # taller than max_height because one pair alone did not fit


def pack(pair_heights: Sequence[int], fixed_height: int, max_height: int | None, *, overlap: int = 2,
         oversize: Literal["grow", "error"] = "grow", where: str = "") -> list[Span]:
    """Split a session's pairs into units. ``fixed_height`` is header + paddings."""
    n = len(pair_heights)
    if n == 0:
        return []
    if max_height is None:
        return [Span(0, n, 0, fixed_height + sum(pair_heights), False)]
    spans: list[Span] = []
    nxt = 0  # first pair not yet shown
    while nxt < n:
        start, ov = nxt, 0
        if spans:
            prev = spans[-1]
            # Largest overlap ≤ `overlap` (and ≤ the previous unit's size) that still leaves room
            # for the next new pair.
            for k in range(min(overlap, prev.end - prev.start), 0, -1):
                if fixed_height + sum(pair_heights[nxt - k:nxt + 1]) <= max_height:
                    start, ov = nxt - k, k
                    break
        h = fixed_height + sum(pair_heights[start:nxt + 1])
        overflow = h > max_height
        if overflow and oversize == "error":
            raise DataError(f"{where}: turn-pair {nxt} is {h} px tall alone, above max_height={max_height} "
                            "(use oversize: grow)")
        end = nxt + 1
        while end < n and h + pair_heights[end] <= max_height:
            h += pair_heights[end]
            end += 1
        spans.append(Span(start, end, ov, h, overflow))
        nxt = end
    return spans
