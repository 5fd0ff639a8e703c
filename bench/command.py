"""``vismem bench [NAME ...] --out FILE.json``: run named benchmarks, print a table, write JSON;
``vismem bench --compare OLD.json NEW.json``: what moved between two recorded runs."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks", description="Run named benchmarks (all when none is named), "
                       "print a table and write a JSON list of records.")
    p.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (see --list)")
    p.add_argument("--out", default="bench/results/latest.json", metavar="FILE.json", help="where to write the records")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    p.add_argument("--compare", nargs=2, metavar=("OLD.json", "NEW.json"),
                   help="show what moved between two recorded runs (ratios and other machine-independent "
                   "figures, not absolute times) and exit")
    p.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from vismem.bench.harness import load_all, print_table, run_benchmarks, write_records
    from vismem.core.errors import ConfigError

    if args.compare:
        return _compare(*args.compare)
    BENCHMARKS = load_all()
    if args.list:
        for name, b in sorted(BENCHMARKS.items()):
            print(f"{name:28s} {b.description}")
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        raise ConfigError(f"unknown benchmark(s) {unknown}; allowed: {', '.join(sorted(BENCHMARKS))}")
    records = run_benchmarks(args.names or sorted(BENCHMARKS))
    print_table(records)
    write_records(records, args.out)
    failed = [r for r in records if r.get("error")]
    return 1 if failed else 0


def _compare(old: str, new: str) -> int:
    import json
    from pathlib import Path

    from vismem.bench.ratios import compare_report
    from vismem.core.errors import ConfigError

    runs = []
    for path in (old, new):
        try:
            recs = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise ConfigError(f"--compare: cannot read {path}: {err}") from None
        if not isinstance(recs, list) or not all(isinstance(r, dict) and {"name", "metric", "value"} <= r.keys()
                                                 for r in recs):
            raise ConfigError(f"--compare: {path} is not a list of benchmark records (vismem bench --out writes one)")
        runs.append(recs)
    print(compare_report(*runs))
    return 0
