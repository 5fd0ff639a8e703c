"""The report's sections: DMV-Bench and MemShot tables and figures, every rate with its 95% CI.

Each builder takes validated frames and :class:`ReportOptions` and returns sections (pure).
Rows link to the viewers (``Links``): DMV-Bench rows to the trajectory viewer filtered to the
row's back-end / architecture, MemShot rows to the sample viewer filtered to the row's variant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from urllib.parse import urlencode

import polars as pl

from vismem.analysis import dmv, figures, memshot
from vismem.analysis.bootstrap import N_RESAMPLES
from vismem.analysis.dmv_paper import (encoding_paper, with_paper, with_paper_intervals, with_paper_leader,
                                       with_paper_wide)
from vismem.analysis.memshot_paper_cols import with_paper_by_k, with_paper_overall
from vismem.analysis.memshot_sections import LME_SHOT_RULE, judged_caption, setting_caption
from vismem.analysis.intervals import attach, ci_bounds, ci_names, mean_ci
from vismem.analysis.paper_order import order_rows
from vismem.analysis.render import Figure, Section, Table

_CI_DMV = "[95% CI: chain-cluster bootstrap; probe-level where a cell has one chain.]"
_PAPER = "paper*: the DMV-Bench paper's number where its text states one (quoted, not measured; empty elsewhere)."
_PAPER_TABLE2 = ("paper* columns: the paper's Table 2 number where its text states one -- DualMem's Gemini J=5 "
                 "cell (82.7) with its n_r (2,762 probes of 25 chains) and NoMemory / TextOnly at 0 % everywhere "
                 "(quoted, not measured); the paper's Table 2 body is not in the paper text we have, so its other "
                 "cells are empty.")
_CI_MEMSHOT = "[95% CI: question-level percentile bootstrap.]"
_PAPER_MS = ("paper *: the MemShot paper's number for the row's backbone and variant (Tables 1-5; Tables 1, 2, 4 at "
             "its top-10), quoted, not measured -- only beside a row run in the paper's setting (a Qwen3-VL "
             "backbone answering, Qwen3-VL-Embedding-8B retrieving, GLM-5 judging, the table's k and dataset); "
             "paper note says which part of a row's setting differed where its cells are empty.")


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of the analysis (the report stage fills them from ``ReportConfig``)."""

    n_resamples: int = N_RESAMPLES
    seed: int = 0
    n_bins: int = 8
    compare: tuple[str, str] | None = None
    common_probes: bool = True
    exclude_categories: tuple[str, ...] = ("adversarial",)
    table4_chains: int | None = None  # Table 4's ablation subset: its first N common chains (None: all)


@dataclass(frozen=True)
class Links:
    """Where the viewers are (relative hrefs; None: not written) and how a row links to them."""

    trajectories: str | None = None
    samples: str | None = None

    def _href(self, base: str | None, row: dict[str, Any], keys: Sequence[str]) -> str | None:
        if base is None:
            return None
        params = {k: row[k] for k in keys if row.get(k) is not None}
        return f"{base}#{urlencode(params)}" if params else base

    def dmv(self, df: pl.DataFrame, skip: Sequence[str] = ("n_r",)) -> list[str | None] | None:
        """Per row: the trajectory viewer filtered to the row's back-end / architecture / J."""
        if self.trajectories is None:
            return None
        first = df.columns[0] if df.width else None
        return [None if first and r[first] in skip else self._href(self.trajectories, r, ("backend", "architecture", "J"))
                for r in df.iter_rows(named=True)]

    def memshot(self, df: pl.DataFrame) -> list[str | None] | None:
        """Per row: the sample viewer filtered to the row's variant and k."""
        if self.samples is None:
            return None
        return [self._href(self.samples, r, ("variant", "k")) for r in df.iter_rows(named=True)]


def _pct(df: pl.DataFrame) -> list[str]:
    keep = {"tsr", "naive_low", "naive_high", "cluster_low", "cluster_high", "emm", "low", "high", "se", "d_bar",
            "recall", "hit", "acc", "f1", "share_styles_ge3", "paper", "paper_d_bar", "paper naive_low",
            "paper naive_high", "paper cluster_low", "paper cluster_high"}
    return [c for c in df.columns if c in keep or c.endswith(" Acc") or c.endswith(" F1")
            or c.endswith(" lo") or c.endswith(" hi")]


