"""The report's headline box: each paper's central contrast, measured, the paper's number beside it.

DMV-Bench (per back-end and J), what the paper claims (§5, Table 2, Table 4): DualMem leads every
cell (M2A-lite the runner-up) -- *DualMem vs the best other architecture*; the fused code beats
either channel alone (alpha 0.75 above the visual- and verbal-only endpoints) -- *DualMem vs the
best single channel*; vision does the heavy lifting -- *visual-only vs verbal-only retrieval*; and
the gain from visual encoding, read against the verbal baselines -- *DualMem vs the best verbal
baseline*. MemShot (per dataset and k): memory shots against Text RAG -- evidence recall@k and,
when the run answered, Acc (Table 1; Table 3 for top-5).

Every row: A and B with 95% CIs over the items both were scored on, A - B with a paired bootstrap
CI (chains resampled for DMV-Bench, conversations for MemShot), and the paper's A, B and A - B
where its text states them, with the paper's setting named (the paper's back-end, J and table),
so a number from another setting is never passed off as this run's. Pure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from vismem.analysis import dmv
from vismem.analysis.bootstrap import cluster_ci
from vismem.analysis.compare import paired_delta
from vismem.analysis.dmv_paper import BACKENDS, paper_backend, quoted
from vismem.analysis.paper_order import DMV_FAMILIES

_BACKEND_NAMES = {"gemini-2.5-flash": "Gemini 2.5 Flash", "qwen2.5-vl-7b": "Qwen2.5-VL-7B"}
_VERBAL = DMV_FAMILIES[0][1]
SINGLE_CHANNEL = ("dualmem-vis", "dualmem-verb")

SCHEMA = {"study": pl.String, "contrast": pl.String, "setting": pl.String, "metric": pl.String,
          "A": pl.String, "A value": pl.Float64, "A lo": pl.Float64, "A hi": pl.Float64,
          "B": pl.String, "B value": pl.Float64, "B lo": pl.Float64, "B hi": pl.Float64,
          "A − B": pl.Float64, "A − B lo": pl.Float64, "A − B hi": pl.Float64, "paired n": pl.Int64,
          "paper A": pl.Float64, "paper B": pl.Float64, "paper A − B": pl.Float64, "paper setting": pl.String}

#: Columns shown x100 and the intervals shown inside their value's cell.
PERCENT = ("A value", "A lo", "A hi", "B value", "B lo", "B hi", "A − B", "A − B lo", "A − B hi", "paper A",
           "paper B", "paper A − B")
CI = {"A value": ("A lo", "A hi"), "B value": ("B lo", "B hi"), "A − B": ("A − B lo", "A − B hi")}


def _nan(v: float) -> float | None:
    return None if v is None or v != v else float(v)


def _paired_row(a_vals: np.ndarray, b_vals: np.ndarray, clusters: np.ndarray, *, n_resamples: int,
                seed: int) -> dict[str, Any]:
    """A, B (cluster CIs) and A - B (paired cluster bootstrap CI) over paired items; items are
    their own clusters when there is one cluster (one chain, one conversation), as the tables do."""
    if np.unique(clusters).size < 2:
        clusters = np.arange(len(clusters))
    labels, inv = np.unique(clusters, return_inverse=True)
    counts = np.bincount(inv, minlength=labels.size).astype(np.float64)
    out: dict[str, Any] = {}
    for side, vals in (("A", a_vals), ("B", b_vals)):
        ci = cluster_ci(np.bincount(inv, weights=vals, minlength=labels.size), counts, n_resamples=n_resamples,
                        seed=seed)
        out |= {f"{side} value": _nan(ci.estimate), f"{side} lo": _nan(ci.low), f"{side} hi": _nan(ci.high)}
    d, lo, hi = paired_delta(b_vals, a_vals, clusters, n_resamples=n_resamples, seed=seed)
    return out | {"A − B": _nan(d), "A − B lo": _nan(lo), "A − B hi": _nan(hi), "paired n": int(a_vals.size)}


def _paper_dmv(arch: str, backend: str, J: int, table: str) -> tuple[float | None, str | None]:
    """The paper's TSR for ``arch`` in ``table`` at the row's back-end and J -- or, for a back-end
    that is not the paper's (a stand-in), at J on the first paper back-end that states one."""
    q = quoted().filter((pl.col("metric") == "tsr") & (pl.col("table") == table) & (pl.col("architecture") == arch)
                        & (pl.col("J") == J))
    pb = paper_backend(backend)
    for b in ([pb] if pb else list(BACKENDS)):
        hit = q.filter(pl.col("backend") == b)
        if hit.height:
            return float(hit["value"][0]), f"{_BACKEND_NAMES.get(b, b)}, J={J} ({table.replace('table', 'Table ')})"
    return None, None


