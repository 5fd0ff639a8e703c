"""The scaling benchmark's exponent and the encode benchmark's phase timer, on known inputs."""

from __future__ import annotations

import time

import pytest

from vismem.bench.encode import _Breakdown
from vismem.bench.scaling import exponent


def test_exponent_recovers_the_power_law():
    assert exponent([1, 2, 4], [3.0, 6.0, 12.0]) == pytest.approx(1.0)
    assert exponent([4, 8, 16], [0.16, 0.64, 2.56]) == pytest.approx(2.0)
    assert exponent([10, 20, 40], [5.0, 5.0, 5.0]) == pytest.approx(0.0)  # fixed cost only


def test_breakdown_times_are_exclusive():
    bd = _Breakdown()
    inner = bd.wrap("inner", lambda: time.sleep(0.05))
    outer = bd.wrap("outer", lambda: (time.sleep(0.02), inner()))
    outer()
    assert 40 <= bd.ms["inner"] <= 150 and 15 <= bd.ms["outer"] < 45  # outer's own time, without inner's
