"""The run report: read whatever result tables a run has, score them, render HTML + Markdown.

``load_results`` finds ``runs/<id>/results/<kind>.parquet`` (or a folder of parts) for every
kind in :mod:`analysis.schemas`; ``build_report`` turns them into sections of tables and
figures (a section with no data says what is missing); ``write_report`` puts
``report/index.html``, ``report/summary.md``, ``report/figures/*.{png,svg}`` and
``report/tables/*.csv`` under the run's prefix.
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis import dmv, figures, memshot
from analysis.bootstrap import N_RESAMPLES
from analysis.render import Figure, Report, Section, Table, catalogue_settings, to_html, to_markdown
from analysis.schemas import KINDS, SchemaError, result_key, result_prefix, validate


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of the analysis (the report stage fills them from ``ReportConfig``)."""

    n_resamples: int = N_RESAMPLES
    seed: int = 0
    n_bins: int = 8
    compare: tuple[str, str] | None = None
    common_probes: bool = True
    exclude_categories: tuple[str, ...] = ("adversarial",)


def load_results(store: Any, run_prefix: str) -> tuple[dict[str, pl.DataFrame], dict[str, str]]:
    """``(tables, errors)``: every result kind found under the run, validated.

    A kind that exists but fails validation is reported in ``errors`` (never raised), so one
    bad table does not hide the others.
    """
    tables: dict[str, pl.DataFrame] = {}
    errors: dict[str, str] = {}
    for kind in KINDS:
        key = result_key(run_prefix, kind)
        try:
            if store.exists(key):
                df = store.read_table(key)
            elif any(k.endswith(".parquet") for k in store.list(result_prefix(run_prefix, kind) + "/")):
                df = store.read_table(result_prefix(run_prefix, kind) + "/")
            else:
                continue
            tables[kind] = validate(df, kind)
        except SchemaError as err:
            errors[kind] = str(err)
        except Exception as err:  # noqa: BLE001 - unreadable object: report it, keep going
            errors[kind] = f"{type(err).__name__}: {err}"
    return tables, errors


def _pct(df: pl.DataFrame) -> list[str]:
    keep = {"tsr", "naive_low", "naive_high", "cluster_low", "cluster_high", "emm", "low", "high", "se", "d_bar",
            "recall", "hit", "acc", "f1", "share_styles_ge3"}
    return [c for c in df.columns if c in keep or c.endswith(" Acc") or c.endswith(" F1")]


