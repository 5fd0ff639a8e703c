"""The MemShot paper's numbers in ``paper`` columns beside measured rows (quoted, not measured).

Tables 1, 2 and 4 (one Overall row per backbone and method, at the paper's top-10) from
:mod:`vismem.analysis.memshot_paper`; Tables 3 and 5 (top-5 and top-10 per variant) transcribed
here. A row gets a paper number only when its answering model is one of the paper's backbones
(never a stand-in) and its variant is the paper's row; every other cell stays null. Pure.
"""

from __future__ import annotations

import io

import polars as pl

from vismem.analysis.memshot_paper import quoted_rows

#: Tables 3 and 5 (LoCoMo), Acc and F1 (percent) at top-5 and top-10, per backbone and the row's
#: variant: Table 3's Full Session w/o Rendering is Text RAG (``text-rag``); Table 5's fixed
#: length 768 is MemShot itself. Transcribed from the paper's text.
_BY_K = """table,backbone,variant,k,acc,f1
Table 3,Qwen3-VL-2B-Instruct,full-session,5,58.83,44.12
Table 3,Qwen3-VL-2B-Instruct,full-session,10,59.55,44.64
Table 3,Qwen3-VL-2B-Instruct,text-rag,5,54.61,42.10
Table 3,Qwen3-VL-2B-Instruct,text-rag,10,54.81,42.70
Table 3,Qwen3-VL-2B-Instruct,memshot,5,64.22,48.67
Table 3,Qwen3-VL-2B-Instruct,memshot,10,64.48,48.64
Table 3,Qwen3-VL-2B-Instruct,no-header,5,63.25,48.16
Table 3,Qwen3-VL-2B-Instruct,no-header,10,63.83,47.37
Table 3,Qwen3-VL-2B-Instruct,no-render,5,59.42,44.76
Table 3,Qwen3-VL-2B-Instruct,no-render,10,62.47,44.21
Table 3,Qwen3-VL-8B-Instruct,full-session,5,70.26,52.93
Table 3,Qwen3-VL-8B-Instruct,full-session,10,74.87,54.11
Table 3,Qwen3-VL-8B-Instruct,text-rag,5,67.86,51.89
Table 3,Qwen3-VL-8B-Instruct,text-rag,10,70.39,53.28
Table 3,Qwen3-VL-8B-Instruct,memshot,5,72.73,55.11
Table 3,Qwen3-VL-8B-Instruct,memshot,10,75.13,56.46
Table 3,Qwen3-VL-8B-Instruct,no-header,5,70.71,55.78
Table 3,Qwen3-VL-8B-Instruct,no-header,10,74.22,55.54
Table 3,Qwen3-VL-8B-Instruct,no-render,5,67.47,52.52
Table 3,Qwen3-VL-8B-Instruct,no-render,10,71.62,56.01
Table 5,Qwen3-VL-8B-Instruct,full-session,5,70.26,52.93
Table 5,Qwen3-VL-8B-Instruct,full-session,10,74.87,54.11
Table 5,Qwen3-VL-8B-Instruct,h1024,5,70.78,54.87
Table 5,Qwen3-VL-8B-Instruct,h1024,10,73.25,56.18
Table 5,Qwen3-VL-8B-Instruct,memshot,5,72.73,55.03
Table 5,Qwen3-VL-8B-Instruct,memshot,10,75.13,56.46
Table 5,Qwen3-VL-8B-Instruct,h512,5,70.19,54.66
Table 5,Qwen3-VL-8B-Instruct,h512,10,72.34,54.93
"""

#: The maximum rendering height of the paper's Tables 3/5 rows (None: one unit per session).
HEIGHTS = {"memshot": 768, "no-header": 768, "no-render": 768, "h512": 512, "h1024": 1024, "full-session": None,
           "text-rag": None}

#: Our variant names of the paper's Table 1/2/4 methods (a stand-in never takes a paper number).
METHODS = {"memshot": "MemShot", "text-rag": "Text RAG", "memocr": "MemOCR"}
#: The paper's retrieval budget for Tables 1, 2 and 4 (§4 implementation details: top-10).
PAPER_K = 10


