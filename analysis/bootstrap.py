"""Bootstrap confidence intervals: naive (probe-level iid) and cluster (chain-level), vectorised.

Both follow the paper's protocol (DMV-Bench Tables 8-9): ``n_resamples`` resamples (10,000),
the 2.5/97.5 percentiles of the resampled statistic (numpy's linear interpolation, as
``scipy.stats.bootstrap(method="percentile")`` uses).

Resamples are drawn exactly as ``scipy.stats.bootstrap`` draws them -- ``rng.integers(0, n,
(n_resamples, n))`` -- so given the same generator state the intervals are identical to
scipy's (tested). The fast paths only change how the statistic is computed, not the draws:

* cluster: chain draws become a ``(B, K)`` count matrix ``W`` (how often each chain was drawn);
  the TSR of every resample of every cell sharing those chains is ``(W @ S) / (W @ N)`` for
  per-chain success sums ``S`` and probe counts ``N`` (one matrix product for all cells).
* naive, binary outcomes: the number of successes in an iid resample of ``n`` probes with
  ``c`` successes is Binomial(n, c/n) -- exactly the resampling distribution -- so
  :func:`naive_ci` draws binomials (O(B) instead of O(B n)). ``method="index"`` draws the
  indices instead and matches scipy draw for draw.

Generators: every function takes ``seed`` (int or ``numpy.random.Generator``); an int seeds a
fresh generator, so results depend only on the inputs and the seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

#: The paper's number of bootstrap resamples.
N_RESAMPLES = 10_000
#: Percentiles of the 95% interval.
PERCENTILES = (2.5, 97.5)


def seeded_rng(seed: int | np.random.Generator | None, *stream: int) -> np.random.Generator:
    """The generator of ``(seed, stream...)``: a given generator as it is, else a fresh one."""
    if isinstance(seed, np.random.Generator):
        return seed
    # SeedSequence keeps streams for different (seed, stream...) independent.
    return np.random.default_rng(np.random.SeedSequence([int(seed or 0), *map(int, stream)]))


@dataclass(frozen=True)
class CI:
    """A point estimate with a percentile interval (all as proportions in [0, 1]).

    ``note`` explains degenerate cases (empty cell, a single chain, all correct/wrong);
    ``low``/``high`` are NaN when the interval is undefined.
    """

    estimate: float
    low: float
    high: float
    n: int
    note: str = ""


def percentile_interval(stats: np.ndarray, percentiles: tuple[float, float] = PERCENTILES,
                        axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentiles of bootstrap statistics along ``axis`` (linear interpolation, like scipy)."""
    lo, hi = np.percentile(stats, percentiles, axis=axis)
    return lo, hi


def resample_indices(n: int, n_resamples: int, seed: int | np.random.Generator | None) -> np.ndarray:
    """``(n_resamples, n)`` indices drawn with replacement -- scipy.stats.bootstrap's draws."""
    return seeded_rng(seed).integers(0, n, (n_resamples, n))


def resample_counts(n: int, n_resamples: int, seed: int | np.random.Generator | None) -> np.ndarray:
    """``(n_resamples, n)`` multinomial counts: how often each unit was drawn per resample.

    Built from :func:`resample_indices` (so identical to scipy's resamples), as a count matrix.
    """
    idx = resample_indices(n, n_resamples, seed)
    flat = idx + (np.arange(n_resamples, dtype=np.int64) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)


def _degenerate_note(successes: float, n: float) -> str:
    if n == 0:
        return "no probes"
    if successes == n:
        return "all correct: interval degenerate"
    if successes == 0:
        return "all wrong: interval degenerate"
    return ""