def _wide_with_ci(cells: pl.DataFrame, index: Sequence[str], column: pl.Expr, wide: pl.DataFrame,
                  join_on: Sequence[str]) -> tuple[pl.DataFrame, dict[str, tuple[str, str]]]:
    """Attach each pivoted rate cell's interval (``ci_bounds``) to the wide table ``wide``."""
    b = ci_bounds(cells).with_columns(column.alias("_col"))
    return attach(wide, b.select(*index, "_col", "low", "high"), join_on, "_col", "{}")


def dmv_sections(probes: pl.DataFrame | None, opt: ReportOptions, links: Links) -> list[Section]:
    """Table 2 (TSR per back-end and J), CIs, permutation test, LPM, retention, bins, ablations."""
    main = Section("dmv-main", "DMV-Bench: task success rate (Tables 2, 8-10)")
    curves = Section("dmv-curves", "DMV-Bench: retention and bank-size / position checks (Figs 5-6)")
    abl = Section("dmv-ablations", "DMV-Bench: DualMem ablations (Table 4) and alpha sweep (Fig. 7)")
    if probes is None:
        for s in (main, curves, abl):
            s.empty = "no probes table (runs/<id>/results/probes.parquet) in this run"
        return [main, curves, abl]
    kw = dict(n_resamples=opt.n_resamples, seed=opt.seed)
    cells = dmv.tsr_cells(probes, common=opt.common_probes, **kw)
    if cells.height == 0:
        main.empty = curves.empty = "the probes table has no main-grid rows (study == 'main')"
    else:
        _main_tables(main, probes, cells, opt, links)
        pair = opt.compare or dmv.top_two(cells)
        _curves(curves, probes, opt, links, pair)
    ab = dmv.ablations(probes, **kw)
    if ab.height:
        abt = with_paper(ab.select("backend", "J", "architecture", "variant", "n_probes", "n_chains", "tsr",
                                   "cluster_low", "cluster_high", "note"), ("table4", "table4-encoder"), "tsr")
        abt = _table4_order(abt)
        abl.tables.append(Table("ablations", "Ablations: TSR (%) per variant", abt, percent=_pct(abt),
                                highlight=["tsr"], links=links.dmv(abt), caption=_CI_DMV + " " + _PAPER))
    t4 = _table4(probes, opt)
    if t4 is not None:
        abl.tables.insert(0, t4)
    sw = dmv.alpha_sweep(probes, **kw)
    if sw.height:
        swt = with_paper(sw.drop("naive_low", "naive_high"), ("table4",), "tsr", on="source")
        abl.tables.append(Table("alpha", "Alpha sweep: TSR (%) by visual weight", swt, percent=_pct(swt),
                                links=links.dmv(swt), caption="Endpoints: the family's -verb (alpha 0) and -vis "
                                                              "(alpha 1) variants. " + _CI_DMV + " " + _PAPER))
        abl.figures.append(Figure("alpha", "TSR vs alpha", *figures.render(figures.alpha(sw))))
    if not ab.height and not sw.height:
        abl.empty = "no ablation or alpha-sweep probes (study == 'ablation' / 'alpha_sweep')"
    return [main, curves, abl]


def _table4(probes: pl.DataFrame, opt: ReportOptions) -> Table | None:
    """Table 4 in the paper's blocks, the ablation chain subset beside the full set, with its paper column."""
    from vismem.analysis.dmv_table4 import subset_caption, table4

    t = table4(probes, subset_chains=opt.table4_chains, n_resamples=opt.n_resamples, seed=opt.seed)
    if t.height == 0:
        return None
    enc = pl.col("block").str.starts_with("encoder")
    t = pl.concat([with_paper(t.filter(~enc), ("table4",), "tsr"), with_paper(t.filter(enc), ("table4-encoder",), "tsr")],
                  how="vertical_relaxed").sort("backend", "J", "order").drop("order")
    ci = {"tsr_subset": ("cluster_low_subset", "cluster_high_subset"), "tsr": ("cluster_low", "cluster_high")}
    if t["backend"].n_unique() > 1 or t["J"].n_unique() > 1:
        # one heading per (back-end, J, block): the block alone would merge cells
        t = t.with_columns((pl.col("block") + " — " + pl.col("backend") + ", J=" + pl.col("J").cast(pl.String))
                           .alias("block"))
    return Table("table4", "Table 4: DualMem ablations by block (TSR %, ablation chain subset | full set)", t,
                 percent=["tsr_subset", "cluster_low_subset", "cluster_high_subset", "tsr", "cluster_low",
                          "cluster_high", "paper"], ci=ci, group="block",
                 caption="Blocks as the paper's: alpha sweep, injection (hybrid, alpha 0.5), visual retrieval x "
                         "injection, encoder (alpha 0.5). *_subset: the ablation chain subset, "
                         + subset_caption(probes, opt.table4_chains) + ": the chains every Table 4 variant was probed "
                         "on (probes.ablation_chains" + (f", first {opt.table4_chains}" if opt.table4_chains else "")
                         + "); the other columns: every chain of the cell, empty for a variant probed only on the "
                         "subset. The paper scores the first three blocks on its 7-chain subset (793 probes; the full "
                         "set: 25 chains, 2,762 probes) and the encoder block on the full set. " + _CI_DMV + " " + _PAPER)


