"""Linear probability model with chain-clustered errors and estimated marginal means.

``correct ~ architecture x backend x J x bank_size`` (all interactions), OLS, standard errors
clustered by chain (CR1, statsmodels' default small-sample correction
``G/(G-1) * (N-1)/(N-P)``), and estimated marginal means (EMMs) of every
(architecture, backend, J) cell at the sample-mean bank size.

The fully interacted model is, up to reparameterisation, one intercept and one bank-size slope
per cell, so it is fitted in that cell basis: the normal equations are block diagonal (2x2 per
cell, instant for 10^6 probes) while the clustered sandwich still couples cells through
chains. Fitted values, EMMs and their cluster-robust standard errors are invariant to the
parameterisation, so they equal statsmodels' formula fit (tested against
``statsmodels.formula.api.ols(...).fit(cov_type="cluster")``).

A cell whose bank size never varies has no identifiable slope: it gets an intercept only and
its EMM is the cell mean (``slope_identified=False``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

CELL = ("architecture", "backend", "J")


@dataclass(frozen=True)
class LPMResult:
    """Coefficients in the cell basis, their clustered covariance, and the EMM table."""

    emm: pl.DataFrame          # architecture, backend, J, n, emm, se, low, high, slope, slope_identified
    params: np.ndarray
    cov: np.ndarray
    mean_bank_size: float
    n_obs: int
    n_clusters: int
    columns: list[str]


def _cell_index(df: pl.DataFrame, cells: list[tuple]) -> np.ndarray:
    lut = pl.DataFrame({"architecture": [c[0] for c in cells], "backend": [c[1] for c in cells],
                        "J": [c[2] for c in cells], "__cell": np.arange(len(cells), dtype=np.int64)},
                       schema_overrides={"J": df.schema["J"]})
    return df.join(lut, on=list(CELL), how="left", maintain_order="left")["__cell"].to_numpy()


def _layout(cell_idx: np.ndarray, bank: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Column of each cell's intercept and slope (-1: slope not identified)."""
    lo = np.full(n_cells, np.inf)
    hi = np.full(n_cells, -np.inf)
    np.minimum.at(lo, cell_idx, bank)
    np.maximum.at(hi, cell_idx, bank)
    varies = hi > lo
    ic = np.zeros(n_cells, dtype=np.int64)
    sc = np.full(n_cells, -1, dtype=np.int64)
    col = 0
    for i in range(n_cells):
        ic[i] = col
        col += 1
        if varies[i]:
            sc[i] = col
            col += 1
    return ic, sc, [col]


def design(df: pl.DataFrame, cells: list[tuple]) -> tuple[np.ndarray, list[str]]:
    """Dense cell-basis design matrix (for tests and small data): indicator and indicator x bank."""
    cell_idx = _cell_index(df, cells)
    bank = df["bank_size"].cast(pl.Float64).to_numpy()
    ic, sc, (p,) = _layout(cell_idx, bank, len(cells))
    X = np.zeros((df.height, p))
    rows = np.arange(df.height)
    X[rows, ic[cell_idx]] = 1.0
    has = sc[cell_idx] >= 0
    X[rows[has], sc[cell_idx][has]] = bank[has]
    names = []
    for i, c in enumerate(cells):
        names.append(f"{c}:intercept")
        if sc[i] >= 0:
            names.append(f"{c}:bank_size")
    return X, names


