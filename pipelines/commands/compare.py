"""``vismem compare RUN_A RUN_B``: metric deltas between two runs, with paired CIs and flipped items.

Reads both runs' result tables from the store (as ``vismem report`` does), pairs the questions /
probes they share and prints, per cell, B − A with a paired bootstrap interval seeded from the
run's seed (run A's, unless ``--seed`` is given); writes a short HTML page (``--out``, default
``<runs_dir>/compare/<A>--<B>.html``); ``--json`` prints everything as JSON.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:
    from vismem.pipelines.commands.run import add_config_args

    p = sub.add_parser("compare", help="compare two runs: metric deltas with paired CIs and the items that flipped",
                       description="Pair the questions (MemShot) and probes (DMV-Bench) two runs both scored and "
                                   "print B − A per cell with a paired bootstrap 95% CI, and the items that were a "
                                   "hit in one run and a miss in the other; see `vismem runs` for run ids.")
    p.add_argument("run_a", metavar="RUN_A", help="the baseline run")
    p.add_argument("run_b", metavar="RUN_B", help="the run compared against it")
    add_config_args(p)
    p.add_argument("--out", metavar="FILE", help="write the HTML page here (default: <runs_dir>/compare/A--B.html)")
    p.add_argument("--flips", type=int, default=10, metavar="N", help="flipped items printed per kind (default 10)")
    p.add_argument("--json", action="store_true", help="print deltas and flips as JSON")
    p.set_defaults(func=_compare)


def load_run(store: Any, run_id: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(tables, manifest)`` of a stored run; a run with nothing stored is a one-line error."""
    from vismem.analysis.report import display_names, load_results, rename_backends
    from vismem.core.errors import DataError, VismemError

    prefix = f"runs/{run_id}"
    if not store.list(prefix + "/"):
        raise VismemError(f"run {run_id!r} not found in store {store.uri} (nothing under {prefix}/); "
                          "`vismem runs` lists the runs it holds")
    tables, errors = load_results(store, prefix)
    if not tables:
        detail = "; ".join(f"{k}: {v}" for k, v in errors.items()) or "no result tables"
        raise DataError(f"run {run_id!r} has no readable results ({detail})")
    from vismem.pipelines.manifest import read_manifest

    manifest, _problem = read_manifest(store, run_id)  # a damaged one: compared without it
    # Back-ends by their readable names: a cache slug carries a hash of its config, which two runs
    # comparing the same model under different settings do not share.
    return rename_backends(tables, display_names(tables)), (manifest or None)


def run_seed(args_seed: int | None, manifest: dict[str, Any] | None, default: int) -> int:
    """The bootstrap seed: ``--seed``, else the run's own seed, else the config's."""
    if args_seed is not None:
        return args_seed
    s = ((manifest or {}).get("config") or {}).get("seed")
    return s if isinstance(s, int) else default


def _print(result: dict[str, Any], run_a: str, run_b: str, n_flips: int, html_path: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from vismem.analysis.compare_html import fmt_delta, split_cells

    console = Console()
    for kind in ("probes", "memshot_answers", "memshot_recall"):
        if kind not in result:
            continue
        const, varying = split_cells(result[kind])
        fixed = " ".join(f"{k}={v}" for k, v in const.items())
        t = Table(title=f"{kind}: {run_b} (B) − {run_a} (A), percentage points; {fixed}", title_justify="left",
                  show_edge=False)
        # A cell's names (architecture, variant) keep their width, so none is cut to an ellipsis on
        # an 80-column log; the numbers give way instead.
        widths = {c: min(40, max(len(c), *(len(str(v)) for v in result[kind][c].to_list()))) for c in varying}
        for col, just in (*((c, "left") for c in varying), ("metric", "left"), ("n", "right"), ("A", "right"),
                          ("B", "right"), ("Δ [95% CI]", "right"), ("lost", "right"), ("gained", "right")):
            t.add_column(col, justify=just, no_wrap=col.startswith("Δ"), min_width=widths.get(col), overflow="fold")
        for r in result[kind].iter_rows(named=True):
            t.add_row(*("" if r[c] is None else str(r[c]) for c in varying), r["metric"], str(r["n"]),
                      f"{100 * r['a']:.1f}", f"{100 * r['b']:.1f}",
                      fmt_delta(r), "" if r["lost"] is None else str(r["lost"]),
                      "" if r["gained"] is None else str(r["gained"]))
        console.print(t, markup=False)
        f = result.get(kind + "_flips")
        if f is not None and f.height:
            print(f"{f.height} flipped items ({kind}); first {min(n_flips, f.height)}:")
            for r in f.head(n_flips).iter_rows(named=True):
                print("  " + " ".join(f"{k}={v}" for k, v in r.items() if v is not None))
    print(f"comparison page: {html_path}")


def _compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vismem.analysis.compare import compare_tables
    from vismem.analysis.compare_html import compare_html
    from vismem.core.errors import DataError
    from vismem.core.paths import local_dir
    from vismem.pipelines.commands.report import with_stage_defaults
    from vismem.pipelines.commands.run import config_from_args
    from vismem.pipelines.report.build import options_from
    from vismem.pipelines.runner import open_store

    cfg = config_from_args(with_stage_defaults(args))
    options = options_from(cfg)
    with open_store(cfg, create=False) as (store, _env):
        ta, manifest = load_run(store, args.run_a)
        tb, _ = load_run(store, args.run_b)
    seed = run_seed(args.seed, manifest, options.seed)
    result = compare_tables(ta, tb, n_resamples=options.n_resamples, seed=seed,
                            exclude_categories=options.exclude_categories)
    if not any(not k.endswith("_flips") for k in result):
        raise DataError(f"runs {args.run_a!r} ({', '.join(sorted(ta))}) and {args.run_b!r} ({', '.join(sorted(tb))}) "
                        "share no scored questions or probes: nothing to compare")
    out = Path(args.out) if args.out else local_dir(cfg.runs_dir) / "compare" / f"{args.run_a}--{args.run_b}.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(compare_html(result, args.run_a, args.run_b, seed=seed, n_resamples=options.n_resamples),
                   encoding="utf-8")
    tmp.replace(out)
    if args.json:
        print(json.dumps({"run_a": args.run_a, "run_b": args.run_b, "seed": seed, "n_resamples": options.n_resamples,
                          "html": str(out),
                          "deltas": {k: v.to_dicts() for k, v in result.items() if not k.endswith("_flips")},
                          "flips": {k[:-len("_flips")]: v.to_dicts() for k, v in result.items()
                                    if k.endswith("_flips")}}, indent=2, default=str))
    else:
        _print(result, args.run_a, args.run_b, args.flips, str(out))
    return 0
