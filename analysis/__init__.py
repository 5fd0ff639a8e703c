"""Scoring, statistics, figures and the report for both studies.

* :mod:`analysis.schemas` — result-table schemas, ``validate(df, kind)``, where results live.
* :mod:`analysis.bootstrap` — naive and cluster bootstrap CIs (vectorised, scipy-identical draws).
* :mod:`analysis.permutation` — exact paired cluster sign-permutation test.
* :mod:`analysis.lpm` — linear probability model, chain-clustered SEs, marginal means.
* :mod:`analysis.dmv`, :mod:`analysis.memshot` — the papers' tables as pure Polars functions.
* :mod:`analysis.figures`, :mod:`analysis.render`, :mod:`analysis.report` — figures and the report.

Submodules import their heavy dependencies themselves; importing ``analysis`` is cheap.
"""

from analysis.schemas import KINDS, SchemaError, result_key, validate, write_results

__all__ = ["KINDS", "SchemaError", "result_key", "validate", "write_results"]