def _table4_order(df: pl.DataFrame) -> pl.DataFrame:
    """Rows by (back-end, J) and then Table 4's row order (variants it lacks last, by name)."""
    from vismem.analysis.dmv_table4 import TABLE4

    first: dict[str, int] = {}
    for i, (_, _, v) in enumerate(TABLE4):
        first.setdefault(v, i)
    rank = pl.col("architecture").replace_strict(first, default=len(TABLE4), return_dtype=pl.Int64)
    return df.with_columns(rank.alias("_r")).sort("backend", "J", "_r", "architecture").drop("_r")


def _main_tables(main: Section, probes: pl.DataFrame, cells: pl.DataFrame, opt: ReportOptions,
                 links: Links) -> None:
    t2 = dmv.table2(cells)
    col = pl.col("backend") + " J=" + pl.col("J").cast(pl.String)
    t2, ci = _wide_with_ci(cells, ["architecture"], col, t2, ["architecture"])
    shown = [c for c in t2.columns[1:] if not (c.endswith(" lo") or c.endswith(" hi"))]
    where = {f"{b} J={J}": (b, J) for b, J in cells.select("backend", "J").unique().iter_rows()}
    t2, quoted = with_paper_wide(order_rows(t2, "architecture"), where)
    main.tables.append(Table("table2", "TSR (%) by back-end and chain length J", t2,
                             caption="Rows in the paper's order (Table 7), by family. Common probe set per "
                                     "(back-end, J); n_r = probes per column. Bold = best per column, underline = "
                                     "second. " + _CI_DMV + (" " + _PAPER_TABLE2 if quoted else ""),
                             percent=[c for c in t2.columns[1:] if c != "family"], highlight=shown, ci=ci,
                             links=links.dmv(t2), group="family"))
    main.figures.append(Figure("tsr-bars", "TSR by architecture", *figures.render(figures.tsr_bars(cells)),
                               caption="bars in the paper's row order; error bars: 95% chain-cluster bootstrap CI"))
    ci_tbl = with_paper(cells.select("backend", "J", "architecture", "n_probes", "n_chains", "tsr", "naive_low",
                                     "naive_high", "cluster_low", "cluster_high", "note"), ("table2",), "tsr")
    ci_tbl = order_rows(with_paper_intervals(ci_tbl), "architecture", before=["backend", "J"])
    main.tables.append(Table("bootstrap", "95% CIs: naive (probe iid) vs cluster (chain) bootstrap", ci_tbl,
                             caption=f"{opt.n_resamples:,} resamples; 2.5/97.5 percentiles. " + _PAPER,
                             percent=_pct(ci_tbl), group="family",
                             links=links.dmv(ci_tbl)))
    pair = opt.compare or dmv.top_two(cells)
    if pair:
        perm = dmv.paired_test(probes, *pair, seed=opt.seed)
        if tuple(pair) == ("dualmem", "m2a-lite"):  # the paper's Table 10 pair
            perm = with_paper(with_paper(perm, ("table10",), "d_bar", on="a", name="paper_d_bar"),
                              ("table10",), "p_value", on="a", name="paper_p_value")
            perm = with_paper(perm, ("table10",), "p_value_max", on="a", name="paper_p_value_max")  # J <= 15
        main.tables.append(Table("permutation", f"Paired cluster sign-permutation test: {pair[0]} vs {pair[1]}",
                                 perm, caption="Exact: all 2^K chain sign assignments; d_bar in points. " + _PAPER,
                                 percent=_pct(perm), links=links.dmv(perm)))
    from vismem.analysis.lpm import fit_lpm

    base = dmv.study(probes, "main")
    lpm = fit_lpm(dmv.common_probes(base) if opt.common_probes else base)
    if lpm is not None:
        emm = order_rows(lpm.emm, "architecture", before=["backend", "J"], family=None)
        main.tables.append(Table("lpm", "LPM: estimated marginal means at the mean bank size", emm,
                                 caption=f"correct ~ architecture x backend x J x bank_size, chain-clustered SEs "
                                         f"({lpm.n_clusters} clusters, {lpm.n_obs} probes, mean bank size "
                                         f"{lpm.mean_bank_size:.1f}).", percent=["emm", "se", "low", "high"],
                                 ci={"emm": ("low", "high")} if {"low", "high"} <= set(emm.columns) else {},
                                 links=links.dmv(emm)))
    else:
        main.notes.append("LPM not fitted: fewer than two chains or too few probes.")


