"""``vismem data`` (what is present and verified) and ``vismem data fetch NAME`` (download it).

Both work on the run's data dir (``data_dir`` of the config, ``--data-dir`` to override): the
folder ``vismem run`` reads by default (:func:`vismem.core.paths.default_data_dir`), named with
why it is that one. Pins, licences and layout: :mod:`vismem.pipelines.datafetch`.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    from vismem.pipelines.commands.run import add_config_args

    p = sub.add_parser("data", help="list the datasets in the data dir (present, verified), or fetch one",
                       description="Without a subcommand: each dataset vismem knows, whether its files are in the "
                                   "data dir and match their pinned SHA-256. `vismem data fetch NAME` downloads one.")
    add_config_args(p)
    p.add_argument("--data-dir", metavar="DIR", help="data dir (default: the config's data_dir, which runs read)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=_list, stages=[])
    dsub = p.add_subparsers(dest="data_command", metavar="{fetch}")
    f = dsub.add_parser("fetch", help="download a dataset from its canonical source (pinned, resumable)",
                        description="Download NAME's files into the data dir from their canonical URLs, check each "
                                    "against its pinned size and SHA-256, print the licence. An interrupted "
                                    "download resumes where it stopped.")
    f.add_argument("name", metavar="NAME", help="locomo, dmv-bench, longmemeval-s, longmemeval-m, longmemeval-oracle")
    add_config_args(f)
    f.add_argument("--data-dir", metavar="DIR", help="data dir (default: the config's data_dir, which runs read)")
    f.set_defaults(func=_fetch, stages=[])


def _data_dir(args: argparse.Namespace):
    """The data dir the command works on, and why it is that one (one phrase)."""
    from pathlib import Path

    from vismem.core.paths import DEFAULT_DATA_DIR, default_data_dir
    from vismem.pipelines.commands.run import config_from_args
    from vismem.pipelines.context import resolve_data_dir

    if args.data_dir:
        return Path(args.data_dir).resolve(), "--data-dir"
    cfg = config_from_args(args)
    if str(cfg.data_dir) == DEFAULT_DATA_DIR:
        return default_data_dir()
    return resolve_data_dir(cfg), f"data_dir of the config: {cfg.data_dir}"


def _list(args: argparse.Namespace) -> int:
    from vismem.pipelines.datafetch import status

    data_dir, why = _data_dir(args)
    rows = status(data_dir)
    if args.json:
        print(json.dumps({"data_dir": str(data_dir), "data_dir_from": why, "datasets": rows}, indent=2))
        return 0
    print(f"datasets in {data_dir} ({why}):")
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        hint = f"  (vismem data fetch {r['name']})" if r["state"] in ("missing", "partial") else ""
        print(f"  {r['name']:<{width}}  {r['state']}{hint}")
        if r["state"] == "present, unverified":
            print(f"  {'':<{width}}  no pinned sha256: {r['note']}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from vismem.pipelines.datafetch import dataset, fetch

    ds = dataset(args.name)  # an unknown name fails before anything is created
    data_dir, why = _data_dir(args)
    print(f"data dir: {data_dir} ({why})")
    print(f"{ds.name}: licence {ds.licence}")
    import time

    last = {"t": time.monotonic()}

    def progress(path: str, done: int, size: int | None) -> None:
        now = time.monotonic()
        if now - last["t"] >= 2.0:  # a line every few seconds, whatever the terminal
            last["t"] = now
            total = f" of {size / 2**20:,.1f}" if size else ""
            print(f"  {path}: {done / 2**20:,.1f}{total} MiB", file=sys.stderr, flush=True)

    for path, what in fetch(ds.name, data_dir, progress=progress):
        print(f"  {what:<10} {data_dir / path}")
    if ds.note:
        print(f"  note: {ds.note}")
    return 0