def fit_lpm(probes: pl.DataFrame, *, cluster: tuple[str, ...] = ("backend", "seed")) -> LPMResult | None:
    """Fit the LPM on main-grid probes; None when there is too little data (< 2 clusters).

    Chains are clustered by ``(backend, seed)``: a seed's J=5 chain is the prefix of its J=15
    chain, so their probes are dependent and must share a cluster.
    """
    df = probes.select(*CELL, "bank_size", "correct", *[c for c in cluster if c not in CELL]).drop_nulls()
    if df.height == 0:
        return None
    groups_key = df.select(pl.struct(list(cluster)).rank("dense").alias("g"))["g"].to_numpy()
    n_clusters = int(np.unique(groups_key).size)
    cells = sorted(set(df.select(list(CELL)).iter_rows()), key=lambda t: (str(t[0]), str(t[1]), t[2]))
    mean_bank = float(df["bank_size"].cast(pl.Float64).mean())
    y = df["correct"].cast(pl.Float64).to_numpy()
    bank = df["bank_size"].cast(pl.Float64).to_numpy()
    cell_idx = _cell_index(df, cells)
    ic, sc, (p,) = _layout(cell_idx, bank, len(cells))
    if n_clusters < 2 or df.height <= p:
        return None
    # Block-diagonal normal equations: per cell sums of 1, b, b^2, y, b*y.
    nc = len(cells)
    s1, sb, sbb = (np.bincount(cell_idx, w, minlength=nc) for w in (None, bank, bank * bank))
    sy, sby = (np.bincount(cell_idx, w, minlength=nc) for w in (y, bank * y))
    xtx = np.zeros((p, p))
    xty = np.zeros(p)
    xtx[ic, ic] = s1
    xty[ic] = sy
    has = sc >= 0
    xtx[ic[has], sc[has]] = sb[has]
    xtx[sc[has], ic[has]] = sb[has]
    xtx[sc[has], sc[has]] = sbb[has]
    xty[sc[has]] = sby[has]
    xtx_inv = np.linalg.pinv(xtx)
    params = xtx_inv @ xty
    slope_obs = sc[cell_idx]
    with_slope = slope_obs >= 0
    fitted = params[ic[cell_idx]] + np.where(with_slope, params[np.maximum(slope_obs, 0)] * bank, 0.0)
    resid = y - fitted
    _, g = np.unique(groups_key, return_inverse=True)
    scores = np.zeros((n_clusters, p))
    np.add.at(scores, (g, ic[cell_idx]), resid)
    np.add.at(scores, (g[with_slope], slope_obs[with_slope]), resid[with_slope] * bank[with_slope])
    cov = xtx_inv @ (scores.T @ scores) @ xtx_inv
    cov *= (n_clusters / (n_clusters - 1)) * ((df.height - 1) / (df.height - p))
    names = []
    for i, c in enumerate(cells):
        names.append(f"{c}:intercept")
        if sc[i] >= 0:
            names.append(f"{c}:bank_size")
    varies = has
    # EMM of each cell at the overall mean bank size: x = e_intercept + mean_bank * e_slope.
    rows = []
    pos = {n: i for i, n in enumerate(names)}
    counts = df.group_by(list(CELL)).len()
    count_of = {(r[0], r[1], r[2]): r[3] for r in counts.iter_rows()}
    for i, c in enumerate(cells):
        x = np.zeros(len(names))
        x[pos[f"{c}:intercept"]] = 1.0
        slope = float("nan")
        if varies[i]:
            x[pos[f"{c}:bank_size"]] = mean_bank
            slope = float(params[pos[f"{c}:bank_size"]])
        est = float(x @ params)
        se = float(np.sqrt(max(x @ cov @ x, 0.0)))
        rows.append({"architecture": c[0], "backend": c[1], "J": c[2], "n": int(count_of[c]), "emm": est, "se": se,
                     "low": est - 1.959963984540054 * se, "high": est + 1.959963984540054 * se,
                     "slope": slope, "slope_identified": bool(varies[i])})
    emm = pl.DataFrame(rows, schema={"architecture": pl.String, "backend": pl.String, "J": pl.Int64, "n": pl.Int64,
                                     "emm": pl.Float64, "se": pl.Float64, "low": pl.Float64, "high": pl.Float64,
                                     "slope": pl.Float64, "slope_identified": pl.Boolean})
    return LPMResult(emm, params, cov, mean_bank, int(df.height), n_clusters, names)
