"""The betting confidence sequence (analysis.sequential): an independent scalar implementation of
the capital process agrees with the vectorised one, the intervals cover the exhaustive rate at
every look in small seeded simulations, and a fully drawn population pins the rate."""

from __future__ import annotations

import math

import numpy as np

from vismem.analysis.sequential import BET_CAP, confidence_sequence, interval


def _population(rng, units=40):
    sizes = rng.integers(1, 12, units).astype(float)
    p = np.clip(0.55 + rng.normal(0, 0.2, units), 0, 1)
    return rng.binomial(sizes.astype(int), p).astype(float), sizes


def _scalar_rejected(c, n, theta, *, N, total, alpha, scale, lower=0.0, upper=1.0):
    """The capital process of one candidate rate, written out probe unit by probe unit."""
    log_k, sum_d, sum_x, sum_sq, seen_c, seen_n = 0.0, 0.0, 0.0, (total / N / scale * (upper - lower) / 2) ** 2, 0.0, 0.0
    for t, (ci, ni) in enumerate(zip(c, n)):
        x = (ci - theta * ni) / scale
        m = -sum_x / (N - t)
        drift, var = sum_d / (t + 1), sum_sq / (t + 1)
        lam = drift / (var + drift ** 2)
        lam = min(max(lam, -BET_CAP / max(upper - theta - m, 1e-12)), BET_CAP / max(m - lower + theta, 1e-12))
        log_k += math.log1p(lam * (x - m))
        sum_sq += (x - m - drift) ** 2
        sum_d += x - m
        sum_x += x
        if log_k >= math.log(1 / alpha):
            return True
    return False


def test_vectorised_capital_matches_a_scalar_implementation():
    rng = np.random.default_rng(3)
    c, n = _population(rng)
    order = rng.permutation(c.size)[:25]
    grid = np.linspace(0, 1, 41)
    seq = confidence_sequence(c[order], n[order], population=c.size, total_size=n.sum(), grid=grid,
                              checkpoints=[25], scale=n.max())
    kept = [g for g in grid if not _scalar_rejected(c[order], n[order], g, N=c.size, total=n.sum(), alpha=0.05,
                                                   scale=n.max())]
    assert kept, "the scalar process keeps some rates"
    step = grid[1] - grid[0]
    seen_c, seen_n = c[order].sum(), n[order].sum()
    feasible = (seen_c / n.sum(), (seen_c + n.sum() - seen_n) / n.sum())  # the rest all wrong / all right
    lo = min(max(max(min(kept) - step, 0), feasible[0]), feasible[1])
    hi = max(min(min(max(kept) + step, 1), feasible[1]), feasible[0])
    assert np.isclose(seq.low[0, 0], lo) and np.isclose(seq.high[0, 0], hi) and hi - lo < 0.5


def test_intervals_cover_the_exhaustive_rate_at_every_look():
    rng = np.random.default_rng(11)
    S, covered = 300, []
    c, n = _population(rng, units=60)
    truth = c.sum() / n.sum()
    order = np.argsort(rng.random((S, c.size)), axis=1)
    seq = confidence_sequence(c[order], n[order], population=c.size, total_size=n.sum(), grid=101,
                              checkpoints=range(5, 61, 5), scale=n.max())
    covered = (seq.low <= truth) & (truth <= seq.high)
    assert covered.all(axis=1).mean() >= 0.95  # anytime: every look of a study at once
    width = (seq.high - seq.low).mean(axis=0)
    assert np.all(np.diff(width) <= 1e-12) and width[-1] <= 0.021  # shrinks; the whole population pins it


def test_paired_difference_and_padding():
    rng = np.random.default_rng(5)
    n = rng.integers(1, 8, 30).astype(float)
    a = rng.binomial(n.astype(int), 0.8).astype(float)
    b = rng.binomial(n.astype(int), 0.2).astype(float)
    lo, hi = interval(a - b, n, lower=-1.0, upper=1.0, population=30, total_size=n.sum(), grid=201)
    assert lo > 0 and lo <= (a - b).sum() / n.sum() <= hi  # a clear lead is decided
    padded = confidence_sequence(np.r_[a[:10], 0, 0][None], np.r_[n[:10], 0, 0][None], population=30,
                                 total_size=n.sum(), grid=101, checkpoints=[10, 12], scale=n.max())
    assert padded.low[0, 0] == padded.low[0, 1] and padded.high[0, 0] == padded.high[0, 1]


def test_iid_mode_covers_a_bernoulli_mean():
    rng = np.random.default_rng(2)
    draws = (rng.random((400, 80)) < 0.3).astype(float)
    seq = confidence_sequence(draws, np.ones_like(draws), grid=101, checkpoints=[20, 80])
    assert ((seq.low <= 0.3) & (0.3 <= seq.high)).all(axis=1).mean() >= 0.95
