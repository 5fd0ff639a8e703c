"""Bootstrap CIs against scipy.stats.bootstrap on identical resamples, and degenerate cells."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from vismem.analysis.bootstrap import (cluster_ci, cluster_ci_many, naive_ci, naive_ci_many, resample_counts,
                                resample_indices)


def _scipy_ci(data, statistic, seed, n_resamples, paired=False):
    res = stats.bootstrap(data, statistic, n_resamples=n_resamples, method="percentile", vectorized=True,
                          paired=paired, rng=np.random.default_rng(seed), batch=None)
    return res.confidence_interval.low, res.confidence_interval.high


@pytest.mark.parametrize("seed", [0, 7])
def test_naive_index_method_equals_scipy_percentile_bootstrap(seed):
    x = (np.random.default_rng(100 + seed).random(300) < 0.63).astype(float)
    ours = naive_ci(x, n_resamples=2000, seed=np.random.default_rng(seed), method="index")
    lo, hi = _scipy_ci((x,), np.mean, seed, 2000)
    assert ours.low == pytest.approx(lo, abs=1e-12) and ours.high == pytest.approx(hi, abs=1e-12)
    assert ours.estimate == pytest.approx(x.mean())


def test_cluster_ci_equals_scipy_paired_bootstrap_of_chain_ratio():
    rng = np.random.default_rng(3)
    counts = rng.integers(5, 40, 25).astype(float)
    sums = np.floor(counts * rng.uniform(0.2, 0.9, 25))

    def ratio(s, n, axis=-1):
        return s.sum(axis=axis) / n.sum(axis=axis)

    ours = cluster_ci(sums, counts, n_resamples=3000, seed=np.random.default_rng(11))
    lo, hi = _scipy_ci((sums, counts), ratio, 11, 3000, paired=True)
    assert ours.low == pytest.approx(lo, abs=1e-12) and ours.high == pytest.approx(hi, abs=1e-12)
    assert ours.estimate == pytest.approx(sums.sum() / counts.sum())


def test_count_matrix_is_the_index_draws():
    idx = resample_indices(6, 50, 4)
    w = resample_counts(6, 50, 4)
    assert w.shape == (50, 6) and (w.sum(axis=1) == 6).all()
    for b in range(50):
        assert (np.bincount(idx[b], minlength=6) == w[b]).all()


def test_many_cells_in_one_product_equal_cell_by_cell():
    rng = np.random.default_rng(5)
    n = rng.integers(1, 30, (12, 4)).astype(float)
    s = np.floor(n * rng.random((12, 4)))
    w = resample_counts(12, 1000, 9)
    lo, hi = cluster_ci_many(s, n, weights=w)
    for c in range(4):
        one = cluster_ci(s[:, c], n[:, c], weights=w)
        assert lo[c] == pytest.approx(one.low) and hi[c] == pytest.approx(one.high)


def test_binomial_shortcut_matches_index_resampling_in_distribution():
    x = (np.random.default_rng(1).random(2000) < 0.3).astype(float)
    a = naive_ci(x, n_resamples=20000, seed=1, method="binomial")
    b = naive_ci(x, n_resamples=20000, seed=2, method="index")
    # Same resampling distribution: the percentiles agree to Monte Carlo error (se ~ 0.001).
    assert abs(a.low - b.low) < 0.004 and abs(a.high - b.high) < 0.004
    lo, hi = naive_ci_many(np.array([x.sum(), 0]), np.array([x.size, 0]), n_resamples=20000, seed=1)
    assert abs(lo[0] - b.low) < 0.004 and math.isnan(lo[1]) and math.isnan(hi[1])


def test_hand_checked_two_chain_cluster_bootstrap():
    # Chains: 1/1 and 0/3. Resamples are {c0,c0}: 1.0, {c1,c1}: 0.0, {c0,c1}: 0.25 (prob 1/2).
    w = resample_counts(2, 4000, 0)
    ci = cluster_ci([1, 0], [1, 3], weights=w)
    assert ci.estimate == 0.25 and ci.low == 0.0 and ci.high == 1.0


def test_degenerate_cells_give_clear_results():
    empty = naive_ci(np.array([]))
    assert math.isnan(empty.estimate) and empty.note == "no probes"
    assert math.isnan(cluster_ci([], []).estimate)
    single = cluster_ci([3], [5])
    assert single.estimate == 0.6 and math.isnan(single.low) and "single chain" in single.note
    allc = cluster_ci([4, 5], [4, 5], n_resamples=500)
    assert (allc.low, allc.high) == (1.0, 1.0) and "all correct" in allc.note
    allw = naive_ci(np.zeros(10), n_resamples=500)
    assert (allw.low, allw.high) == (0.0, 0.0) and "all wrong" in allw.note
    with pytest.raises(ValueError, match="needs"):
        naive_ci()
