"""The MemShot paper's numbers in ``paper`` columns beside measured rows (quoted, not measured).

Tables 1, 2 and 4 (one Overall row per backbone and method, at the paper's top-10) from
:mod:`vismem.analysis.memshot_paper`; Tables 3 and 5 (top-5 and top-10 per variant) transcribed
here. A row gets a paper number only when it ran the paper's setting (§4): a paper backbone
as answering model (never a stand-in), Qwen3-VL-Embedding-8B as retriever, GLM-5 as judge, the
table's k and dataset, and the paper's row for its variant; every other row's cells stay null and
its ``paper note`` says which part of the setting differed. Pure.
"""

from __future__ import annotations

import io
from typing import Any

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

#: Our variant names of the paper's Table 1/2/4 methods. The MemOCR-style baseline
#: (``session-summary-shots``) is not MemOCR's memory, so it never takes MemOCR's number.
METHODS = {"memshot": "MemShot", "text-rag": "Text RAG"}
#: The paper's retrieval budget for Tables 1, 2 and 4 (§4 implementation details: top-10).
PAPER_K = 10
#: The paper's setting besides backbone, k and dataset (§4): the shared retriever and the judge.
PAPER_RETRIEVER = "Qwen3-VL-Embedding-8B"
PAPER_JUDGE = "GLM-5"


def quoted_by_k() -> pl.DataFrame:
    """Tables 3 and 5 long: table, backbone, variant, k, acc, f1 (proportions), quoted."""
    df = pl.read_csv(io.StringIO(_BY_K), schema_overrides={"k": pl.Int64, "acc": pl.Float64, "f1": pl.Float64})
    return df.with_columns(pl.col("acc") / 100, pl.col("f1") / 100)


def _stand_in(name: str) -> bool:
    return "stand-in" in name or "tiny" in name or name.startswith("scripted")


def paper_backbone(model: str | None) -> str | None:
    """The paper's Qwen3-VL backbone a measured answering model is (``qwen3-vl-8b``,
    ``Qwen/Qwen3-VL-8B-Instruct``); None for any other model or a stand-in."""
    low = str(model or "").lower()
    if not low or _stand_in(low):
        return None
    for b in ("Qwen3-VL-2B-Instruct", "Qwen3-VL-8B-Instruct", "Qwen3-VL-32B-Instruct"):
        if b.lower().replace("-instruct", "") in low:
            return b
    return None


def is_paper_retriever(embedder: str | None) -> bool:
    """Whether a measured row's retriever (its ``embedder`` label) is the paper's Qwen3-VL-Embedding-8B."""
    low = str(embedder or "").lower()
    return "qwen3-vl-embedding" in low and "8b" in low and not _stand_in(low)


def is_paper_judge(judge: str | None) -> bool:
    """Whether a measured row's judge (its ``judge`` label, e.g. ``openai:glm-5``) is the paper's GLM-5."""
    low = str(judge or "").lower()
    return "glm-5" in low and not _stand_in(low)


def setting_gaps(row: dict[str, Any], *, k: int | None = None) -> list[str]:
    """How a measured row's setting differs from the paper's (empty: it is the paper's): answering
    model, retriever, judge and -- when ``k`` is given -- the retrieval budget. A column the row
    does not carry is a gap too (``not recorded``): a paper number needs the setting shown."""
    gaps = []
    model, emb, judge = row.get("model"), row.get("embedder"), row.get("judge")
    if paper_backbone(model) is None:
        gaps.append(f"answering model {model or 'not recorded'} is not a paper backbone")
    if not is_paper_retriever(emb):
        gaps.append(f"retriever {emb or 'not recorded'}, not {PAPER_RETRIEVER}")
    if not is_paper_judge(judge):
        gaps.append(f"judge {judge or 'not recorded'}, not {PAPER_JUDGE}")
    if k is not None and row.get("k") != k:
        gaps.append(f"top-{row.get('k')}, the paper's is top-{k}")
    return gaps


def _note(gaps: list[str]) -> str:
    return "not the paper's setting: " + "; ".join(gaps)


