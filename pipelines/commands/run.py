"""``vismem run [STAGE ...]``: run a config locally (or attached to a cluster)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipelines.stages import STAGE_ORDER, all_stages


def add_config_args(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``run`` and ``submit``: where the config comes from and overrides."""
    p.add_argument("--config", "-c", metavar="FILE", help="run config YAML (may name a `preset:` base)")
    p.add_argument("--preset", choices=("local", "paper"), help="named preset to start from (default: local)")
    p.add_argument("--store", metavar="URI", help="store root: local-s3://BUCKET, s3://BUCKET/PREFIX or file:///PATH")
    p.add_argument("--address", metavar="ADDR", help="attach to this Ray cluster instead of starting a local Ray")
    p.add_argument("--seed", type=int, help="root seed of the run")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override any config field, e.g. --set memshot.k=[5,10] (repeatable)")


def config_from_args(args: argparse.Namespace) -> Any:
    from pipelines.config import _deep_merge, dotted_overrides, load_config

    over: dict[str, Any] = dotted_overrides(args.overrides)
    if getattr(args, "store", None):
        over = _deep_merge(over, {"store": {"uri": args.store}})
    if getattr(args, "address", None):
        over = _deep_merge(over, {"ray": {"address": args.address, "mode": "cluster"}})
    if getattr(args, "seed", None) is not None:
        over["seed"] = args.seed
    stages = list(getattr(args, "stages", None) or [])
    if stages:
        over["stages"] = stages
    for stage in all_stages():
        over = _deep_merge(over, stage.cli_overrides(args) or {})
    return load_config(args.config, preset=args.preset, overrides=over)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run stages of a config (default: every stage of the local preset)",
        description="Run a vismem config. With no STAGE, runs the config's stages in order: "
        + ", ".join(STAGE_ORDER) + ". Re-running resumes: finished work is skipped.",
    )
    p.add_argument("stages", nargs="*", metavar="STAGE", help=f"stages to run ({', '.join(STAGE_ORDER)})")
    add_config_args(p)
    p.add_argument("--print-config", action="store_true", help="print the resolved config and run id, run nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    for stage in all_stages():
        stage.add_cli_args(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from core.errors import ConfigError

    bad = [s for s in args.stages if s not in STAGE_ORDER]
    if bad:
        raise ConfigError(f"unknown stage(s) {bad}; allowed: {', '.join(STAGE_ORDER)}")
    cfg = config_from_args(args)
    if args.print_config:
        print(f"# run id: {cfg.run_id}")
        print(cfg.to_yaml(), end="")
        return 0
    from pipelines.runner import run

    results = run(cfg, progress=not args.no_progress)
    print(json.dumps(results, indent=2, default=str))
    if results.get("_partial"):
        from core.errors import VismemError

        raise VismemError(f"stage(s) {', '.join(results['_partial'])} finished partially (failed shards are "
                          f"listed above and in runs/{cfg.run_id}/manifest.json); re-run to retry them")
    return 0