def _curves(curves: Section, probes: pl.DataFrame, opt: ReportOptions, links: Links,
            pair: tuple[str, str] | None) -> None:
    ret = dmv.retention(probes, common=opt.common_probes, n_resamples=opt.n_resamples, seed=opt.seed)
    rt = dmv.reach_table(ret)
    rt, ci = _wide_with_ci(ret, dmv.CELL, pl.lit("r=") + pl.col("reach").cast(pl.String), rt, dmv.CELL)
    rt = order_rows(rt, "architecture", before=["backend", "J"], family=None)
    curves.tables.append(Table("reach", "TSR (%) by recall reach r", rt, percent=rt.columns[3:], ci=ci,
                               caption="Per-reach breakdown; reach = recall session - visit session. " + _CI_DMV,
                               links=links.dmv(rt)))
    curves.figures.append(Figure("retention", "TSR by recall reach", *figures.render(figures.retention(ret))))
    bank = dmv.binned(probes, "bank_size", n_bins=opt.n_bins, common=opt.common_probes)
    pos = dmv.position_bins(probes, common=opt.common_probes)
    for backend in sorted(ret["backend"].unique().to_list()):
        # Figure ids become file names: back-end names may hold spaces, slashes and parentheses.
        fid = "bins-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", backend).strip("-") or "backend")
        curves.figures.append(Figure(fid, f"{backend}: TSR by bank size and encoding position",
                                     *figures.render(figures.bins(bank, pos, backend))))
    if pair:
        lead = with_paper_leader(dmv.leader_bins(bank, pair[0]).join(
            dmv.leader_bins(pos, pair[0]), on=["backend", "J"], how="full", coalesce=True, suffix="_position"), pair[0])
        quoted = " paper *: §5's main-grid totals (48 of 48; 49 of 53, one tie)." if "paper bins" in lead.columns else ""
        curves.tables.append(Table("leader-bins", f"Bins where {pair[0]} is above every other architecture",
                                   lead, caption="bins/leads/ties: bank-size bins; *_position: encoding-position bins "
                                           "(one per visit session)." + quoted,
                                   links=links.dmv(lead)))


def encoding_section(enc: pl.DataFrame | None, opt: ReportOptions, links: Links) -> Section:
    """Table 3: per-session encoding statistics per back-end, compliance with its CI."""
    s = Section("dmv-encoding", "DMV-Bench: encoding sessions (Table 3)")
    if enc is None or enc.height == 0:
        s.empty = "no encoding table (runs/<id>/results/encoding.parquet) in this run"
        return s
    st = dmv.encoding_stats(enc)
    # Compliance (>= 3 styles per session) is a rate over sessions, clustered by chain.
    share = dmv.rate_cells(enc.with_columns((pl.col("styles") >= 3).alias("correct")), ["backend"],
                           n_resamples=opt.n_resamples, seed=opt.seed)
    st, ci = attach(st, ci_bounds(share), ["backend"], None, "share_styles_ge3")
    st, quoted = encoding_paper(st)
    s.tables.append(Table("encoding", "Per-session encoding statistics", st,
                          percent=["share_styles_ge3", "paper share_styles_ge3"], ci=ci,
                          caption="share_styles_ge3: sessions that opened at least 3 styles. " + _CI_DMV
                          + (" paper *: Table 3's 550 sessions per back-end (its caption) and §5 'Why n_r varies' in "
                             "words (roughly 11 vs 4 distinct products per session; "
                             "Gemini never short of 3 collections, about half of Qwen's sessions short), quoted, not "
                             "measured." if quoted else ""),
                          links=links.dmv(st)))
    s.figures.append(Figure("encoding", "Distinct products per session", *figures.render(figures.encoding(enc))))
    return s


