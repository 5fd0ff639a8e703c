"""Anytime-valid confidence sequences for a probe rate sampled in random order (pure, NumPy).

Adaptive probing (``probes.mode: adaptive``, ``docs/adaptive-probing.md``) scores a cell's probe
*units* -- all probes of one (chain, recall session) -- in a seeded uniformly random order and
stops early. The quantity it must bound is the rate the exhaustive run would report,

    theta* = sum_u c_u / sum_u n_u          (c_u: sum of a probe value over unit u, n_u: its probes)

over the cell's N eligible units (a ratio: units differ in size). For a candidate theta the
unit residual ``x_u(theta) = (c_u - theta n_u) / n_max`` lies in ``[lo - theta, hi - theta]`` when
each probe value lies in ``[lo, hi]`` (TSR: [0, 1]; a paired difference: [-1, 1]) and has
population total 0 exactly when theta = theta*. Drawn without replacement, the t-th draw's
conditional mean under that null is ``m_t = -sum_{i<t} x_i / (N - t + 1)`` (Waudby-Smith &
Ramdas 2020, "Confidence sequences for sampling without replacement"); the hedged capital

    K_t(theta) = 1/2 prod_i (1 + l+_i (x_i - m_i)) + 1/2 prod_i (1 - l-_i (x_i - m_i))

with predictable bets ``l+-`` (the predictable plug-in of Waudby-Smith & Ramdas 2024, JRSS-B,
"Estimating means of bounded random variables by betting", truncated so no factor can reach 0) is
a nonnegative martingale starting at 1, so by Ville's inequality ``P(exists t: K_t(theta*) >=
1/alpha) <= alpha``. The confidence sequence is every grid theta never rejected; its hull, padded
by one grid step, is reported. The hull is then cut to the rates the units not yet drawn can still
reach (exact, given the population's probe count). The guarantee is
design-based: the randomness is the seeded draw order, so it holds for any fixed probe table --
within-chain correlation included -- and it holds at every stopping time, so a cell may stop
whenever its interval is narrow enough. ``population=None`` drops the without-replacement
correction: the interval is then for the mean of i.i.d. draws (chains drawn from a population
of exchangeable chains), as a super-population statement.

Vectorised over a leading axis of independent sequences (simulated studies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: Bets are capped at this share of the largest stake that keeps capital nonnegative (WSR's c).
BET_CAP = 0.75


@dataclass(frozen=True)
class ConfidenceSequence:
    """Interval bounds of a confidence sequence at each checkpoint: ``low``/``high`` ``(S, C)``."""

    low: np.ndarray
    high: np.ndarray
    checkpoints: np.ndarray


def _grid(lower: float, upper: float, grid: int | Sequence[float]) -> np.ndarray:
    if isinstance(grid, int):
        return np.linspace(lower, upper, grid)
    return np.asarray(grid, dtype=np.float64)


def confidence_sequence(values: np.ndarray, sizes: np.ndarray, *, lower: float = 0.0, upper: float = 1.0,
                        population: int | None = None, total_size: np.ndarray | float | None = None,
                        alpha: float = 0.05, grid: int | Sequence[float] = 401,
                        checkpoints: Sequence[int] | None = None, scale: float | None = None) -> ConfidenceSequence:
    """Betting confidence sequence for ``sum c / sum n`` over draws in random order.

    Args:
        values: ``(S, T)`` (or ``(T,)``) per-draw sums ``c`` of a probe value in ``[lower, upper]``.
        sizes: same shape, probes per draw ``n`` (0 pads a shorter sequence; such draws change nothing).
        population: the number of draws in the finite population (sampling without replacement,
            target = the population's rate); None: i.i.d. draws (target = the mean rate).
        total_size: ``sum n`` over the whole population (per sequence or one value); with it, a
            rate the remaining units cannot reach is rejected outright.
        grid: candidate rates (a count over ``[lower, upper]`` or the values).
        checkpoints: draw counts after which the interval is recorded (default: every draw).
        scale: an upper bound on every ``n`` of the population (default: the largest given).
    Returns the hull of the never-rejected grid, one grid step wider on each side, at each
    checkpoint (``(S, C)``).
    """
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = np.atleast_2d(np.asarray(sizes, dtype=np.float64))
    S, T = v.shape
    theta = _grid(lower, upper, grid)
    step = float(np.max(np.diff(theta))) if theta.size > 1 else 0.0
    scale = float(scale if scale is not None else max(float(n.max(initial=0.0)), 1.0))
    cps = np.arange(1, T + 1) if checkpoints is None else np.asarray(sorted(set(checkpoints)), dtype=np.int64)
    lo_b, hi_b = lower - theta, upper - theta  # bounds of x(theta), (G,)
    log_p = np.zeros((S, theta.size))
    sum_d = np.zeros((S, theta.size))
    rejected = np.zeros((S, theta.size), dtype=bool)
    sum_x = np.zeros((S, theta.size))
    seen_c, seen_n = np.zeros(S), np.zeros(S)
    total = None if total_size is None else np.broadcast_to(np.asarray(total_size, dtype=np.float64), (S,))
    # Prior variance of x, WSR's 1/4 for [0, 1] data, shrunk by the mean unit's share of the
    # scale (sizes are known before any outcome, so this is no peek): x of a unit of n probes
    # spans at most n / scale of the range.
    share = float(total.mean()) / population if total is not None and population else scale
    sum_sq = np.full((S, theta.size), (share / scale * (upper - lower) / 2) ** 2)
    thr = np.log(1 / alpha)
    out_lo, out_hi = np.full((S, cps.size), np.nan), np.full((S, cps.size), np.nan)
    drawn = np.zeros(S)  # real draws so far (padding excluded)
    ci = 0
    for t in range(T):
        real = n[:, t] > 0
        x = (v[:, t, None] - theta * n[:, t, None]) / scale
        m = (-sum_x / np.maximum(population - drawn, 1)[:, None]) if population is not None else 0.0
        k = drawn[:, None] + 1
        drift = sum_d / k  # predictable mean of past x - m (shrunk towards 0)
        var = sum_sq / k
        # aGRAPA (WSR 2024, sec. 5.3): the Kelly-like bet drift / (var + drift^2), one signed process,
        # truncated so 1 + bet (x - m) >= 1 - BET_CAP whatever the next unit holds.
        lam = np.clip(drift / (var + drift ** 2), -BET_CAP / np.maximum(hi_b - m, 1e-12),
                      BET_CAP / np.maximum(m - lo_b, 1e-12))
        d = np.where(real[:, None], x - m, 0.0)
        log_p += np.log1p(lam * d)
        rejected |= log_p >= thr
        sum_sq += np.where(real[:, None], (d - drift) ** 2, 0.0)
        sum_d += d
        sum_x += np.where(real[:, None], x, 0.0)
        drawn += real
        seen_c += np.where(real, v[:, t], 0.0)
        seen_n += n[:, t]
        while ci < cps.size and cps[ci] == t + 1:
            lo, hi = _hull(theta, rejected, step, lower, upper, log_p)
            if total is not None:  # and never outside the rates the remaining units can still reach
                f_lo = (seen_c + lower * (total - seen_n)) / np.maximum(total, 1e-12)
                f_hi = (seen_c + upper * (total - seen_n)) / np.maximum(total, 1e-12)
                lo, hi = np.minimum(np.maximum(lo, f_lo), f_hi), np.maximum(np.minimum(hi, f_hi), f_lo)
            out_lo[:, ci], out_hi[:, ci] = lo, hi
            ci += 1
    return ConfidenceSequence(out_lo, out_hi, cps)


def _hull(theta: np.ndarray, rejected: np.ndarray, step: float, lower: float, upper: float,
          log_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The never-rejected grid's hull, one step wider each side; where every grid value is
    rejected (the rate falls between two grid values), the least-rejected value +- one step."""
    keep = ~rejected
    any_kept = keep.any(axis=1)
    first = np.argmax(keep, axis=1)
    last = theta.size - 1 - np.argmax(keep[:, ::-1], axis=1)
    best = np.argmin(log_k, axis=1)
    first = np.where(any_kept, first, best)
    last = np.where(any_kept, last, best)
    return np.maximum(theta[first] - step, lower), np.minimum(theta[last] + step, upper)


def interval(values: np.ndarray, sizes: np.ndarray, **kw: object) -> tuple[float, float]:
    """The confidence sequence's interval after the last of one sequence's draws."""
    seq = confidence_sequence(np.asarray(values)[None, :], np.asarray(sizes)[None, :],
                              checkpoints=[len(values)], **kw)  # type: ignore[arg-type]
    return float(seq.low[0, -1]), float(seq.high[0, -1])


__all__ = ["BET_CAP", "confidence_sequence", "interval", "ConfidenceSequence"]
