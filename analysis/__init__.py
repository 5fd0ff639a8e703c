"""Scoring, statistics, figures and the report for both studies.

* :mod:`vismem.analysis.schemas` — result-table schemas, ``validate(df, kind)``, where results live.
* :mod:`vismem.analysis.bootstrap` — naive and cluster bootstrap CIs (vectorised, scipy-identical draws).
* :mod:`vismem.analysis.permutation` — exact paired cluster sign-permutation test.
* :mod:`vismem.analysis.lpm` — linear probability model, chain-clustered SEs, marginal means.
* :mod:`vismem.analysis.dmv`, :mod:`vismem.analysis.memshot` — the papers' tables as pure Polars functions.
* :mod:`vismem.analysis.lme_retrieval` — LongMemEval's own retrieval metrics (recall_any/all@k, NDCG@k).
* :mod:`vismem.analysis.figures`, :mod:`vismem.analysis.render`, :mod:`vismem.analysis.report` — figures and the report.

Submodules import their heavy dependencies themselves; importing ``analysis`` is cheap.
"""

from vismem.analysis.schemas import KINDS, SchemaError, result_key, validate, write_results

__all__ = ["KINDS", "SchemaError", "result_key", "validate", "write_results"]