def _dmv_sections(probes: pl.DataFrame | None, opt: ReportOptions) -> list[Section]:
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
        t2 = dmv.table2(cells)
        main.tables.append(Table("table2", "TSR (%) by back-end and chain length J", t2,
                                 caption="Common probe set per (back-end, J); n_r = probes per column. "
                                         "Bold = best per column, underline = second.",
                                 percent=t2.columns[1:], highlight=t2.columns[1:]))
        ci = cells.select("backend", "J", "architecture", "n_probes", "n_chains", "tsr", "naive_low", "naive_high",
                          "cluster_low", "cluster_high", "note")
        main.tables.append(Table("bootstrap", "95% CIs: naive (probe iid) vs cluster (chain) bootstrap", ci,
                                 caption=f"{opt.n_resamples:,} resamples; 2.5/97.5 percentiles.", percent=_pct(ci)))
        pair = opt.compare or dmv.top_two(cells)
        if pair:
            perm = dmv.paired_test(probes, *pair, seed=opt.seed)
            main.tables.append(Table("permutation", f"Paired cluster sign-permutation test: {pair[0]} vs {pair[1]}",
                                     perm, caption="Exact: all 2^K chain sign assignments; d_bar in points.",
                                     percent=["d_bar"]))
        from analysis.lpm import fit_lpm

        base = dmv.study(probes, "main")
        lpm = fit_lpm(dmv.common_probes(base) if opt.common_probes else base)
        if lpm is not None:
            main.tables.append(Table("lpm", "LPM: estimated marginal means at the mean bank size", lpm.emm,
                                     caption=f"correct ~ architecture x backend x J x bank_size, chain-clustered SEs "
                                             f"({lpm.n_clusters} clusters, {lpm.n_obs} probes, mean bank size "
                                             f"{lpm.mean_bank_size:.1f}).", percent=["emm", "se", "low", "high"]))
        else:
            main.notes.append("LPM not fitted: fewer than two chains or too few probes.")
        ret = dmv.retention(probes, common=opt.common_probes, **kw)
        rt = dmv.reach_table(ret)
        curves.tables.append(Table("reach", "TSR (%) by recall reach r", rt, percent=rt.columns[3:],
                                   caption="Per-reach breakdown; reach = recall session - visit session."))
        curves.figures.append(Figure("retention", "TSR by recall reach", *figures.render(figures.retention(ret))))
        bank = dmv.binned(probes, "bank_size", n_bins=opt.n_bins, common=opt.common_probes)
        pos = dmv.binned(probes, "encoding_position", n_bins=opt.n_bins, common=opt.common_probes)
        for backend in sorted(cells["backend"].unique().to_list()):
            # Figure ids become file names: back-end names may hold spaces, slashes and parentheses.
            fid = "bins-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", backend).strip("-") or "backend")
            curves.figures.append(Figure(fid, f"{backend}: TSR by bank size and encoding position",
                                         *figures.render(figures.bins(bank, pos, backend))))
        if pair:
            lead = dmv.leader_bins(bank, pair[0]).join(dmv.leader_bins(pos, pair[0]), on=["backend", "J"],
                                                        how="full", coalesce=True, suffix="_position")
            curves.tables.append(Table("leader-bins", f"Bins where {pair[0]} is above every other architecture",
                                       lead, caption="bins/leads/ties: bank-size bins; *_position: encoding-position bins."))
    ab = dmv.ablations(probes, **kw)
    if ab.height:
        abt = ab.select("backend", "J", "architecture", "variant", "n_probes", "n_chains", "tsr", "cluster_low",
                        "cluster_high", "note")
        abl.tables.append(Table("ablations", "Ablations: TSR (%) per variant", abt, percent=_pct(abt), highlight=["tsr"]))
    sw = dmv.alpha_sweep(probes, **kw)
    if sw.height:
        abl.tables.append(Table("alpha", "Alpha sweep: TSR (%) by visual weight", sw.drop("naive_low", "naive_high"),
                                percent=_pct(sw)))
        abl.figures.append(Figure("alpha", "TSR vs alpha", *figures.render(figures.alpha(sw))))
    if not ab.height and not sw.height:
        abl.empty = "no ablation or alpha-sweep probes (study == 'ablation' / 'alpha_sweep')"
    return [main, curves, abl]


def _encoding_section(enc: pl.DataFrame | None) -> Section:
    s = Section("dmv-encoding", "DMV-Bench: encoding sessions (Table 3)")
    if enc is None or enc.height == 0:
        s.empty = "no encoding table (runs/<id>/results/encoding.parquet) in this run"
        return s
    st = dmv.encoding_stats(enc)
    s.tables.append(Table("encoding", "Per-session encoding statistics", st, percent=["share_styles_ge3"]))
    s.figures.append(Figure("encoding", "Distinct products per session", *figures.render(figures.encoding(enc))))
    return s


def _memshot_sections(ans: pl.DataFrame | None, rec: pl.DataFrame | None, opt: ReportOptions) -> list[Section]:
    main = Section("memshot-main", "MemShot: Acc / F1 per category (Tables 1, 2, 4)")
    abl = Section("memshot-ablations", "MemShot: ablations (Table 3) and rendering height (Table 5)")
    rsec = Section("memshot-recall", "MemShot: evidence recall@k")
    ex = opt.exclude_categories
    if ans is None or ans.height == 0:
        main.empty = abl.empty = "no memshot_answers table in this run"
    else:
        for ds in sorted(ans["dataset"].unique().to_list()):
            t = memshot.category_table(ans.filter(pl.col("dataset") == ds), exclude_categories=ex)
            main.tables.append(Table(f"memshot-{ds}", f"{ds}: Acc / F1 (%) per category", t, percent=_pct(t),
                                     highlight=["Overall Acc", "Overall F1"],
                                     caption=f"Excluded categories: {', '.join(ex) or 'none'}."))
        unj = int(ans["judge_label"].null_count())
        if unj:
            main.notes.append(f"{unj} answers have no judge verdict; Acc is over judged answers only.")
        at = memshot.ablation_table(ans, exclude_categories=ex)
        abl.tables.append(Table("memshot-ablations", "Variants by top-k: Acc / F1 (%)", at, percent=_pct(at)))
        ht = memshot.height_table(ans, exclude_categories=ex)
        if ht.height:
            abl.tables.append(Table("memshot-height", "Maximum rendering height by top-k: Acc / F1 (%)", ht,
                                    percent=_pct(ht)))
        else:
            abl.notes.append("No rendering-height sweep (fewer than two max_height values).")
    rt = memshot.recall_table(rec, ans)
    if rt.height:
        rsec.tables.append(Table("memshot-recall", "Evidence recall@k and hit@k (%)", rt, percent=["recall", "hit"]))
        rsec.figures.append(Figure("memshot-recall", "Evidence recall@k", *figures.render(figures.recall_at_k(rt))))
        ct = memshot.recall_category_table(rec)
        if ct.height:
            cols = [c for c in ct.columns if c not in ("dataset", "variant", "embedder", "k", "n")]
            rsec.tables.append(Table("memshot-recall-category", "Evidence recall@k per category (%)", ct,
                                     percent=cols))
    else:
        rsec.empty = "no memshot_recall table and no recall_hit in the answers"
    return [main, abl, rsec]


