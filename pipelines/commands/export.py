"""``vismem export RUN [--format jsonl|csv] [--out PATH]``: one record per sample, like ``--log_samples``.

Reads the run's result tables (as ``vismem report`` does), its MemShot ranking
(``runs/<id>/memshot/ranked.parquet``, for the retrieved units) and its probes' step logs from the
probe cache (what each probe's first recall step recalled) and writes one record per
(question, variant, k) and per (probe, architecture): the item, the variant, the retrieved items,
the prediction, the gold answer and the verdict (fields: :mod:`vismem.analysis.export`). Default
output: ``<runs_dir>/<run_id>/samples.<format>``; ``--out -`` writes to stdout.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    from vismem.pipelines.commands.run import add_config_args

    p = sub.add_parser("export", help="export a run's per-sample records (question/probe, variant, retrieved, "
                                      "prediction, verdict) as JSONL or CSV",
                       description="Write one record per (question, variant, k) and (probe, architecture) of a run: "
                                   "the item, the variant, the retrieved units, the prediction, the gold answer and "
                                   "the verdict, like lm-evaluation-harness --log_samples.")
    p.add_argument("run_id", metavar="RUN", help="the run to export (see `vismem runs`)")
    add_config_args(p)
    p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl", help="output format (default jsonl)")
    p.add_argument("--out", metavar="PATH", help="output file, `-` for stdout (default: <runs_dir>/RUN/samples.FORMAT)")
    p.add_argument("--no-recalled", action="store_true",
                   help="do not read the probes' step logs (one object per probe unit; a paper-sized run has "
                        "thousands): DMV-Bench records then have no retrieved products")
    p.set_defaults(func=_export, stages=[])


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    import polars as pl

    from vismem.analysis.export import sample_parts, samples, to_csv, to_jsonl
    from vismem.core.errors import DataError
    from vismem.core.paths import local_dir
    from vismem.pipelines.commands.compare import load_run
    from vismem.pipelines.commands.run import config_from_args
    from vismem.pipelines.runner import open_store

    cfg = config_from_args(args)
    with open_store(cfg, create=False) as (store, _env):
        tables, _manifest = load_run(store, args.run_id)
        ranked_key = f"runs/{args.run_id}/memshot/ranked.parquet"
        ranked = store.read_table(ranked_key) if store.exists(ranked_key) else None
        probes = tables.get("probes")
        if probes is not None and probes.height and not args.no_recalled:
            from vismem.pipelines.dmv.probelogs import first_recalled

            tables = {**tables, "probes": probes.with_columns(
                pl.Series("retrieved", first_recalled(store, probes), dtype=pl.List(pl.String)))}
    parts = sample_parts(tables, ranked)
    if not parts:
        raise DataError(f"run {args.run_id!r} has no per-sample results (no memshot_answers, memshot_recall "
                        f"or probes table; it has {', '.join(sorted(tables))})")
    data = to_jsonl(parts) if args.format == "jsonl" else to_csv(samples(tables, ranked))
    n = sum(p.height for p in parts)
    if args.out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return 0
    out = Path(args.out) if args.out else local_dir(cfg.runs_dir) / args.run_id / f"samples.{args.format}"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(out)
    counts = ", ".join(f"{p['benchmark'][0]} {p.height:,}" for p in parts)
    print(f"{n:,} samples of {args.run_id} ({counts}) -> {out}")
    return 0