def _ci_long(df: pl.DataFrame, by: Sequence[str], value: str, opt: ReportOptions,
             overall: str | None = "category") -> pl.DataFrame:
    """``mean_ci`` per ``by`` (+ one "Overall" row per group without ``overall`` when given)."""
    kw = dict(order=["conversation_id", "question_id"], n_resamples=opt.n_resamples, seed=opt.seed)
    per = mean_ci(df, by, value, **kw)
    if overall is None or overall not in by:
        return per
    rest = [c for c in by if c != overall]
    tot = mean_ci(df, rest, value, **kw).with_columns(pl.lit("Overall").alias(overall))
    return pl.concat([per, tot.select(per.columns)])


def _answer_ci(ans: pl.DataFrame, table: pl.DataFrame, by: Sequence[str], on: str, fmt: Callable[[str], str],
               opt: ReportOptions) -> tuple[pl.DataFrame, dict[str, tuple[str, str]]]:
    """Attach Acc and F1 intervals per ``on`` value (category or k) to a wide MemShot table."""
    ci: dict[str, tuple[str, str]] = {}
    for value, metric in (("judge_label", "Acc"), ("f1_mem0" if memshot.has_paper_f1(ans) else "f1", "F1")):
        long = _ci_long(ans, [*by, on], value, opt, overall="category" if on == "category" else None)
        table, c = attach(table, long, by, on, fmt(metric))
        ci |= c
    return table, ci


def memshot_sections(ans: pl.DataFrame | None, rec: pl.DataFrame | None, opt: ReportOptions,
                     links: Links, extras: dict[str, pl.DataFrame] | None = None) -> list[Section]:
    """Tables 1-5 (Acc/F1 per category, ablations, heights) and evidence recall@k, with CIs;
    then Fig. 4, read rate / latency and the paper's quoted baselines
    (:mod:`vismem.analysis.memshot_sections`; ``extras``: the stage's side tables)."""
    from vismem.analysis.memshot_sections import memshot_extra_sections

    main = Section("memshot-main", "MemShot: Acc / F1 per category (Tables 1, 2, 4)")
    abl = Section("memshot-ablations", "MemShot: ablations (Table 3) and rendering height (Table 5)")
    rsec = Section("memshot-recall", "MemShot: evidence recall@k")
    if ans is None or ans.height == 0:
        main.empty = abl.empty = ("no memshot_answers table in this run: answers and the judge need "
                                  "memshot.vlm / memshot.judge (vismem run memshot --vlm ... --judge ...)")
    else:
        _answer_tables(main, abl, ans, opt, links)
    _recall_tables(rsec, rec, ans, opt, links)
    more = memshot_extra_sections({**(extras or {}), "memshot_answers": ans, "memshot_recall": rec}, opt, links)
    return [main, abl, rsec, *more]


def _f1_caption(ans: pl.DataFrame) -> str:
    """What the F1 columns are (:data:`vismem.analysis.memshot.F1_NAMES`)."""
    if not memshot.has_paper_f1(ans):
        return f"F1: {memshot.F1_NAMES['f1']}. "
    return (f"F1: {memshot.F1_NAMES['f1_mem0']}; Overall {memshot.OFFICIAL_F1}: {memshot.F1_NAMES['f1']}. ")


