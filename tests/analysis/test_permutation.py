"""Exact paired cluster sign-permutation test: identical to brute-force enumeration."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from vismem.analysis.permutation import brute_force_p, chain_sum_test, count_extreme, sign_permutation_test


@pytest.mark.parametrize("k", range(1, 13))
def test_meet_in_the_middle_equals_brute_force_for_integer_differences(k):
    rng = np.random.default_rng(k)
    for _ in range(8):
        sums = rng.integers(-6, 7, k)
        n_ext, total = count_extreme(sums)
        assert total == 2**k
        assert n_ext / total == brute_force_p(sums)


def test_rational_ties_are_counted_as_extreme():
    # 1/3 + 1/3 + 1/3 - 1 == 0 exactly but not in floating point; many assignments tie.
    vals = [Fraction(1, 3), Fraction(1, 3), Fraction(1, 3), Fraction(1, 10), Fraction(7, 10), Fraction(1, 5)]
    exact = brute_force_p(vals)
    res = chain_sum_test(np.array([float(v) for v in vals]), n_probes=12)
    assert res.p_value == exact
    # A float sum that equals the observed one only up to rounding must still tie.
    vals = np.array([0.1, 0.2, 0.3, 0.6])
    assert count_extreme(vals)[0] / 16 == brute_force_p([Fraction(1, 10), Fraction(1, 5), Fraction(3, 10),
                                                          Fraction(3, 5)])


def test_per_probe_interface_and_five_chain_minimum():
    # Five chains all favouring A: only the identity and the all-flip are as extreme.
    chains = np.repeat(np.arange(5), 10)
    diffs = np.where(np.arange(50) % 10 < 3, 1, 0)
    res = sign_permutation_test(diffs, chains)
    assert res.p_value == 0.0625 == res.min_p
    assert res.d_bar == pytest.approx(0.3)
    assert (res.n_extreme, res.n_assignments, res.n_chains, res.n_probes) == (2, 32, 5, 50)


def test_brute_force_by_hand_for_three_chains():
    # D = (2, -1, 1), T = 2: sums over 8 sign patterns: 2,4,0,2,-2,0,-4,-2 -> |.|>=2 in 6 of 8.
    assert brute_force_p([2, -1, 1]) == 0.75
    assert chain_sum_test(np.array([2, -1, 1]), n_probes=9).p_value == 0.75


def test_k25_is_exact():
    # Its speed (<= 1 s) is the stats-permutation-k25 benchmark's target, not a timed test's.
    rng = np.random.default_rng(0)
    sums = rng.integers(-30, 45, 25)
    res = chain_sum_test(sums, n_probes=2500)
    assert res.n_assignments == 2**25
    # Cross-check by splitting differently: enumerate the first 5 signs by hand, MITM the rest.
    hits = 0
    t = abs(int(sums.sum()))
    for signs in itertools.product((1, -1), repeat=5):
        head = int(np.dot(signs, sums[:5]))
        tail = sums[5:]
        # count tails with |head + tail_sum| >= t using the module on a shifted problem
        from vismem.analysis.permutation import _signed_sums

        left = np.sort(_signed_sums(tail[:10]))
        right = _signed_sums(tail[10:])
        tot = (left[None, :] + right[:, None]).ravel() + head
        hits += int((np.abs(tot) >= t).sum())
    assert hits == res.n_extreme


def test_degenerate_inputs():
    none = sign_permutation_test([], [])
    assert math.isnan(none.p_value) and none.note == "no common probes"
    zero = sign_permutation_test([0, 0, 0], [1, 2, 3])
    assert zero.p_value == 1.0 and zero.d_bar == 0
    one = sign_permutation_test([1, 1, 0], [7, 7, 7])
    assert one.p_value == 1.0 and "single chain" in one.note
    with pytest.raises(ValueError, match="same length"):
        sign_permutation_test([1, 0], [1])


def test_beyond_exact_reach_falls_back_to_seeded_monte_carlo():
    sums = np.random.default_rng(2).integers(-3, 6, 60)
    res = chain_sum_test(sums, n_probes=600)
    again = chain_sum_test(sums, n_probes=600)
    assert not res.exact and "Monte Carlo" in res.note and res.p_value == again.p_value
    assert 0 < res.p_value <= 1
