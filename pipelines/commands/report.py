"""``vismem report RUN_ID [--store URI]``: (re)build a run's report from its stored results."""

from __future__ import annotations

import argparse
import json


def add_parser(sub: argparse._SubParsersAction) -> None:
    from pipelines.commands.run import add_config_args

    p = sub.add_parser("report", help="build the HTML/Markdown report of a run from its stored results",
                       description="Read runs/RUN_ID/results/*.parquet from the store, score them and write "
                                   "runs/RUN_ID/report/{index.html,summary.md,figures/,tables/}.")
    p.add_argument("run_id", metavar="RUN_ID", help="the run whose results to report (see `vismem run --print-config`)")
    add_config_args(p)
    p.add_argument("--out", metavar="DIR", help="also copy the report to this local directory")
    p.set_defaults(func=_report)


def _with_stage_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Give ``args`` the defaults of every stage's ``vismem run`` flags.

    ``config_from_args`` calls each stage's ``cli_overrides(args)``, which reads the flags that
    stage added to ``vismem run``; this parser does not have them, so their defaults are filled in.
    """
    from pipelines.stages import all_stages

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
    from pathlib import Path

    from analysis.report import report_run
    from pipelines.commands.run import config_from_args
    from core.errors import VismemError
    from pipelines.runner import open_store
    from pipelines.stages.report import options_from

    cfg = config_from_args(_with_stage_defaults(args))
    with open_store(cfg) as (store, _env):
        prefix = f"runs/{args.run_id}"
        if not store.list(prefix + "/"):
            raise VismemError(f"run {args.run_id!r} not found in store {store.uri} (nothing under {prefix}/)")
        options = options_from(cfg)
        manifest_key = f"{prefix}/manifest.json"
        if args.seed is None and store.exists(manifest_key):
            # Reporting an existing run: its own seed drives the bootstrap, as in the run's stage.
            run_seed = (store.get_json(manifest_key).get("config") or {}).get("seed")
            if isinstance(run_seed, int):
                options = dataclasses.replace(options, seed=run_seed)
        summary = report_run(store, args.run_id, options=options)
        if args.out:
            out = Path(args.out)
            for key in store.list(prefix + "/report/"):
                dest = out / key[len(prefix + "/report/"):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(store.get_bytes(key))
            summary["out"] = str(out.resolve())
    print(json.dumps(summary, indent=2, default=str))
    return 0