def _answer_tables(main: Section, abl: Section, ans: pl.DataFrame, opt: ReportOptions, links: Links) -> None:
    ex = opt.exclude_categories
    # Intervals over the outcome Acc counts (unjudged = wrong), so they bracket the table's Acc.
    scored = memshot.with_outcome(ans.filter(~pl.col("category").is_in(list(ex))))
    by = [c for c in memshot.GROUP if c in ans.columns]
    for ds in sorted(ans["dataset"].unique().to_list()):
        t = memshot.category_table(ans.filter(pl.col("dataset") == ds), exclude_categories=ex)
        t, ci = _answer_ci(scored.filter(pl.col("dataset") == ds), t, by, "category", lambda m: "{} " + m, opt)
        t = order_rows(t, "variant", "memshot", before=["dataset", "model"], after=["embedder", "k", "max_height"])
        t = with_paper_overall(t, ds)
        main.tables.append(Table(f"memshot-{ds}", f"{ds}: Acc / F1 (%) per category", t, percent=_pct(t),
                                 highlight=["Overall Acc", "Overall F1"], ci=ci, links=links.memshot(t), group="family",
                                 caption=setting_caption(t) + "Rows in the paper's order, by family. Excluded categories: "
                                 f"{', '.join(ex) or 'none'}. " + _f1_caption(ans) + _CI_MEMSHOT
                                 + (" " + _PAPER_MS if "paper Overall Acc" in t.columns else "")
                                 + judged_caption(t) + (" " + LME_SHOT_RULE if ds == "longmemeval" else "")))
    unj = int(ans["judge_label"].null_count())
    if unj:
        main.notes.append(f"{unj} answers have no judge verdict (unanswered, judge failure or no judge); "
                          "they count as wrong in Acc (coverage = share judged).")
    rows = [c for c in ("dataset", "model", "variant", "max_height") if c in ans.columns]
    at = memshot.ablation_table(ans, exclude_categories=ex)
    at, ci = _answer_ci(scored, at, rows, "k", lambda m: "Top-{} " + m, opt)
    at = order_rows(at, "variant", "memshot-table3", before=["dataset", "model"], after=["embedder", "max_height"],
                    family="block")
    at = with_paper_by_k(at, "Table 3")
    abl.tables.append(Table("memshot-ablations", "Variants by top-k: Acc / F1 (%)", at, percent=_pct(at), ci=ci,
                            links=links.memshot(at), group="block",
                            caption=setting_caption(at) + "Rows in Table 3's order and blocks. " + _CI_MEMSHOT
                            + (" " + _PAPER_MS if any(c.startswith("paper ") for c in at.columns) else "")))
    ht = memshot.height_table(ans, exclude_categories=ex)
    if ht.height:
        ht, ci = _answer_ci(scored, ht, rows, "k", lambda m: "Top-{} " + m, opt)
        ht = with_paper_by_k(ht, "Table 5")
        abl.tables.append(Table("memshot-height", "Maximum rendering height by top-k: Acc / F1 (%)", ht,
                                percent=_pct(ht), ci=ci, links=links.memshot(ht),
                                caption=setting_caption(ht) + _CI_MEMSHOT + (" " + _PAPER_MS if any(c.startswith("paper ")
                                                                            for c in ht.columns) else "")))
    else:
        abl.notes.append("No rendering-height sweep (fewer than two max_height values).")


def _recall_tables(rsec: Section, rec: pl.DataFrame | None, ans: pl.DataFrame | None, opt: ReportOptions,
                   links: Links) -> None:
    rt = memshot.recall_table(rec, ans)
    if not rt.height:
        rsec.empty = "no memshot_recall table and no recall_hit in the answers"
        return
    ci: dict[str, tuple[str, str]] = {}
    src, hit_col = (rec, "hit") if rec is not None and rec.height else (ans, "recall_hit")
    by = [c for c in ("dataset", "variant", "embedder", "max_height") if c in rt.columns and c in src.columns]
    from vismem.analysis.memshot_sections import CI_RECALL, cluster_ci_long

    for value, name in (("recall", "recall"), (hit_col, "hit")):
        if value in src.columns:
            rt, c = attach(rt, cluster_ci_long(src, [*by, "k"], value, opt), [*by, "k"], None, name)
            ci |= c
    rt = order_rows(rt, "variant", "memshot", before=["dataset"], after=["embedder", "max_height", "k"])
    other = memshot.RECALL_WITH_EVIDENCE
    cap = CI_RECALL + (f" recall counts a question without evidence turns as 1, as the official LoCoMo evaluation "
                       f"does; {other} is the other reading." if other in rt.columns else "")
    rsec.tables.append(Table("memshot-recall", "Evidence recall@k and hit@k (%)", rt,
                             percent=["recall", "hit", *([other] if other in rt.columns else [])],
                             ci=ci, links=links.memshot(rt), caption=cap, group="family"))
    rsec.figures.append(Figure("memshot-recall", "Evidence recall@k", *figures.render(figures.recall_at_k(rt))))
    ct = memshot.recall_category_table(rec)
    if ct.height:
        cby = [c for c in ("dataset", "variant", "embedder", "k") if c in ct.columns]
        long = cluster_ci_long(rec, [*cby, "category"], "recall", opt, overall="category")
        cols = [c for c in ct.columns if c not in ("dataset", "variant", "embedder", "k", "n")]
        ct, cci = attach(ct, long, cby, "category", "{}")
        ct = order_rows(ct, "variant", "memshot", before=["dataset"], after=["embedder", "k"])
        rsec.tables.append(Table("memshot-recall-category", "Evidence recall@k per category (%)", ct,
                                 percent=cols + [x for p in cci.values() for x in p], ci=cci,
                                 links=links.memshot(ct), caption=CI_RECALL, group="family"))


__all__ = ["Links", "ReportOptions", "dmv_sections", "encoding_section", "memshot_sections", "ci_names"]