def naive_ci(correct: np.ndarray | None = None, *, successes: int | None = None, n: int | None = None,
             n_resamples: int = N_RESAMPLES, seed: int | np.random.Generator | None = 0,
             method: Literal["binomial", "index"] = "binomial") -> CI:
    """Naive iid bootstrap CI of a success rate (probe-level resampling).

    Give the 0/1 outcomes ``correct``, or (binomial method only) ``successes`` and ``n``.
    ``method="index"`` resamples probe indices like scipy (O(B n) memory; use for small n or
    to reproduce scipy exactly); ``"binomial"`` draws the same distribution in O(B).
    """
    if correct is not None:
        arr = np.asarray(correct, dtype=np.float64)
        n, successes = int(arr.size), int(arr.sum())
    elif successes is None or n is None:
        raise ValueError("naive_ci needs `correct` or both `successes` and `n`")
    if n == 0:
        return CI(float("nan"), float("nan"), float("nan"), 0, "no probes")
    est = successes / n
    rng = seeded_rng(seed)
    if method == "index":
        if correct is None:
            raise ValueError("method='index' needs the outcomes `correct`")
        stats = arr[resample_indices(n, n_resamples, rng)].mean(axis=1)
    elif method == "binomial":
        stats = rng.binomial(n, est, size=n_resamples) / n
    else:
        raise ValueError(f"unknown method {method!r}; use 'binomial' or 'index'")
    lo, hi = percentile_interval(stats)
    return CI(est, float(lo), float(hi), n, _degenerate_note(successes, n))


def naive_ci_many(successes: np.ndarray, counts: np.ndarray, *, n_resamples: int = N_RESAMPLES,
                  seed: int | np.random.Generator | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Binomial-method naive CIs for many cells at once: arrays of (low, high); NaN where n == 0."""
    s = np.asarray(successes, dtype=np.float64)
    n = np.asarray(counts, dtype=np.int64)
    p = np.divide(s, n, out=np.zeros_like(s), where=n > 0)
    draws = seeded_rng(seed).binomial(np.maximum(n, 1)[None, :], p[None, :], size=(n_resamples, n.size))
    stats = draws / np.maximum(n, 1)[None, :]
    lo, hi = percentile_interval(stats, axis=0)
    lo = np.where(n > 0, lo, np.nan)
    hi = np.where(n > 0, hi, np.nan)
    return lo, hi


def cluster_stats(sums: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Bootstrap ratio statistics ``(W @ S) / (W @ N)``.

    ``sums``/``counts``: ``(K,)`` or ``(K, C)`` per-chain successes and probes for ``C`` cells
    sharing the same ``K`` chains; ``weights``: ``(B, K)`` resample counts. Returns ``(B,)`` or
    ``(B, C)``; a resample that drew only probe-less chains gives NaN.
    """
    num = weights @ np.asarray(sums, dtype=np.float64)
    den = weights @ np.asarray(counts, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def cluster_ci(sums: np.ndarray, counts: np.ndarray, *, n_resamples: int = N_RESAMPLES,
               seed: int | np.random.Generator | None = 0, weights: np.ndarray | None = None) -> CI:
    """Cluster bootstrap CI of a success rate: resample chains with replacement.

    ``sums[k]``/``counts[k]``: successes and probes of chain ``k``. Each resample concatenates
    the probes of the drawn chains and recomputes the rate (the paper's protocol). With one
    chain the interval is undefined (NaN, noted); with no probes everything is NaN.
    """
    s = np.asarray(sums, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    total_n, total_s = float(n.sum()), float(s.sum())
    if total_n == 0:
        return CI(float("nan"), float("nan"), float("nan"), 0, "no probes")
    est = total_s / total_n
    k = s.size
    if k < 2:
        return CI(est, float("nan"), float("nan"), int(total_n), "single chain: cluster CI undefined")
    w = resample_counts(k, n_resamples, seed) if weights is None else weights
    stats = cluster_stats(s, n, w)
    stats = stats[~np.isnan(stats)]
    lo, hi = percentile_interval(stats)
    return CI(est, float(lo), float(hi), int(total_n), _degenerate_note(total_s, total_n))


def cluster_ci_many(sums: np.ndarray, counts: np.ndarray, *, n_resamples: int = N_RESAMPLES,
                    seed: int | np.random.Generator | None = 0,
                    weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cluster CIs for ``C`` cells sharing ``K`` chains: ``(K, C)`` inputs, one matrix product.

    A cell whose chain has no probes gets weight 0 for it (count 0); resamples drawing only
    probe-less chains are ignored for that cell. Returns (low, high) arrays of length ``C``.
    """
    s = np.asarray(sums, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    k = s.shape[0]
    w = resample_counts(k, n_resamples, seed) if weights is None else weights
    stats = cluster_stats(s, n, w)
    if np.isnan(stats).any():
        lo, hi = np.nanpercentile(stats, PERCENTILES, axis=0)
    else:
        lo, hi = percentile_interval(stats, axis=0)
    chains_with_probes = (n > 0).sum(axis=0)
    undefined = chains_with_probes < 2
    return np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)
