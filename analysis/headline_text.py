"""A run's headline numbers in one short line (``vismem runs``).

Takes the frames :func:`vismem.analysis.report.headline` returns -- the scoring of the end-of-run
summary and the report -- and picks per kind the number a reader looks for first: the best
architecture's TSR per (back-end, J), the best variant's Acc, the best variant's recall at the
largest k. Pure; no scoring of its own.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

__all__ = ["headline_line"]


def _pct(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}%"


def _ci(lo: Any, hi: Any) -> str:
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return ""
    return f" [{100 * lo:.1f}, {100 * hi:.1f}]"


def _best(df: pl.DataFrame, col: str) -> dict[str, Any] | None:
    rows = df.filter(pl.col(col).is_not_null() & pl.col(col).is_not_nan())
    return rows.sort([col, "variant"], descending=[True, False]).row(0, named=True) if rows.height else None


def headline_line(heads: dict[str, pl.DataFrame]) -> str:
    """``TSR dualmem 81.9% [70.1, 90.3] (toy J=4); Acc memshot k=10 75.0% [...]; recall@10 ...``.

    Empty when there is nothing to show.
    """
    parts: list[str] = []
    dmv = heads.get("dmv")
    if dmv is not None and dmv.height:
        # headline() sorts each (backend, J) block best first.
        for r in dmv.unique(subset=["backend", "J"], keep="first", maintain_order=True).iter_rows(named=True):
            parts.append(f"TSR {r['architecture']} {_pct(r['tsr'])}{_ci(r['low'], r['high'])} "
                         f"({r['backend']} J={r['J']})")
    ans = heads.get("memshot_answers")
    if ans is not None and ans.height:
        r = _best(ans, "acc") if "acc" in ans.columns else None
        if r is not None:
            parts.append(f"Acc {r['variant']} k={r['k']} {_pct(r['acc'])}{_ci(r['acc lo'], r['acc hi'])}")
        else:  # no judge: F1 is the answer metric
            r = _best(ans, "f1")
            if r is not None:
                parts.append(f"F1 {r['variant']} k={r['k']} {_pct(r['f1'])}{_ci(r['f1 lo'], r['f1 hi'])}")
    rec = heads.get("memshot_recall")
    if rec is not None and rec.height:
        k = rec["k"].max()
        r = _best(rec.filter(pl.col("k") == k), "recall")
        if r is not None:
            parts.append(f"recall@{k} {r['variant']} {_pct(r['recall'])}{_ci(r['recall lo'], r['recall hi'])}")
    return "; ".join(parts)
