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
             contrast: tuple[int, int] | None = None, grid: int = 201, first_pass: float = 0.3) -> Outcome:
    """Run the stopping rule on every study of ``c`` (``(S, A, N)``; ``sizes`` ``(N,)``).

    Most studies stop early: the first pass runs the sequences over the first ``first_pass``
    share of the draws only, and the studies still open are run again over all of them (the
    same draws, so the same intervals: a sequence's value at a look depends only on the draws
    before it)."""
    S, A, N = c.shape
    sizes = np.asarray(sizes, dtype=np.float64)
    order = np.argsort(seeded_rng(seed, 7).random((S, N)), axis=1)
    cps = np.asarray(checkpoints(N, rule))
    part = cps[cps <= max(int(first_pass * N), int(cps[0]))]
    res = _looks(c, sizes, order, rule, contrast, grid, part, last_is_end=part.size == cps.size)
    todo = np.flatnonzero(res["stop"] < 0)
    if todo.size:
        rest = _looks(c[todo], sizes, order[todo], rule, contrast, grid, cps, last_is_end=True)
        for k in res:
            res[k][todo] = rest[k]
    rows = np.arange(S)
    truth = c.sum(axis=2) / sizes.sum()
    con = None
    if contrast is not None:
        con = (res["clow"], res["chigh"], truth[:, contrast[0]] - truth[:, contrast[1]])
    return Outcome(res["units"], np.cumsum(sizes[order], axis=1)[rows, res["units"] - 1], float(sizes.sum()),
                   res["low"], res["high"], truth, con)


def _looks(c: np.ndarray, sizes: np.ndarray, order: np.ndarray, rule: Rule, contrast: tuple[int, int] | None,
           grid: int, cps: np.ndarray, *, last_is_end: bool) -> dict[str, np.ndarray]:
    """Each study's first look (of ``cps``) with every cell satisfied: its units, intervals and
    the contrast's; ``stop`` -1 where no look satisfied it (and the last look is not the end)."""
    S, A, N = c.shape
    n_ord = sizes[order]
    kw = dict(population=N, total_size=float(sizes.sum()), alpha=rule.alpha, grid=grid, checkpoints=cps,
              scale=float(sizes.max()))
    seqs = [confidence_sequence(np.take_along_axis(c[:, a], order, 1)[:, :cps[-1]], n_ord[:, :cps[-1]], **kw)
            for a in range(A)]
    ok = np.stack([(s.high - s.low) <= rule.width for s in seqs])  # (A, S, C)
    clo = chi = np.zeros((S, cps.size))
    if contrast is not None:
        d = (c[:, contrast[0]] - c[:, contrast[1]]).astype(np.float64)
        cseq = confidence_sequence(np.take_along_axis(d, order, 1)[:, :cps[-1]], n_ord[:, :cps[-1]], lower=-1.0,
                                   upper=1.0, **kw)
        clo, chi = cseq.low, cseq.high
        ok[list(contrast)] |= ((clo > 0) | (chi < 0))[None]
    if last_is_end:
        ok[:, :, -1] = True  # the last look is every unit: exhausted
    good = ok.all(axis=0)
    stop = np.where(good.any(axis=1), np.argmax(good, axis=1), -1)
    at, rows = np.maximum(stop, 0), np.arange(S)
    return {"stop": stop, "units": cps[at], "low": np.stack([s.low[rows, at] for s in seqs], axis=1),
            "high": np.stack([s.high[rows, at] for s in seqs], axis=1), "clow": clo[rows, at], "chigh": chi[rows, at]}


def unit_sizes(chains: int, J: int, products: int) -> tuple[np.ndarray, np.ndarray]:
    """``(sizes, chain)`` of every exhaustive unit (chain, j = 1..J-1): ``products * j`` probes."""
    j = np.tile(np.arange(1, J), chains)
    return (products * j).astype(np.float64), np.repeat(np.arange(chains), J - 1)


def synthetic(studies: int, *, chains: int, J: int, products: int, p: Mapping[str, float] | Sequence[float],
              chain_sd: float = 0.1, unit_sd: float = 0.05, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(c, sizes)``: per-unit correct counts ``(S, A, N)`` of simulated exhaustive probe tables.

    Each probe succeeds with ``p[arch] + chain effect + unit effect`` (clipped; an architecture at 0
    stays at 0, as the verbal baselines): the chain effect is shared by the architectures, the
    unit effect each architecture's own (so two at one ``p`` still differ unit by unit), and
    outcomes of one probe across architectures share one uniform (common random numbers, as
    :func:`vismem.analysis.synthetic.probes`)."""
    ps = np.asarray(list(p.values()) if isinstance(p, Mapping) else list(p), dtype=np.float64)
    sizes, chain = unit_sizes(chains, J, products)
    rng = seeded_rng(seed, 3)
    n_int = sizes.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(n_int)[:-1]])
    out = np.zeros((studies, ps.size, sizes.size))
    for s in range(studies):  # one study at a time: its probes, ~J^2 per chain
        eff = rng.normal(0, chain_sd, chains)[chain][None, :] + rng.normal(0, unit_sd, (ps.size, sizes.size))
        prob = np.where(ps[:, None] > 0, np.clip(ps[:, None] + eff, 0, 1), 0.0)  # (A, N)
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
