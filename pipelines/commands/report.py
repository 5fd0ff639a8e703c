"""``vismem report RUN_ID [RUN_ID ...] [--store URI] [--out DIR] [--open]``: (re)build a run's report and viewers.

With several run ids, one DMV-Bench report over runs that share a protocol (e.g. the main J = 5, 10,
15 run and the J = 50 pilot), written to ``reports/<A+B>/report/`` (no viewers; ``report.pool_first``
picks the J cells that pool the first sessions of longer chains); runs of different protocols are
refused in one line.

Reads the run's stored results, writes the viewers and the report into the store (as the run's
``report`` stage does), copies them to ``--out`` (default for stores that are not a local folder:
``<runs_dir>/<run_id>/report``) and prints where they are; ``--open`` opens the report in a browser.
Without ``--config``/``--preset`` the report settings are those the run recorded (its ``report``
section: a ``paper`` run keeps Table 10's DualMem vs M2A-lite pair, 10,000 resamples and its pooled
J cells), ``--set report.FIELD=...`` over them.
"""

from __future__ import annotations

import argparse
import json


def add_parser(sub: argparse._SubParsersAction) -> None:
    from vismem.pipelines.commands.run import add_config_args

    p = sub.add_parser("report", help="build the HTML/Markdown report of a run from its stored results",
                       description="Read runs/RUN_ID/results/*.parquet from the store, score them and write "
                                   "runs/RUN_ID/report/{index.html,summary.md,figures/,tables/} and the viewers "
                                   "(trajectories.html, samples.html); see `vismem runs` for run ids.")
    p.add_argument("run_id", metavar="RUN_ID", nargs="+",
                   help="the run whose results to report (see `vismem runs`); several: one DMV-Bench report over them")
    add_config_args(p)
    p.add_argument("--out", metavar="DIR", help="also copy the report (and viewers) to this local directory "
                   "(default for a store that is not a local folder: <runs_dir>/RUN_ID/report)")
    p.add_argument("--open", action="store_true", help="open the report in a web browser")
    p.add_argument("--no-viewers", action="store_true", help="skip the trajectory and sample viewers")
    p.add_argument("--json", action="store_true", help="print the report summary as JSON")
    p.set_defaults(func=_report)


