"""``vismem store ls``: list what a store holds."""

from __future__ import annotations

import argparse

from pipelines.commands.run import add_config_args, config_from_args


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="inspect the object store", description="Inspect the run's object store.")
    ssub = p.add_subparsers(dest="store_command", metavar="ACTION")
    ssub.required = True
    ls = ssub.add_parser("ls", help="list keys under a prefix", description="List keys (and sizes) under a prefix.")
    ls.add_argument("prefix", nargs="?", default="", help="key prefix, e.g. runs/ or memshot/shots/")
    add_config_args(ls)
    ls.add_argument("--limit", type=int, default=200, help="print at most this many keys (0: all)")
    ls.set_defaults(func=_ls, stages=[])


def _ls(args: argparse.Namespace) -> int:
    from pipelines.runner import open_store

    cfg = config_from_args(args)
    with open_store(cfg) as (store, _env):
        keys = store.list(args.prefix)
        shown = keys if args.limit == 0 else keys[: args.limit]
        for k in shown:
            print(k)
        if len(shown) < len(keys):
            print(f"... {len(keys) - len(shown)} more ({len(keys)} keys under {store.url(args.prefix) if args.prefix else store.uri})")
    return 0