def with_paper_overall(t: pl.DataFrame, dataset: str) -> pl.DataFrame:
    """A Tables 1/2/4 layout frame with ``paper Overall Acc`` / ``paper Overall F1``: the paper's
    Overall row for the row's backbone and method, only where the row ran the paper's setting
    (:func:`setting_gaps` at top-10); ``paper note`` says why a row's cells are empty."""
    if not t.height or not {"variant", "model", "k"} <= set(t.columns):
        return t
    q = quoted_rows().filter((pl.col("dataset") == dataset) & (pl.col("category") == "Overall"))
    look = {(r["backbone"], r["method"]): (r["acc"], r["f1"]) for r in q.iter_rows(named=True)}
    vals, notes = [], []
    for row in t.iter_rows(named=True):
        method = METHODS.get(str(row["variant"]))
        gaps = setting_gaps(row, k=PAPER_K)
        hit = look.get((paper_backbone(row["model"]), method))
        vals.append(None if gaps else hit)
        notes.append(_note(gaps) if gaps else None if hit else
                     f"the paper reports no {paper_backbone(row['model'])} {method or row['variant']} row on {dataset}")
    return t.with_columns(pl.Series("paper Overall Acc", [v[0] if v else None for v in vals], dtype=pl.Float64),
                          pl.Series("paper Overall F1", [v[1] if v else None for v in vals], dtype=pl.Float64),
                          pl.Series("paper note", notes, dtype=pl.String))


def with_paper_by_k(t: pl.DataFrame, table: str) -> pl.DataFrame:
    """A Tables 3/5 layout frame (``Top-<k> Acc`` / ``Top-<k> F1``) with ``paper Top-<k> Acc`` /
    ``paper Top-<k> F1`` for rows the paper's ``table`` reports (LoCoMo, its backbone, the
    variant at the paper's height) and that ran its setting (:func:`setting_gaps`); ``paper note``
    says why a row's cells are empty. Unchanged when the frame has no column the table reports."""
    if not t.height or not {"variant", "model"} <= set(t.columns):
        return t
    q = quoted_by_k().filter(pl.col("table") == table)
    look = {(r["backbone"], r["variant"], r["k"]): (r["acc"], r["f1"]) for r in q.iter_rows(named=True)}
    ks = [k for k in sorted({k for (_, _, k) in look}) if f"Top-{k} Acc" in t.columns]
    if not ks:
        return t
    keys, notes = [], []
    for row in t.iter_rows(named=True):
        gaps = setting_gaps(row)
        if row.get("dataset", "locomo") != "locomo":
            gaps.append(f"dataset {row.get('dataset')}, {table} is LoCoMo")
        h = row.get("max_height")
        # A row run at another height than the paper's row (a height sweep of one variant) gets none.
        if h is not None and h != HEIGHTS.get(str(row["variant"]), -1):
            gaps.append(f"max_height {h}, the paper's {row['variant']} row is {HEIGHTS.get(str(row['variant']))}")
        known = any((paper_backbone(row["model"]), str(row["variant"]), k) in look for k in ks)
        keys.append(None if gaps else (paper_backbone(row["model"]), str(row["variant"])))
        notes.append(_note(gaps) if gaps else None if known else f"{table} has no {row['variant']} row for this model")
    cols = [pl.Series("paper note", notes, dtype=pl.String)]
    for k in ks:
        hits = [look.get((*key, k)) if key else None for key in keys]
        cols += [pl.Series(f"paper Top-{k} Acc", [h[0] if h else None for h in hits], dtype=pl.Float64),
                 pl.Series(f"paper Top-{k} F1", [h[1] if h else None for h in hits], dtype=pl.Float64)]
    return t.with_columns(cols[1:] + cols[:1])


__all__ = ["METHODS", "PAPER_JUDGE", "PAPER_K", "PAPER_RETRIEVER", "is_paper_judge", "is_paper_retriever",
           "paper_backbone", "quoted_by_k", "setting_gaps", "with_paper_by_k", "with_paper_overall"]