def quoted_by_k() -> pl.DataFrame:
    """Tables 3 and 5 long: table, backbone, variant, k, acc, f1 (proportions), quoted."""
    df = pl.read_csv(io.StringIO(_BY_K), schema_overrides={"k": pl.Int64, "acc": pl.Float64, "f1": pl.Float64})
    return df.with_columns(pl.col("acc") / 100, pl.col("f1") / 100)


def paper_backbone(model: str | None) -> str | None:
    """The paper's Qwen3-VL backbone a measured answering model is (``qwen3-vl-8b``,
    ``Qwen/Qwen3-VL-8B-Instruct``); None for any other model or a stand-in."""
    low = str(model or "").lower()
    if not low or "stand-in" in low or "tiny" in low:
        return None
    for b in ("Qwen3-VL-2B-Instruct", "Qwen3-VL-8B-Instruct", "Qwen3-VL-32B-Instruct"):
        if b.lower().replace("-instruct", "") in low:
            return b
    return None


def with_paper_overall(t: pl.DataFrame, dataset: str) -> pl.DataFrame:
    """A Tables 1/2/4 layout frame with ``paper Overall Acc`` / ``paper Overall F1``: the paper's
    Overall row for the row's backbone and method at its top-10 (null elsewhere); unchanged when
    no row has one."""
    if not t.height or not {"variant", "model", "k"} <= set(t.columns):
        return t
    q = quoted_rows().filter((pl.col("dataset") == dataset) & (pl.col("category") == "Overall"))
    look = {(r["backbone"], r["method"]): (r["acc"], r["f1"]) for r in q.iter_rows(named=True)}
    vals = [look.get((paper_backbone(m), METHODS.get(str(v)))) if k == PAPER_K else None
            for m, v, k in zip(t["model"].to_list(), t["variant"].to_list(), t["k"].to_list())]
    if not any(vals):
        return t
    return t.with_columns(pl.Series("paper Overall Acc", [v[0] if v else None for v in vals], dtype=pl.Float64),
                          pl.Series("paper Overall F1", [v[1] if v else None for v in vals], dtype=pl.Float64))


def with_paper_by_k(t: pl.DataFrame, table: str) -> pl.DataFrame:
    """A Tables 3/5 layout frame (``Top-<k> Acc`` / ``Top-<k> F1``) with ``paper Top-<k> Acc`` /
    ``paper Top-<k> F1`` for rows the paper's ``table`` reports (LoCoMo, its backbone, the
    variant); unchanged when no row has one."""
    if not t.height or not {"variant", "model"} <= set(t.columns):
        return t
    q = quoted_by_k().filter(pl.col("table") == table)
    look = {(r["backbone"], r["variant"], r["k"]): (r["acc"], r["f1"]) for r in q.iter_rows(named=True)}
    ds = t["dataset"].to_list() if "dataset" in t.columns else ["locomo"] * t.height
    hs = t["max_height"].to_list() if "max_height" in t.columns else [None] * t.height
    # A row run at another height than the paper's row (a height sweep of one variant) gets none.
    keys = [(paper_backbone(m), str(v)) if d == "locomo" and (h is None or h == HEIGHTS.get(str(v), -1))
            else (None, None) for m, v, d, h in zip(t["model"].to_list(), t["variant"].to_list(), ds, hs)]
    cols = []
    for k in sorted({k for (_, _, k) in look}):
        if f"Top-{k} Acc" not in t.columns:
            continue
        hits = [look.get((b, v, k)) for b, v in keys]
        if any(hits):
            cols += [pl.Series(f"paper Top-{k} Acc", [h[0] if h else None for h in hits], dtype=pl.Float64),
                     pl.Series(f"paper Top-{k} F1", [h[1] if h else None for h in hits], dtype=pl.Float64)]
    return t.with_columns(cols) if cols else t


__all__ = ["METHODS", "PAPER_K", "paper_backbone", "quoted_by_k", "with_paper_by_k", "with_paper_overall"]