def _dmv_rows(probes: pl.DataFrame, cells: pl.DataFrame, opt: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    kw = dict(n_resamples=opt.n_resamples, seed=opt.seed)
    main = dmv.study(probes, "main")
    # An architecture's main-grid rows where it has them; a variant probed only in an ablation
    # study otherwise (one row per probe: a variant listed in two studies repeats its probes).
    in_main = main["architecture"].unique().to_list()
    everything = pl.concat([main, probes.filter((pl.col("study") != "main") & ~pl.col("architecture").is_in(in_main))],
                           how="vertical_relaxed").unique([*dmv.PROBE_KEY, "architecture"], keep="first",
                                                          maintain_order=True)
    main = dmv.common_probes(main) if opt.common_probes else main
    for (backend, J), cell in cells.group_by(["backend", "J"], maintain_order=True):
        ranked = cell.sort(["tsr", "architecture"], descending=[True, False])["architecture"].to_list()
        others = [a for a in ranked if a != "dualmem"]
        verbal = [a for a in ranked if a in _VERBAL]
        block = everything.filter((pl.col("backend") == backend) & (pl.col("J") == J))
        arch_tsr = {a: t for a, t in block.group_by("architecture").agg(pl.col("correct").mean()).iter_rows()}
        single = sorted([a for a in SINGLE_CHANNEL if a in arch_tsr], key=lambda a: (-arch_tsr[a], a))
        plan = []
        if "dualmem" in ranked and others:
            plan.append(("DualMem vs the best other architecture (Table 2)", "dualmem", others[0], "table2", main))
        if "dualmem" in arch_tsr and single:
            plan.append(("DualMem (alpha 0.75) vs the best single channel (Table 4)", "dualmem", single[0], "table4",
                         everything))
        if all(a in arch_tsr for a in SINGLE_CHANNEL):
            plan.append(("visual-only vs verbal-only retrieval (Table 4)", *SINGLE_CHANNEL, "table4", everything))
        if "dualmem" in ranked and verbal:
            plan.append(("DualMem vs the best verbal baseline (Table 2)", "dualmem", verbal[0], "table2", main))
        for contrast, a, b, table, src in plan:
            row = _dmv_pair(src.filter((pl.col("backend") == backend) & (pl.col("J") == J)), a, b, **kw)
            if row is None:
                continue
            pa, sa = _paper_dmv(a, backend, J, table)
            pb_, sb = _paper_dmv(b, backend, J, table)
            same = pa is not None and pb_ is not None and sa == sb  # a difference only within one setting
            setting = sa if same or not sb else (sb if not sa else f"A: {sa}; B: {sb}")
            rows.append({"study": "DMV-Bench", "contrast": contrast, "setting": f"{backend}, J={J}", "metric": "TSR",
                         "A": a, "B": b, **row, "paper A": pa, "paper B": pb_,
                         "paper A − B": pa - pb_ if same else None, "paper setting": setting})
    return rows


def _dmv_pair(block: pl.DataFrame, a: str, b: str, *, n_resamples: int, seed: int) -> dict[str, Any] | None:
    key = ["seed", "probe_id"]
    pa = block.filter(pl.col("architecture") == a).unique(key).select(*key, pl.col("correct").cast(pl.Float64).alias("a"))
    pb = block.filter(pl.col("architecture") == b).unique(key).select(*key, pl.col("correct").cast(pl.Float64).alias("b"))
    pairs = pa.join(pb, on=key, how="inner").sort(key)
    if pairs.height == 0:
        return None
    return _paired_row(pairs["a"].to_numpy(), pairs["b"].to_numpy(), pairs["seed"].to_numpy(),
                       n_resamples=n_resamples, seed=seed)


def _memshot_pairs(df: pl.DataFrame, value: str, cell: list[str], opt: Any, metric: str,
                   paper: Any = None) -> list[dict[str, Any]]:
    """MemShot vs Text RAG per ``cell`` (dataset, k, ...): the items both answered, paired."""
    item = ["conversation_id", "question_id"]
    cell = [c for c in cell if c in df.columns]
    df = df.filter(pl.col(value).is_not_null())
    label = (pl.col("variant") + pl.when(pl.col("embedder").is_not_null()).then(" [" + pl.col("embedder") + "]")
             .otherwise(pl.lit(""))) if "embedder" in df.columns else pl.col("variant")
    df = df.with_columns(label.alias("_label"))
    rows = []
    for keys, g in df.group_by(cell, maintain_order=True):
        ctx = dict(zip(cell, keys))
        shots = g.filter(pl.col("variant") == "memshot")
        rag = g.filter(pl.col("variant") == "text-rag")
        for a_label in sorted(shots["_label"].unique().to_list()):
            for b_label in sorted(rag["_label"].unique().to_list()):
                pa = shots.filter(pl.col("_label") == a_label).select(*item, pl.col(value).cast(pl.Float64).alias("a"))
                pb = rag.filter(pl.col("_label") == b_label).select(*item, pl.col(value).cast(pl.Float64).alias("b"))
                pairs = pa.unique(item).join(pb.unique(item), on=item, how="inner").sort(item)
                if not pairs.height:
                    continue
                row = _paired_row(pairs["a"].to_numpy(), pairs["b"].to_numpy(), pairs["conversation_id"].to_numpy(),
                                  n_resamples=opt.n_resamples, seed=opt.seed)
                emb = {side: (g.filter(pl.col("_label") == lab)["embedder"].drop_nulls().first()
                              if "embedder" in g.columns else None) for side, lab in (("A", a_label), ("B", b_label))}
                p_a, p_b, p_set, *p_d = paper(ctx, emb) if paper else (None, None, None)
                diff = p_a - p_b if p_a is not None and p_b is not None else (p_d[0] if p_d else None)
                setting = ", ".join(f"{k}={v}" if k in ("k", "judge") else str(v) for k, v in ctx.items() if v is not None)
                rows.append({"study": "MemShot", "contrast": "memory shots vs Text RAG", "setting": setting,
                             "metric": metric, "A": a_label, "B": b_label, **row, "paper A": p_a, "paper B": p_b,
                             "paper A − B": diff, "paper setting": p_set})
    return rows


def _gaps(ctx: dict[str, Any], emb: dict[str, Any], *, judged: bool) -> list[str]:
    """How the cell's setting (both sides' retrievers; model and judge for Acc) differs from the
    paper's (:func:`vismem.analysis.memshot_paper_cols.setting_gaps`)."""
    from vismem.analysis.memshot_paper_cols import setting_gaps

    gaps: list[str] = []
    for side in ("A", "B"):
        row = {"embedder": emb.get(side), "model": ctx.get("model"), "judge": ctx.get("judge")}
        gaps += [g for g in setting_gaps(row) if g not in gaps and (judged or g.startswith("retriever"))]
    return gaps


def _not_paper(gaps: list[str]) -> tuple[Any, ...]:
    return None, None, "none: not the paper's setting (" + "; ".join(gaps) + ")"


def _paper_hit(ctx: dict[str, Any], emb: dict[str, Any]) -> tuple[Any, ...]:
    """§5.3 on Fig. 4a: MemShot retrieves the evidence about 5 points more often than Text RAG at
    the same budget (top-10; LoCoMo, Qwen3-VL-Embedding-8B retriever) -- a difference only, and
    only where both sides retrieved with the paper's retriever."""
    if ctx.get("dataset") != "locomo" or ctx.get("k") != 10:
        return None, None, None
    if gaps := _gaps(ctx, emb, judged=False):
        return _not_paper(gaps)
    return None, None, "≈ +5 points: LoCoMo, top-10, Qwen3-VL-Embedding-8B retriever (§5.3, Fig. 4a)", 0.05


def _paper_acc(ctx: dict[str, Any], emb: dict[str, Any]) -> tuple[float | None, float | None, str | None]:
    """The paper's Overall Acc of MemShot and Text RAG for the run's answering model (LoCoMo:
    Table 1 at top-10, Table 3 at top-5), only where the run had the paper's setting (its
    retriever and judge, a paper backbone); otherwise none, and the setting column says why."""
    from vismem.analysis.memshot_paper import quoted_rows
    from vismem.analysis.memshot_paper_cols import paper_backbone, quoted_by_k

    if ctx.get("dataset") != "locomo":
        return None, None, None
    if gaps := _gaps(ctx, emb, judged=True):
        return _not_paper(gaps)
    backbone = paper_backbone(ctx.get("model"))
    if ctx.get("k") == 10:
        t1 = quoted_rows().filter((pl.col("table") == "Table 1") & (pl.col("category") == "Overall")
                                  & (pl.col("backbone") == backbone))
        acc = dict(t1.select("method", "acc").iter_rows())
        return acc.get("MemShot"), acc.get("Text RAG"), f"{backbone}, LoCoMo, top-10 (Table 1)"
    t3 = quoted_by_k().filter((pl.col("table") == "Table 3") & (pl.col("backbone") == backbone)
                              & (pl.col("k") == ctx.get("k")))
    acc = dict(t3.select("variant", "acc").iter_rows())
    if "memshot" in acc and "text-rag" in acc:
        return acc["memshot"], acc["text-rag"], f"{backbone}, LoCoMo, top-{ctx.get('k')} (Table 3)"
    return None, None, None


def headline_table(tables: dict[str, pl.DataFrame], opt: Any) -> pl.DataFrame:
    """One row per measured contrast (columns :data:`SCHEMA`); empty when the run has none."""
    rows: list[dict[str, Any]] = []
    probes = tables.get("probes")
    if probes is not None and probes.height:
        cells = dmv.tsr_cells(probes, common=opt.common_probes, n_resamples=opt.n_resamples, seed=opt.seed)
        if cells.height:
            rows += _dmv_rows(probes, cells, opt)
    rec = tables.get("memshot_recall")
    if rec is not None and rec.height:
        rows += _memshot_pairs(rec, "recall", ["dataset", "k"], opt, "evidence recall@k")
        if "hit" in rec.columns:
            rows += _memshot_pairs(rec, "hit", ["dataset", "k"], opt, "evidence hit@k", paper=_paper_hit)
    ans = tables.get("memshot_answers")
    if ans is not None and ans.height:
        from vismem.analysis.memshot import with_outcome

        scored = with_outcome(ans.filter(~pl.col("category").is_in(list(opt.exclude_categories))))
        rows += _memshot_pairs(scored, "judge_label", ["dataset", "model", "judge", "k"], opt, "Acc",
                               paper=_paper_acc)
    return pl.DataFrame(rows, schema=SCHEMA) if rows else pl.DataFrame(schema=SCHEMA)


__all__ = ["CI", "PERCENT", "SCHEMA", "headline_table"]
