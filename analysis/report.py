"""The run report: read whatever result tables a run has, score them, render HTML + Markdown.

``load_results`` finds ``runs/<id>/results/<kind>.parquet`` (or a folder of parts) for every
kind in :mod:`vismem.analysis.schemas`; ``build_report`` turns them into a headline box (each
paper's central contrast, :mod:`vismem.analysis.headline_box`) and sections of tables and figures
(a section with no data says what is missing; DMV-Bench captions name the stand-ins the run
recorded, :mod:`vismem.analysis.standins`); ``write_report`` puts ``report/index.html``,
``report/summary.md``, ``report/figures/*.{png,svg}`` and ``report/tables/*.csv`` (in the page's
units, linked beside each table) under the run's prefix.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import polars as pl

from vismem.analysis import dmv
from vismem.analysis.intervals import ci_bounds, mean_ci
from vismem.analysis.render import Report, Section, Table, catalogue_settings, table_csv, to_html, to_markdown
from vismem.analysis.dmv_runs import run_protocol
from vismem.analysis.report_sections import Links, ReportOptions, dmv_sections, encoding_section, memshot_sections
from vismem.analysis.schemas import KINDS, SchemaError, result_key, result_prefix, validate

__all__ = ["ReportOptions", "build_report", "combined_id", "headline", "load_results", "report_run", "report_runs",
           "write_report"]


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


def display_names(tables: dict[str, pl.DataFrame]) -> dict[str, str]:
    """Readable back-end names for the cache slugs result tables carry.

    The encoding table names each slug (``backend``) with its model's name (``backend_name``,
    e.g. ``scripted-shopper (stand-in)``); probe rows name ``<slug without hash> / <recaller>``
    and carry the ``chain_slug``. Names that would merge two distinct back-ends are left as they
    are, so renaming never pools cells.
    """
    enc = tables.get("encoding")
    if enc is None or "backend_name" not in enc.columns:
        return {}
    names = {s: n for s, n in enc.select("backend", "backend_name").unique().iter_rows() if n}
    out = dict(names)
    probes = tables.get("probes")
    if probes is not None and "chain_slug" in probes.columns:
        for backend, slug in probes.select("backend", "chain_slug").unique().iter_rows():
            stem = slug.rsplit("--", 1)[0] if slug else None
            if slug in names and stem and backend.startswith(stem):
                out[backend] = names[slug] + backend[len(stem):]
    taken: dict[str, list[str]] = {}
    for k, v in out.items():
        taken.setdefault(v, []).append(k)
    return {k: v for k, v in out.items() if len(taken[v]) == 1 and k != v}


def rename_backends(tables: dict[str, pl.DataFrame], names: dict[str, str]) -> dict[str, pl.DataFrame]:
    """``tables`` with every ``backend`` value in ``names`` replaced by its readable name."""
    if not names:
        return tables
    out = dict(tables)
    for kind, df in tables.items():
        if "backend" in df.columns:
            out[kind] = df.with_columns(pl.col("backend").replace(names))
    return out


def build_report(tables: dict[str, pl.DataFrame], run_id: str, *, manifest: dict[str, Any] | None = None,
                 errors: dict[str, str] | None = None, options: ReportOptions = ReportOptions(),
                 viewers: dict[str, str] | None = None, protocol: str | None = None) -> Report:
    """Score every available table and assemble the report (pure: no I/O).

    ``viewers``: ``{"trajectories": href, "samples": href}`` of the viewers written beside the
    report; table rows link to them. ``protocol``: the DMV-Bench dialogue protocol every DMV-Bench
    caption names (default: the manifest's ``encode.protocol``). Probes with a ``run`` column (a
    report over several runs, :func:`vismem.analysis.dmv_runs.combine_runs`) get a pooling table.
    """
    viewers = viewers or {}
    links = Links(trajectories=viewers.get("trajectories"), samples=viewers.get("samples"))
    tables = rename_backends(tables, display_names(tables))
    dmv_parts = [*dmv_sections(tables.get("probes"), options, links),
                 encoding_section(tables.get("encoding"), options, links)]
    from vismem.analysis.dmv_table4 import add_extra_tables

    add_extra_tables(dmv_parts, tables)
    _dmv_captions(dmv_parts, tables.get("probes"), protocol or run_protocol(manifest))
    _adaptive_marks(dmv_parts, tables.get("adaptive"))
    cs = catalogue_settings(manifest)
    if cs:
        # Trajectories and probes under the two colour orders are not comparable: say which one.
        for s in dmv_parts:
            if s.has_data:
                s.notes.insert(0, cs["line"])
    head = headline_section(tables, options)
    from vismem.analysis.standins import annotate

    # Stand-ins named in every DMV-Bench table from what the run recorded (manifest components).
    annotate([t for s in dmv_parts for t in s.tables] + (head.tables if head else []), tables.get("probes"), manifest)
    sections = [*dmv_parts, *memshot_sections(tables.get("memshot_answers"), tables.get("memshot_recall"),
                                              options, links, extras=tables)]
    found = ", ".join(k for k in KINDS if k in tables) or "none"
    titles = {"trajectories": "Trajectory viewer (DMV-Bench sessions and probes)",
              "samples": "Sample viewer (MemShot questions and retrieved shots)"}
    return Report(title=f"vismem report — {run_id}", run_id=run_id, sections=sections, manifest=manifest,
                  errors=dict(errors or {}), viewers={titles.get(k, k): v for k, v in viewers.items()},
                  generated=f"Result tables found: {found}. Seed {options.seed}, "
                            f"{options.n_resamples:,} bootstrap resamples.",
                  headline=head)


def _adaptive_marks(parts: list[Any], status: pl.DataFrame | None) -> None:
    """An adaptive run (probes.mode adaptive): Table 2 says its cells were scored on a seeded
    random subset of their probe units, and a table marks every cell (units and probes probed /
    eligible, the anytime-valid interval for the exhaustive TSR, why scoring stopped)."""
    from vismem.analysis.adaptive import marks
    from vismem.analysis.render import Table

    main = next((s for s in parts if s.id == "dmv-main"), None)
    if status is None or status.height == 0 or main is None:
        return
    note = (" Adaptive run (probes.mode adaptive): each cell is scored on a seeded random subset of its probe units, "
            "marked in 'Adaptive probing' (n probed / n eligible, why scoring stopped).")
    for t in main.tables:
        if t.id == "table2":
            t.caption += note
    main.tables.append(Table(
        "adaptive", "Adaptive probing: units and probes probed / eligible per cell, and why scoring stopped",
        marks(status), percent=["estimate"], ci={"estimate": ("low", "high")},
        caption="estimate: TSR (or A − B for the contrast row) over the scored probes; interval: the anytime-valid "
                "confidence sequence (betting, without replacement; docs/adaptive-probing.md) for the value an "
                "exhaustive run would report. reason: width (interval narrower than probes.adaptive.width), decided "
                "(the contrast's interval excludes 0), exhausted (every unit scored), open (stopped unfinished)."))


def headline_section(tables: dict[str, pl.DataFrame], options: ReportOptions) -> Section | None:
    """The box at the top of the report: each paper's central contrast, measured, with its paper
    number (:mod:`vismem.analysis.headline_box`); None when the run has none of them."""
    from vismem.analysis import headline_box as hb

    t = hb.headline_table(tables, options)
    if t.height == 0:
        return None
    sec = Section("headline", "Headline: each paper's central contrast, measured")
    sec.tables.append(Table(
        "headline", "Central contrasts (%; A − B in points)", t, percent=list(hb.PERCENT), ci=dict(hb.CI),
        group="study",
        caption="A and B over the items both were scored on (95% CI: chain-cluster bootstrap for DMV-Bench, "
                "conversation-cluster for MemShot; item-level where there is one chain or conversation); A − B: "
                "paired bootstrap of the same clusters. paper A / B / "
                "A − B: the paper's numbers where its text states them, in the setting named (quoted, not measured; "
                "another back-end or J than this run's where the setting says so)."))
    return sec


def _dmv_captions(parts: list[Any], probes: pl.DataFrame | None, protocol: str | None) -> None:
    """Every DMV-Bench table names its protocol; pooled cells say which chains they pool."""
    from vismem.analysis.dmv_runs import pooling_caption, pooling_table, protocol_caption
    from vismem.analysis.render import Table

    pool = pooling_table(probes) if probes is not None else pl.DataFrame()
    pooled = pooling_caption(pool) if pool.height else ""
    main = next((s for s in parts if s.id == "dmv-main" and s.has_data), None)
    if main is not None and pool.height:
        main.tables.insert(1, Table("pooling", "Runs pooled per (back-end, J) cell", pool,
                                    caption="chains: distinct chain seeds the run contributes to the cell; rows: "
                                            "whole chains, or the first J sessions of longer chains."))
    for s in parts:
        for t in s.tables:
            extra = f" {pooled}" if pooled and t.id in ("table2", "bootstrap", "permutation", "reach") else ""
            t.caption = f"{protocol_caption(protocol)}{extra} {t.caption}".strip()


def headline(tables: dict[str, pl.DataFrame], options: ReportOptions = ReportOptions()) -> dict[str, pl.DataFrame]:
    """The run's headline numbers (what ``vismem run`` prints at the end), as small frames.

    ``dmv``: main-grid TSR per (backend, J, architecture) on the common probe set, best first,
    with its 95% CI (``low``/``high``); ``memshot_recall``: recall@k and hit@k per (variant, k);
    ``memshot_answers``: overall Acc and F1 per (variant, k); ``encoding``: Table 3 per back-end.
    The same scoring as the report's tables.
    """
    tables = rename_backends(tables, display_names(tables))
    out: dict[str, pl.DataFrame] = {}
    kw = dict(n_resamples=options.n_resamples, seed=options.seed)
    probes = tables.get("probes")
    if probes is not None:
        cells = dmv.tsr_cells(probes, common=options.common_probes, **kw)
        if cells.height:
            out["dmv"] = (ci_bounds(cells).select("backend", "J", "architecture", "n_probes", "n_chains", "tsr",
                                                  "low", "high")
                          .sort(["backend", "J", "tsr", "architecture"], descending=[False, False, True, False]))
    rec = tables.get("memshot_recall")
    if rec is not None and rec.height:
        by = ["variant", "k"]
        if "embedder" in rec.columns:
            # A variant retrieved by several embedders (memshot.extra_retrievers, Fig. 4b) is one
            # row per embedder, named so: never one mean pooled over two retrievers.
            several = pl.col("embedder").n_unique().over("variant") > 1
            rec = rec.with_columns(pl.when(several).then(pl.format("{} [{}]", "variant", pl.col("embedder")
                                                                   .fill_null("none")))
                                   .otherwise(pl.col("variant")).alias("variant"))
        kw_ci = dict(order=["conversation_id", "question_id"], **kw)
        r = mean_ci(rec, by, "recall", **kw_ci).rename({"mean": "recall", "low": "recall lo", "high": "recall hi"})
        h = mean_ci(rec, by, "hit", **kw_ci).select(*by, pl.col("mean").alias("hit"), pl.col("low").alias("hit lo"),
                                                    pl.col("high").alias("hit hi"))
        out["memshot_recall"] = r.join(h, on=by).sort(by)
    ans = tables.get("memshot_answers")
    if ans is not None and ans.height:
        by = ["variant", "k"]
        from vismem.analysis.memshot import has_paper_f1, with_outcome

        scored = with_outcome(ans.filter(~pl.col("category").is_in(list(options.exclude_categories))))
        kw_ci = dict(order=["conversation_id", "question_id"], **kw)
        acc = mean_ci(scored, by, "judge_label", **kw_ci).rename({"mean": "acc", "low": "acc lo", "high": "acc hi",
                                                                   "n": "judged"})
        # the paper's F1 (f1_mem0) where the answers carry it, as the paper-layout tables
        f1 = mean_ci(scored, by, "f1_mem0" if has_paper_f1(scored) else "f1", **kw_ci).rename({"mean": "f1", "low": "f1 lo", "high": "f1 hi"})
        out["memshot_answers"] = f1.join(acc, on=by, how="left").sort(by)
    enc = tables.get("encoding")
    if enc is not None and enc.height:
        out["encoding"] = dmv.encoding_stats(enc).select("backend", "sessions", "chains", "steps_mean",
                                                         "products_mean", "styles_mean")
    return out


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
        # In the page's units (percent where the page shows percent), linked beside each table.
        k = f"{base}/tables/{t.id}.csv"
        store.put_bytes(k, table_csv(t), content_type="text/csv")
        keys["tables"].append(k)
    # The HTML goes last: its presence means the report is complete.
    store.put_bytes(f"{base}/summary.md", to_markdown(rep).encode(), content_type="text/markdown")
    store.put_bytes(f"{base}/index.html", to_html(rep).encode(), content_type="text/html")
    keys["markdown"] = f"{base}/summary.md"
    keys["html"] = f"{base}/index.html"
    return keys


def report_run(store: Any, run_id: str, *, options: ReportOptions = ReportOptions(),
               manifest: dict[str, Any] | None = None, viewers: dict[str, str] | None = None,
               results: tuple[dict[str, pl.DataFrame], dict[str, str]] | None = None,
               extra_tables: dict[str, pl.DataFrame] | None = None) -> dict[str, Any]:
    """Load, build and write the report of ``run_id`` in ``store``; returns a summary.

    ``viewers``: the viewers already written under ``runs/<id>/report/`` (name -> relative href).
    ``results``: what :func:`load_results` returned, when the caller has read the tables already.
    ``extra_tables``: side inputs outside the result tables (``dmv_architectures``, ``dmv_captions``).
    """
    prefix = f"runs/{run_id}"
    t0 = time.perf_counter()
    if manifest is None and store.exists(f"{prefix}/manifest.json"):
        try:
            manifest = store.get_json(f"{prefix}/manifest.json")
        except ValueError:  # a damaged manifest (`vismem runs` flags it): the report without it
            manifest = None
        manifest = manifest if isinstance(manifest, dict) else None
    tables, errors = results if results is not None else load_results(store, prefix)
    from vismem.analysis.memshot_sections import load_extras

    # MemShot side tables (read rate, latency) ride along; build_report passes them to its sections.
    rep = build_report({**tables, **load_extras(store, prefix), **(extra_tables or {})}, run_id, manifest=manifest, errors=errors,
                       options=options, viewers=viewers)
    keys = write_report(store, prefix, rep)
    return {"status": "done" if not errors else "done-with-errors", "found": sorted(tables),
            "missing": [k for k in KINDS if k not in tables and k not in errors], "errors": errors,
            "sections_without_data": [s.id for s in rep.sections if not s.has_data],
            "tables": len(keys["tables"]), "figures": len(keys["figures"]) // 2,
            "html": store.url(keys["html"]), "markdown": store.url(keys["markdown"]),
            "viewers": {k: store.url(f"{prefix}/report/{v}") for k, v in (viewers or {}).items()},
            "wall_s": round(time.perf_counter() - t0, 3)}



def combined_id(run_ids: Sequence[str]) -> str:
    """The id of a report over several runs (``A+B``): stored under ``reports/<id>/report/``."""
    return "+".join(run_ids)


def report_runs(store: Any, run_ids: Sequence[str], manifests: dict[str, dict[str, Any] | None], *,
                options: ReportOptions = ReportOptions(), pool_first: Sequence[int] = ()) -> dict[str, Any]:
    """One DMV-Bench report over several runs of one protocol, written to ``reports/<A+B>/report/``.

    ``ConfigError`` (one line, before any work) when the runs' protocols differ. Probe and encoding
    rows are combined by :func:`vismem.analysis.dmv_runs.combine_runs` (``pool_first``: the J
    cells that take the first J sessions of longer chains); MemShot tables stay per run."""
    from vismem.analysis.dmv_runs import combine_runs, common_protocol, run_protocol

    protocol = common_protocol({r: run_protocol(manifests.get(r)) for r in run_ids})
    t0 = time.perf_counter()
    loaded = {r: load_results(store, f"runs/{r}") for r in run_ids}
    errors = {f"{r}/{k}": e for r, (_, errs) in loaded.items() for k, e in errs.items()}
    tables = combine_runs({r: t for r, (t, _) in loaded.items()}, pool_first)
    rid = combined_id(run_ids)
    rep = build_report(tables, rid, manifest=manifests.get(run_ids[0]), errors=errors, options=options,
                       protocol=protocol)
    rep.generated += f" Runs combined: {', '.join(run_ids)} (protocol {protocol or 'not recorded'})."
    keys = write_report(store, f"reports/{rid}", rep)
    return {"status": "done" if not errors else "done-with-errors", "found": sorted(tables), "errors": errors,
            "runs": list(run_ids), "protocol": protocol, "report_id": rid,
            "sections_without_data": [s.id for s in rep.sections if not s.has_data],
            "tables": len(keys["tables"]), "figures": len(keys["figures"]) // 2,
            "html": store.url(keys["html"]), "markdown": store.url(keys["markdown"]), "viewers": {},
            "wall_s": round(time.perf_counter() - t0, 3)}
