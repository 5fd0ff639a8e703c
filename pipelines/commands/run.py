"""``vismem run [STAGE ...]``: run a config locally (or attached to a cluster)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from vismem.pipelines.stage import STAGE_ORDER, all_stages

if TYPE_CHECKING:
    from vismem.core.store import Store


def add_config_args(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``run`` and ``submit``: where the config comes from and overrides."""
    p.add_argument("--config", "-c", metavar="FILE", help="run config YAML (may name a `preset:` base)")
    p.add_argument("--preset", choices=("local", "paper"), help="named preset to start from (default: local)")
    p.add_argument("--store", metavar="URI", help="store root: local-s3://BUCKET, s3://BUCKET/PREFIX or file:///PATH")
    p.add_argument("--address", metavar="ADDR", help="attach to this Ray cluster instead of starting a local Ray")
    p.add_argument("--seed", type=int, help="root seed of the run")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override any config field, e.g. --set memshot.k=[5,10] (repeatable)")


def config_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None) -> Any:
    """The run config the flags describe; ``base`` (nested fields) lies under the flags' overrides."""
    from vismem.pipelines.config import deep_merge, dotted_overrides, load_config

    over: dict[str, Any] = deep_merge(base or {}, dotted_overrides(args.overrides))
    if getattr(args, "store", None):
        over = deep_merge(over, {"store": {"uri": args.store}})
    if getattr(args, "address", None):
        over = deep_merge(over, {"ray": {"address": args.address, "mode": "cluster"}})
    if getattr(args, "seed", None) is not None:
        over["seed"] = args.seed
    stages = list(getattr(args, "stages", None) or [])
    if stages:
        over["stages"] = stages
    for stage in all_stages():
        over = deep_merge(over, stage.cli_overrides(args) or {})
    return load_config(args.config, preset=args.preset, overrides=over)


def fetch_inputs(cfg: Any) -> None:
    """Before any work (and before the run id, which hashes them): the small pinned datasets the
    config's stages read and its data dir lacks are fetched, one line each on stderr."""
    import sys

    from vismem.pipelines.datafetch import fetch_run_inputs

    fetch_run_inputs(cfg, echo=lambda line: print(line, file=sys.stderr, flush=True))


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
    p.add_argument("--json", action="store_true",
                   help="print the stages' summaries as JSON (machine-readable) instead of the summary tables")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="let Ray Data and transformers log to the terminal (by default they go to the run log)")
    for stage in all_stages():
        stage.add_cli_args(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import time

    from vismem.core.errors import ConfigError, did_you_mean

    bad = [s for s in args.stages if s not in STAGE_ORDER]
    if bad:
        hint = did_you_mean(bad[0], STAGE_ORDER)
        raise ConfigError(f"unknown stage(s) {bad}{hint}; allowed: {', '.join(STAGE_ORDER)}")
    cfg = config_from_args(args)
    fetch_inputs(cfg)
    if args.print_config:
        import yaml

        from vismem.core.secrets import redact

        # Printed configs end up in terminals, CI logs and bug reports: secrets shown as ***.
        print(f"# run id: {cfg.run_id}")
        print(yaml.safe_dump(redact(cfg.model_dump(mode="json")), sort_keys=False), end="")
        return 0
    from vismem.pipelines import logs
    from vismem.pipelines.runner import run

    log_path = logs.run_log_path(cfg)
    quiet = logs.quiet(log_path, verbose=args.verbose)
    t0 = time.perf_counter()

    def after(store: "Store", res: dict[str, Any]) -> dict[str, Any]:  # in the run's still-open store
        return finish(cfg, res, store=store, wall_s=time.perf_counter() - t0, run_log=str(log_path))

    try:
        results = run(cfg, progress=not args.no_progress, after=after)
    finally:
        quiet.restore()
    summary = results.pop("_after")
    if args.json:
        print(json.dumps({**results, "_summary": summary}, indent=2, default=str))
    else:
        from vismem.pipelines.summary import render

        render(summary)
    if results.get("_partial"):
        from vismem.core.errors import VismemError

        why = "; ".join(f"{k}: {v}" for k, v in (results.get("_failures") or {}).items())
        raise VismemError(f"stage(s) {', '.join(results['_partial'])} finished partially"
                          + (f" ({why})" if why else "") + f"; failed shards are listed above and in "
                          f"runs/{cfg.run_id}/manifest.json; re-run to retry them")
    return 0


def finish(cfg: Any, results: dict[str, Any], *, store: "Store", wall_s: float, run_log: str | None) -> dict[str, Any]:
    """After a run's stages, in its still-open ``store``: read the manifest and result tables
    back, bring the report to a local folder.

    A store that is not a local folder (the default private S3 server, which is gone once the
    run ends, or a remote bucket) gets its report -- viewers included -- copied to
    ``<runs_dir>/<run_id>/report/``, so the printed ``file://`` paths open in a browser.
    Returns :func:`vismem.pipelines.summary.collect`'s summary.
    """
    from vismem.analysis.report import load_results
    from vismem.pipelines.report.build import options_from
    from vismem.pipelines.summary import collect
    from vismem.pipelines.report.viewers import local_report

    prefix = f"runs/{cfg.run_id}"
    report, viewers = None, {}
    manifest = store.get_json(f"{prefix}/manifest.json") if store.exists(f"{prefix}/manifest.json") else None
    tables, _errors = load_results(store, prefix)
    rep = results.get("report")
    if isinstance(rep, dict) and rep.get("html"):
        names = {k: v.rsplit("/", 1)[-1] for k, v in (rep.get("viewers") or {}).items()}
        index = local_report(store, cfg, cfg.run_id)
        if index is not None:
            base = index.parent.as_uri()
            report = f"{base}/index.html"
            viewers = {k: f"{base}/{v}" for k, v in names.items()}
    uri = store.uri
    return collect(results, manifest=manifest, tables=tables, options=options_from(cfg), wall_s=wall_s,
                   store_uri=cfg.store.uri if cfg.store.uri.startswith("local-s3://") else uri, run_id=cfg.run_id,
                   report=report, viewers=viewers, run_log=run_log)
