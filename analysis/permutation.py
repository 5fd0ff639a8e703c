"""Exact paired cluster sign-permutation test (DMV-Bench Table 10).

For common probes ``i`` of two architectures, ``d_i = correct_A - correct_B``. Under H0 the
sign of each *chain's* differences is exchangeable, so all ``2^K`` joint sign flips of the K
chains are equally likely. With chain sums ``D_k`` and ``N`` common probes,
``dbar_perm = sum_k s_k D_k / N``; the two-sided p-value is
``Pr(|dbar_perm| >= |dbar_obs|)`` over all ``2^K`` assignments (the identity included).

Speed (exact, K = 25 in milliseconds): meet in the middle. Split the chains into halves of
sizes ``a`` and ``b``; enumerate the ``2^a`` and ``2^b`` signed half-sums; sort one side; for
each left sum ``x`` count right sums ``y`` with ``x + y >= T`` or ``x + y <= -T`` by binary
search (``T = |sum_k D_k|``). ``O(2^(K/2) log 2^(K/2))`` instead of ``O(2^K)``.

Ties: with 0/1 outcomes the chain sums are integers and everything is exact integer
arithmetic. Otherwise (e.g. F1 differences) sums are compared with a relative tolerance
``tol`` so that assignments equal to the observed statistic up to rounding count as ties
(i.e. as "at least as extreme"), as exact rational arithmetic would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Exact enumeration up to this many chains (2^(K/2) sums per side: 2^22 = 4M at K = 44).
MAX_EXACT_CHAINS = 44


@dataclass(frozen=True)
class PermutationResult:
    """Result of the paired cluster sign-permutation test.

    ``d_bar`` is the mean per-probe difference (A - B) as a proportion; ``p_value`` two-sided;
    ``n_extreme`` of ``n_assignments`` sign assignments are at least as extreme.
    """

    d_bar: float
    p_value: float
    n_chains: int
    n_probes: int
    n_extreme: int
    n_assignments: int
    exact: bool = True
    note: str = ""

    @property
    def min_p(self) -> float:
        """Smallest attainable two-sided p with this many chains (2 / 2^K)."""
        return 2.0 / 2**self.n_chains if self.n_chains else float("nan")


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """All ``2^m`` sums ``sum_k s_k v_k`` for ``s in {+1,-1}^m`` (vectorised, bit patterns)."""
    m = values.size
    if m == 0:
        return np.zeros(1, dtype=values.dtype)
    codes = np.arange(2**m, dtype=np.int64)[:, None]
    signs = 1 - 2 * ((codes >> np.arange(m, dtype=np.int64)) & 1)
    return (signs.astype(values.dtype) * values[None, :]).sum(axis=1)


def _as_integers(values: np.ndarray) -> np.ndarray | None:
    """``values`` as int64 when they are all integral (exact arithmetic), else None."""
    if np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.bool_):
        return values.astype(np.int64)
    if np.all(np.isfinite(values)) and np.all(values == np.round(values)) and np.abs(values).max(initial=0) < 2**52:
        return np.round(values).astype(np.int64)
    return None


def count_extreme(chain_sums: np.ndarray, *, tol: float = 1e-9) -> tuple[int, int]:
    """``(n_extreme, 2^K)``: sign assignments with ``|sum s_k D_k| >= |sum D_k|``.

    Exact integer counting when the sums are integral; otherwise a relative tolerance ``tol``
    (of the sum of ``|D_k|``) decides ties.
    """
    d = np.asarray(chain_sums)
    k = d.size
    if k > MAX_EXACT_CHAINS:
        raise ValueError(f"exact test enumerates 2^K assignments; K={k} exceeds {MAX_EXACT_CHAINS}")
    total = 2**k
    ints = _as_integers(d)
    if ints is not None:
        target = abs(int(ints.sum()))
        if target == 0:
            return total, total
        vals = ints
        lo_thr, hi_thr = -target, target  # count y <= -T - x and y >= T - x
        eps = 0
    else:
        vals = d.astype(np.float64)
        scale = float(np.abs(vals).sum())
        eps = tol * max(scale, 1.0)
        target = abs(float(vals.sum()))
        if target <= eps:
            return total, total
        lo_thr, hi_thr = -target, target
    half = k // 2
    left = _signed_sums(vals[:half])
    right = np.sort(_signed_sums(vals[half:]))
    # y >= T - x (minus tolerance) ...
    n_hi = right.size - np.searchsorted(right, hi_thr - left - eps, side="left")
    # ... or y <= -T - x (plus tolerance); disjoint from the first set because T > eps.
    n_lo = np.searchsorted(right, lo_thr - left + eps, side="right")
    return int(n_hi.sum() + n_lo.sum()), total


def sign_permutation_test(diffs: Any, chains: Any, *, tol: float = 1e-9, seed: int = 0) -> PermutationResult:
    """Exact paired cluster sign-permutation test from per-probe differences and chain ids.

    ``diffs[i]`` = outcome of A minus outcome of B on common probe ``i`` (e.g. in {-1, 0, 1});
    ``chains[i]`` = the chain (cluster) of probe ``i``. All probes of a chain flip together.
    """
    d = np.asarray(diffs)
    c = np.asarray(chains)
    if d.shape != c.shape:
        raise ValueError(f"diffs and chains must have the same length ({d.size} != {c.size})")
    if d.size == 0:
        return PermutationResult(float("nan"), float("nan"), 0, 0, 0, 0, True, "no common probes")
    _, inv = np.unique(c, return_inverse=True)
    integral = _as_integers(d)
    if integral is not None:
        sums = np.zeros(inv.max() + 1, dtype=np.int64)
        np.add.at(sums, inv, integral)
    else:
        sums = np.bincount(inv, weights=d.astype(np.float64))
    return chain_sum_test(sums, n_probes=d.size, tol=tol, seed=seed)


def chain_sum_test(chain_sums: Any, *, n_probes: int, tol: float = 1e-9, seed: int = 0) -> PermutationResult:
    """The test from per-chain difference sums ``D_k`` and the number of common probes."""
    sums = np.asarray(chain_sums)
    k = int(sums.size)
    if k == 0 or n_probes == 0:
        return PermutationResult(float("nan"), float("nan"), k, int(n_probes), 0, 0, True, "no common probes")
    d_bar = float(sums.sum()) / n_probes
    if k > MAX_EXACT_CHAINS:
        return _monte_carlo(sums, n_probes, d_bar, tol=tol, seed=seed)  # run seed: only beyond exact reach
    n_extreme, total = count_extreme(sums, tol=tol)
    note = ""
    if k == 1:
        note = "single chain: smallest attainable p is 1"
    elif n_extreme == total and d_bar == 0:
        note = "no difference between the architectures"
    return PermutationResult(d_bar, n_extreme / total, k, int(n_probes), n_extreme, total, True, note)


def _monte_carlo(sums: np.ndarray, n_probes: int, d_bar: float, *, tol: float, n_draws: int = 200_000,
                 seed: int = 0) -> PermutationResult:
    """Beyond exact reach (K > MAX_EXACT_CHAINS): seeded random sign assignments, identity included."""
    vals = sums.astype(np.float64)
    target = abs(float(vals.sum()))
    eps = tol * max(float(np.abs(vals).sum()), 1.0)
    rng = np.random.default_rng(seed)
    hits = 1  # the observed assignment itself (keeps p > 0, as an exact test would)
    for start in range(0, n_draws, 10_000):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(min(10_000, n_draws - start), vals.size))
        hits += int((np.abs(signs @ vals) >= target - eps).sum())
    return PermutationResult(d_bar, hits / (n_draws + 1), int(vals.size), int(n_probes), hits, n_draws + 1, False,
                             f"K={vals.size} > {MAX_EXACT_CHAINS}: Monte Carlo p from {n_draws:,} seeded sign draws")


def brute_force_p(chain_sums: Any) -> float:
    """Reference: enumerate all 2^K assignments one by one with exact rationals (slow; K <= 16)."""
    import itertools
    from fractions import Fraction

    raw = chain_sums.tolist() if isinstance(chain_sums, np.ndarray) else list(chain_sums)
    vals = [Fraction(v).limit_denominator(10**9) if isinstance(v, float) else v for v in raw]
    obs = abs(sum(vals))
    hits = 0
    n = 0
    for signs in itertools.product((1, -1), repeat=len(vals)):
        n += 1
        if abs(sum(s * v for s, v in zip(signs, vals))) >= obs:
            hits += 1
    return hits / n
