"""``vismem runs``: the runs a store holds, with their status, date, stages, headline and report.

Reads ``runs/<run_id>/manifest.json`` for every run folder in the store. A run's status is
``failed`` when a stage failed, ``partial`` when one finished with failed shards, ``incomplete``
when a stage never finished (a killed run: re-running resumes it), else ``done``. The headline is
the end-of-run summary's (``vismem.analysis.report.headline`` of the run's result tables, its
bootstrap seeded by the run's own seed), in one line; ``--no-headline`` skips reading the tables.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from vismem.pipelines.commands.run import add_config_args, config_from_args
from vismem.pipelines.stage import STAGE_ORDER

if TYPE_CHECKING:
    from vismem.core.store import Store


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list the runs in a store (status, date, stages, report)",
                       description="List the runs in the store: run id, status, start date, stages and whether "
                                   "a report exists (`vismem report RUN_ID --open` opens it).")
    add_config_args(p)
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.add_argument("--no-headline", action="store_true", help="do not read result tables for the headline metric")
    p.set_defaults(func=_runs, stages=[])


def run_status(manifest: dict[str, Any]) -> str:
    """``failed`` / ``partial`` / ``incomplete`` / ``done`` from a manifest's stage entries (and
    its run-level ``failure``: a run that failed outside any stage)."""
    if isinstance(manifest.get("failure"), dict):
        return "failed"
    states = [v.get("status") for v in (manifest.get("stages") or {}).values() if isinstance(v, dict)]
    if not states:
        return "incomplete"
    for s in ("failed", "partial"):
        if s in states:
            return s
    return "incomplete" if "running" in states else "done"


def run_ids(store: "Store") -> list[str]:
    """The run folders under ``runs/`` (one listing of the first level, not of every object)."""
    import pyarrow.fs as pafs

    fs = store.arrow_filesystem()
    infos = fs.get_file_info(pafs.FileSelector(store.arrow_path("runs"), recursive=False, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory and not i.base_name.startswith("."))


def _seconds(v: Any) -> float:
    try:
        return float(v or 0)
    except (TypeError, ValueError):
        return 0.0


def run_headline(store: "Store", run_id: str, manifest: dict[str, Any], options: Any) -> dict[str, Any]:
    """``{"headline": line, "headline_tables": {kind: records}}`` of a stored run (empty without results).

    The run's own seed (from its manifest) drives the bootstrap, as in its end-of-run summary.
    """
    import dataclasses

    from vismem.analysis.headline_text import headline_line
    from vismem.analysis.report import headline, load_results

    tables, _errors = load_results(store, f"runs/{run_id}")
    if not tables:
        return {"headline": "", "headline_tables": {}}
    seed = (manifest.get("config") or {}).get("seed")
    if isinstance(seed, int):
        options = dataclasses.replace(options, seed=seed)
    heads = headline(tables, options)
    return {"headline": headline_line(heads), "headline_tables": {k: v.to_dicts() for k, v in heads.items()}}


def list_runs(store: "Store", *, options: Any = None) -> list[dict[str, Any]]:
    """One record per run: ``run_id``, ``status``, ``started``, ``stages`` (name: status), ``report``;
    with report ``options``, also ``headline`` (one line) and ``headline_tables`` (see :func:`run_headline`)."""
    from vismem.pipelines.manifest import read_manifest

    out = []
    for rid in run_ids(store):
        m, problem = read_manifest(store, rid)
        stages = {k: v.get("status") for k, v in (m.get("stages") or {}).items() if isinstance(v, dict)}
        wall = sum(_seconds(v.get("wall_s")) for v in (m.get("stages") or {}).values() if isinstance(v, dict))
        started = m.get("started_at") if isinstance(m.get("started_at"), str) else None
        status = "unreadable manifest" if problem else run_status(m) if m else "no manifest"
        failure = m.get("failure") if isinstance(m.get("failure"), dict) else {}
        out.append({"run_id": rid, "status": status, "problem": problem or failure.get("error"), "started": started,
                    "stages": stages, "wall_s": round(wall, 1),
                    "report": store.url(f"runs/{rid}/report/index.html")
                    if store.exists(f"runs/{rid}/report/index.html") else None})
        if options is not None:
            out[-1].update(run_headline(store, rid, m, options))
    return sorted(out, key=lambda r: (r["started"] or "", r["run_id"]), reverse=True)


def _runs(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from vismem.pipelines.report.build import options_from
    from vismem.pipelines.runner import open_store

    cfg = config_from_args(args)
    with open_store(cfg, create=False) as (store, _env):
        runs = list_runs(store, options=None if args.no_headline else options_from(cfg))
        uri = store.uri
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    if not runs:
        print(f"no runs in {uri}")
        return 0
    t = Table(title=f"Runs in {cfg.store.uri if cfg.store.uri.startswith('local-s3://') else uri}",
              title_justify="left", show_edge=False)
    t.add_column("run id", no_wrap=True, min_width=max(len(r["run_id"]) for r in runs))
    t.add_column("status", no_wrap=True)
    t.add_column("started (UTC)", no_wrap=True)
    t.add_column("stage time", justify="right", no_wrap=True)
    t.add_column("stages")
    t.add_column("report", no_wrap=True)
    colour = {"done": "green", "partial": "yellow", "failed": "red", "unreadable manifest": "red"}
    for r in runs:
        c = colour.get(r["status"], "white")
        order = [k for k in STAGE_ORDER if k in r["stages"]] + [k for k in r["stages"] if k not in STAGE_ORDER]
        done = [k for k in order if r["stages"][k] == "done"]
        stages = f"{len(done)}/{len(order)} done" + "".join(f", {k} {r['stages'][k]}" for k in order
                                                           if r["stages"][k] != "done")
        t.add_row(r["run_id"], f"[{c}]{r['status']}[/{c}]", (r["started"] or "").replace("T", " ").rstrip("Z"),
                  f"{r['wall_s']:.0f} s", stages, "yes" if r["report"] else "")
    Console().print(t)
    # Plain lines under the table: problems, headlines and paths stay whole (a column would wrap them).
    for r in runs:
        if r["problem"]:
            print(f"{r['run_id']}: {r['problem']}")
        lines = ([] if args.no_headline else [f"  headline  {r['headline'] or 'no result tables'}"]) + \
                ([f"  report    {r['report']}"] if r["report"] else [])
        if lines:
            print("\n".join([r["run_id"], *lines]))
    print("`vismem report RUN_ID --open` builds and opens a run's report; "
          "`vismem store ls runs/RUN_ID/` lists what it wrote.")
    return 0
