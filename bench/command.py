"""``vismem bench [NAME ...] --out FILE.json``: run named benchmarks, print a table, write JSON."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks", description="Run named benchmarks (all when none is named), "
                       "print a table and write a JSON list of records.")
    p.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (see --list)")
    p.add_argument("--out", default="bench/results/latest.json", metavar="FILE.json", help="where to write the records")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    p.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from vismem.bench.harness import load_all, print_table, run_benchmarks, write_records
    from vismem.core.errors import ConfigError

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