def with_stage_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Give ``args`` the defaults of every stage's ``vismem run`` flags.

    ``config_from_args`` calls each stage's ``cli_overrides(args)``, which reads the flags that
    stage added to ``vismem run``; this parser does not have them, so their defaults are filled in.
    """
    from vismem.pipelines.stage import all_stages

    probe = argparse.ArgumentParser(add_help=False)
    for stage in all_stages():
        try:
            stage.add_cli_args(probe)
        except argparse.ArgumentError:
            continue
    try:
        defaults, _ = probe.parse_known_args([])
    except SystemExit:  # a stage with a required flag: nothing to fill in
        return args
    for k, v in vars(defaults).items():
        if not hasattr(args, k):
            setattr(args, k, v)
    return args


def _report(args: argparse.Namespace) -> int:
    import dataclasses

    from vismem.core.errors import VismemError
    from vismem.pipelines.commands.run import config_from_args
    from vismem.pipelines.manifest import read_manifest
    from vismem.pipelines.runner import open_store
    from vismem.pipelines.report.build import build, options_from, run_config
    from vismem.pipelines.report.viewers import local_report

    cfg = config_from_args(with_stage_defaults(args))
    run_ids = list(dict.fromkeys(args.run_id))
    with open_store(cfg, create=False) as (store, _env):
        for rid in run_ids:
            prefix = f"runs/{rid}"
            if not store.list(prefix + "/"):
                raise VismemError(f"run {rid!r} not found in store {store.uri} (nothing under {prefix}/); "
                                  "`vismem runs` lists the runs it holds")
        recorded = _recorded_report(store, run_ids) if args.config is None and args.preset is None else None
        if recorded is not None:
            cfg = config_from_args(args, base={"report": recorded})
        options = options_from(cfg)
        if len(run_ids) > 1:
            summary = _report_many(store, cfg, run_ids, options, args)
            return _print(summary, args, None, None)
        args.run_id = run_ids[0]
        # A damaged manifest is flagged, and the report built from the result tables alone ({}:
        # nothing downstream reads it again).
        manifest, problem = read_manifest(store, args.run_id)
        manifest = manifest or ({} if problem else None)
        if args.seed is None and manifest and isinstance(manifest.get("config"), dict):
            # Reporting an existing run: its own seed drives the bootstrap, as in the run's stage.
            run_seed = manifest["config"].get("seed")
            if isinstance(run_seed, int):
                options = dataclasses.replace(options, seed=run_seed)
        summary = build(store, args.run_id, options=options, manifest=manifest, viewers=not args.no_viewers,
                        config=run_config(manifest))
        index = local_report(store, cfg, args.run_id, args.out)
        copied = args.out is not None or not store.uri.startswith("file://")
        summary["out"] = str(index.parent) if copied and index else None
        summary["local_html"] = index.as_uri() if index else summary["html"]
        summary["manifest_problem"] = problem
    return _print(summary, args, problem, index)


def _recorded_report(store, run_ids: list[str]) -> dict | None:
    """The ``report`` settings the first of ``run_ids`` with a readable config ran with, so a paper
    run is reported as its own report stage did (Table 10's pinned pair, its resamples, the pooled
    J cells) without naming its preset again; ``--set report.*`` still wins. None when no run
    records one (a ``--config`` or ``--preset`` replaces them)."""
    from vismem.pipelines.manifest import read_manifest
    from vismem.pipelines.report.build import run_config

    for rid in run_ids:
        recorded = run_config(read_manifest(store, rid)[0])
        if recorded is not None:
            return recorded.report.model_dump(mode="json")
    return None


def _report_many(store, cfg, run_ids: list[str], options, args: argparse.Namespace) -> dict:
    """The combined report of ``run_ids`` (each run's manifest gives its protocol)."""
    from vismem.analysis.report import combined_id
    from vismem.pipelines.manifest import read_manifest
    from vismem.pipelines.report.build import build_many
    from vismem.pipelines.report.viewers import local_report

    manifests = {rid: read_manifest(store, rid)[0] for rid in run_ids}
    summary = build_many(store, run_ids, options=options, manifests=manifests, pool_first=cfg.report.pool_first)
    rid = summary["report_id"]
    index = local_report(store, cfg, combined_id(run_ids), args.out, prefix=f"reports/{rid}")
    summary["out"] = str(index.parent) if index and (args.out is not None or not store.uri.startswith("file://")) \
        else None
    summary["local_html"] = index.as_uri() if index else summary["html"]
    return summary


def _print(summary: dict, args: argparse.Namespace, problem: str | None, index) -> int:
    """Print the summary (``--json`` or lines) and open the report when asked."""
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        found = ', '.join(summary['found']) or 'none'
        print(f"report of {summary.get('report_id') or args.run_id}: {len(summary['found'])} result tables ({found}), "
              f"{summary['tables']} tables, {summary['figures']} figures")
        print(f"  report             {summary['local_html']}")
        if problem:
            print(f"  manifest           {problem} (report built from the result tables alone)")
        labels = {"trajectories": "trajectory viewer", "samples": "sample viewer"}
        for name in summary.get("viewers") or {}:
            print(f"  {labels.get(name, name):<18} {index.parent.as_uri()}/{summary['viewers'][name].rsplit('/', 1)[-1]}")
        for name, err in (summary.get("viewer_errors") or {}).items():
            print(f"  {name} viewer failed: {err}")
    if args.open:
        import webbrowser

        webbrowser.open(summary["local_html"])
    return 0