def build_report(tables: dict[str, pl.DataFrame], run_id: str, *, manifest: dict[str, Any] | None = None,
                 errors: dict[str, str] | None = None, options: ReportOptions = ReportOptions()) -> Report:
    """Score every available table and assemble the report (pure: no I/O)."""
    dmv_parts = [*_dmv_sections(tables.get("probes"), options), _encoding_section(tables.get("encoding"))]
    cs = catalogue_settings(manifest)
    if cs:
        # Trajectories and probes under the two colour orders are not comparable: say which one.
        for s in dmv_parts:
            if s.has_data:
                s.notes.insert(0, cs["line"])
    sections = [*dmv_parts, *_memshot_sections(tables.get("memshot_answers"), tables.get("memshot_recall"), options)]
    found = ", ".join(k for k in KINDS if k in tables) or "none"
    return Report(title=f"vismem report — {run_id}", run_id=run_id, sections=sections, manifest=manifest,
                  errors=dict(errors or {}),
                  generated=f"Result tables found: {found}. Seed {options.seed}, "
                            f"{options.n_resamples:,} bootstrap resamples.")


def write_report(store: Any, run_prefix: str, rep: Report) -> dict[str, Any]:
    """Write the report under ``<run_prefix>/report/``; returns the keys written."""
    base = f"{run_prefix.rstrip('/')}/report"
    keys: dict[str, Any] = {"figures": [], "tables": []}
    for f in rep.figures():
        for ext, data, ctype in (("png", f.png, "image/png"), ("svg", f.svg, "image/svg+xml")):
            k = f"{base}/figures/{f.id}.{ext}"
            store.put_bytes(k, data, content_type=ctype)
            keys["figures"].append(k)
    for t in rep.tables():
        buf = io.BytesIO()
        t.df.write_csv(buf)
        k = f"{base}/tables/{t.id}.csv"
        store.put_bytes(k, buf.getvalue(), content_type="text/csv")
        keys["tables"].append(k)
    # The HTML goes last: its presence means the report is complete.
    store.put_bytes(f"{base}/summary.md", to_markdown(rep).encode(), content_type="text/markdown")
    store.put_bytes(f"{base}/index.html", to_html(rep).encode(), content_type="text/html")
    keys["markdown"] = f"{base}/summary.md"
    keys["html"] = f"{base}/index.html"
    return keys


def report_run(store: Any, run_id: str, *, options: ReportOptions = ReportOptions(),
               manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load, build and write the report of ``run_id`` in ``store``; returns a summary."""
    prefix = f"runs/{run_id}"
    t0 = time.perf_counter()
    if manifest is None and store.exists(f"{prefix}/manifest.json"):
        manifest = store.get_json(f"{prefix}/manifest.json")
    tables, errors = load_results(store, prefix)
    rep = build_report(tables, run_id, manifest=manifest, errors=errors, options=options)
    keys = write_report(store, prefix, rep)
    return {"status": "done" if not errors else "done-with-errors", "found": sorted(tables),
            "missing": [k for k in KINDS if k not in tables and k not in errors], "errors": errors,
            "sections_without_data": [s.id for s in rep.sections if not s.has_data],
            "tables": len(keys["tables"]), "figures": len(keys["figures"]) // 2,
            "html": store.url(keys["html"]), "markdown": store.url(keys["markdown"]),
            "wall_s": round(time.perf_counter() - t0, 3)}

