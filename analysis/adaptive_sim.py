"""Simulated adaptive studies: the stopping rule of :mod:`vismem.analysis.adaptive` run on many
probe tables with known exhaustive TSRs at once (pure, NumPy; the benchmark and ``vismem plan``).

A study is one block: ``A`` architectures' per-unit correct counts ``c`` ``(S, A, N)`` over the
same ``N`` units of sizes ``n``; each study draws its own seeded unit order, looks after every
batch and stops when every architecture's interval is narrow enough (or decided by the contrast).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from vismem.analysis.adaptive import Rule, checkpoints
from vismem.analysis.bootstrap import seeded_rng
from vismem.analysis.sequential import confidence_sequence


@dataclass(frozen=True)
class Outcome:
    """Per study: units and probes scored at the stop, each architecture's interval and the
    exhaustive truth, and the contrast's (``None`` without one)."""

    stop_units: np.ndarray      # (S,)
    probes_scored: np.ndarray   # (S,)
    probes_total: float
    low: np.ndarray             # (S, A)
    high: np.ndarray            # (S, A)
    truth: np.ndarray           # (S, A)
    contrast: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # low, high, truth (S,)

    def saving(self) -> float:
        """Probes an exhaustive run scores per probe the adaptive one scored (all studies)."""
        return float(self.probes_total * self.stop_units.size / self.probes_scored.sum())

    def coverage(self) -> float:
        """Share of (study, architecture) intervals at the stop that hold the exhaustive TSR."""
        return float(((self.low <= self.truth + 1e-12) & (self.truth <= self.high + 1e-12)).mean())

    def wrong_decisions(self) -> float:
        """Share of studies whose contrast was decided on the other side of the exhaustive one."""
        if self.contrast is None:
            return 0.0
        lo, hi, truth = self.contrast
        return float((((lo > 0) & (truth <= 0)) | ((hi < 0) & (truth >= 0))).mean())

    def sign_flips(self) -> float:
        """Share of studies whose contrast estimate at the stop has another sign than the exhaustive
        difference (decided or not: an undecided tie may flip without any error being made)."""
        if self.contrast is None:
            return 0.0
        lo, hi, truth = self.contrast
        return float((np.sign((lo + hi) / 2) != np.sign(truth)).mean())


def simulate(c: np.ndarray, sizes: np.ndarray, rule: Rule, *, seed: int = 0,
             contrast: tuple[int, int] | None = None, grid: int = 201) -> Outcome:
    """Run the stopping rule on every study of ``c`` (``(S, A, N)``; ``sizes`` ``(N,)``)."""
    S, A, N = c.shape
    sizes = np.asarray(sizes, dtype=np.float64)
    order = np.argsort(seeded_rng(seed, 7).random((S, N)), axis=1)
    cps = np.asarray(checkpoints(N, rule))
    n_ord = sizes[order]
    kw = dict(population=N, total_size=float(sizes.sum()), alpha=rule.alpha, grid=grid, checkpoints=cps,
              scale=float(sizes.max()))
    seqs = [confidence_sequence(np.take_along_axis(c[:, a], order, 1), n_ord, **kw) for a in range(A)]
    ok = np.stack([(s.high - s.low) <= rule.width for s in seqs])  # (A, S, C)
    cseq = None
    if contrast is not None:
        d = (c[:, contrast[0]] - c[:, contrast[1]]).astype(np.float64)
        cseq = confidence_sequence(np.take_along_axis(d, order, 1), n_ord, lower=-1.0, upper=1.0, **kw)
        decided = (cseq.low > 0) | (cseq.high < 0)
        ok[list(contrast)] |= decided[None]
    ok[:, :, -1] = True  # the last checkpoint is every unit: exhausted
    stop = np.argmax(ok.all(axis=0), axis=1)  # (S,) first checkpoint with every cell satisfied
    rows = np.arange(S)
    scored = np.cumsum(n_ord, axis=1)[rows, cps[stop] - 1]
    truth = c.sum(axis=2) / sizes.sum()
    low = np.stack([s.low[rows, stop] for s in seqs], axis=1)
    high = np.stack([s.high[rows, stop] for s in seqs], axis=1)
    con = None
    if cseq is not None:
        con = (cseq.low[rows, stop], cseq.high[rows, stop], truth[:, contrast[0]] - truth[:, contrast[1]])
    return Outcome(cps[stop], scored, float(sizes.sum()), low, high, truth, con)


def unit_sizes(chains: int, J: int, products: int) -> tuple[np.ndarray, np.ndarray]:
    """``(sizes, chain)`` of every exhaustive unit (chain, j = 1..J-1): ``products * j`` probes."""
    j = np.tile(np.arange(1, J), chains)
    return (products * j).astype(np.float64), np.repeat(np.arange(chains), J - 1)


def synthetic(studies: int, *, chains: int, J: int, products: int, p: Mapping[str, float] | Sequence[float],
              chain_sd: float = 0.1, unit_sd: float = 0.05, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(c, sizes)``: per-unit correct counts ``(S, A, N)`` of simulated exhaustive probe tables.

    Each probe succeeds with ``p[arch] + chain effect + unit effect`` (clipped; an architecture at 0
    stays at 0, as the verbal baselines), outcomes of one probe across architectures share one
    uniform (common random numbers, as :func:`vismem.analysis.synthetic.probes`)."""
    ps = np.asarray(list(p.values()) if isinstance(p, Mapping) else list(p), dtype=np.float64)
    sizes, chain = unit_sizes(chains, J, products)
    rng = seeded_rng(seed, 3)
    n_int = sizes.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(n_int)[:-1]])
    out = np.zeros((studies, ps.size, sizes.size))
    for s in range(studies):  # one study at a time: its probes, ~J^2 per chain
        eff = rng.normal(0, chain_sd, chains)[chain] + rng.normal(0, unit_sd, sizes.size)
        prob = np.where(ps[:, None] > 0, np.clip(ps[:, None] + eff[None, :], 0, 1), 0.0)  # (A, N)
        u = rng.random(int(n_int.sum()))
        hit = u[None, :] < np.repeat(prob, n_int, axis=1)
        out[s] = np.add.reduceat(hit, starts, axis=1)
    return out, sizes


def expected_fraction(*, chains: int, J: int, products: float, rule: Rule, p: float = 0.5, studies: int = 16,
                      seed: int = 0) -> float:
    """Mean share of a block's probes an adaptive run scores, for one architecture at TSR ``p``
    (0.5 is the widest interval: a conservative plan) on ``chains`` chains of ``J`` sessions."""
    c, sizes = synthetic(studies, chains=chains, J=J, products=max(1, round(products)), p=[p], seed=seed)
    out = simulate(c, sizes, Rule(width=rule.width, alpha=rule.alpha, batch=rule.batch, min_units=rule.min_units),
                   seed=seed, grid=101)
    return float(out.probes_scored.mean() / out.probes_total)


__all__ = ["Outcome", "simulate", "synthetic", "unit_sizes", "expected_fraction"]
