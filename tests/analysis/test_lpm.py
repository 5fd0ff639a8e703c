"""The LPM against statsmodels' own cluster-robust OLS (same model, formula and cell basis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

from vismem.analysis.lpm import design, fit_lpm


def _probes(seed=1, constant_bank_cell=False):
    rng = np.random.default_rng(seed)
    rows = []
    for backend in ("g", "q"):
        for J in (5, 10):
            for s in range(7):
                for pid in range(25):
                    bank = int(rng.integers(1, 40) * J / 5)
                    for arch, base in (("A", 0.8), ("B", 0.6), ("C", 0.3)):
                        b = 12 if (constant_bank_cell and arch == "C" and backend == "q" and J == 10) else bank
                        rows.append({"backend": backend, "J": J, "seed": s, "architecture": arch, "bank_size": b,
                                     "correct": bool(rng.random() < base - 0.004 * b)})
    return pl.DataFrame(rows)


def _groups(pdf):
    return pd.factorize(pdf["backend"] + "_" + pdf["seed"].astype(str))[0]


def test_emms_and_ses_equal_statsmodels_formula_fit():
    df = _probes()
    res = fit_lpm(df)
    pdf = df.to_pandas()
    pdf["correct"] = pdf["correct"].astype(float)
    m = smf.ols("correct ~ C(architecture) * C(backend) * C(J) * bank_size", pdf).fit(
        cov_type="cluster", cov_kwds={"groups": _groups(pdf)})
    new = res.emm.select("architecture", "backend", "J").to_pandas()
    new["bank_size"] = res.mean_bank_size
    pred = m.get_prediction(new).summary_frame()
    np.testing.assert_allclose(res.emm["emm"].to_numpy(), pred["mean"].to_numpy(), atol=1e-10)
    np.testing.assert_allclose(res.emm["se"].to_numpy(), pred["mean_se"].to_numpy(), rtol=1e-8)
    assert res.n_clusters == 14 and res.n_obs == df.height
    assert res.mean_bank_size == pytest.approx(pdf["bank_size"].mean())


def test_params_and_covariance_equal_statsmodels_on_the_same_design():
    df = _probes(seed=2, constant_bank_cell=True)
    res = fit_lpm(df)
    cells = sorted(set(df.select("architecture", "backend", "J").iter_rows()))
    X, names = design(df, cells)
    assert names == res.columns
    pdf = df.to_pandas()
    m = sm.OLS(pdf["correct"].astype(float).to_numpy(), X).fit(cov_type="cluster",
                                                                 cov_kwds={"groups": _groups(pdf)})
    np.testing.assert_allclose(res.params, m.params, atol=1e-10)
    np.testing.assert_allclose(res.cov, m.cov_params(), rtol=1e-8, atol=1e-14)
    # The cell whose bank size never varies has no slope; its EMM is its mean.
    row = res.emm.filter((pl.col("architecture") == "C") & (pl.col("backend") == "q") & (pl.col("J") == 10))
    assert row["slope_identified"].to_list() == [False]
    cell = df.filter((pl.col("architecture") == "C") & (pl.col("backend") == "q") & (pl.col("J") == 10))
    assert row["emm"][0] == pytest.approx(cell["correct"].mean())


def test_hand_checked_exact_line_and_too_little_data():
    # correct = 1 exactly when bank < 5 -> within each cell an OLS line; EMM at the mean bank.
    rows = [{"backend": "b", "J": 5, "seed": s, "architecture": "A", "bank_size": b, "correct": b < 5}
            for s in range(4) for b in range(10)]
    res = fit_lpm(pl.DataFrame(rows))
    assert res.emm["emm"][0] == pytest.approx(0.5)  # symmetric design: mean of y at mean of x
    assert res.emm["slope"][0] == pytest.approx(-12.5 / 82.5)  # Sxy/Sxx for x=0..9, y=(x<5)
    assert fit_lpm(pl.DataFrame(rows).filter(pl.col("seed") == 0)) is None  # one cluster
    assert fit_lpm(pl.DataFrame(rows).head(0)) is None
