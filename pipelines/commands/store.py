"""``vismem store ls|get|cat|verify``: look into the object store a run wrote, check its caches.

``ls PREFIX`` lists keys with their sizes (and a total); ``get KEY [DEST]`` copies an object,
or every object under a prefix, to a local path; ``cat KEY`` prints an object: Parquet as a
table (``--columns A,B``, ``--csv``), JSON pretty-printed, anything else as it is. With the
default ``local-s3://`` store each command starts the private S3 server on the run folder's data
for the command's duration, or reads through the one a running run holds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from vismem.pipelines.commands.run import add_config_args, config_from_args

if TYPE_CHECKING:
    from vismem.core.store import Store


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="inspect the object store", description="Inspect the run's object store.")
    ssub = p.add_subparsers(dest="store_command", metavar="ACTION")
    ssub.required = True
    ls = ssub.add_parser("ls", help="list keys (and sizes) under a prefix",
                         description="List keys and their sizes under a prefix, then the count and total size.")
    ls.add_argument("prefix", nargs="?", default="", help="key prefix, e.g. runs/ or memshot/shots/")
    add_config_args(ls)
    ls.add_argument("--limit", type=int, default=200, help="print at most this many keys (0: all)")
    ls.add_argument("--keys", action="store_true", help="keys only, no sizes or total (for scripts)")
    ls.set_defaults(func=_ls, stages=[])
    get = ssub.add_parser("get", help="copy an object (or a prefix) to a local path",
                          description="Copy KEY to DEST (default: its file name in the current folder). When KEY "
                                      "is a prefix, every object under it is copied into the folder DEST.")
    get.add_argument("key", help="store key or prefix, e.g. runs/RUN_ID/report/")
    get.add_argument("dest", nargs="?", help="local file or folder ('-': stdout, objects only)")
    add_config_args(get)
    get.set_defaults(func=_get, stages=[])
    cat = ssub.add_parser("cat", help="print an object (Parquet as a table, JSON pretty)",
                          description="Print an object: Parquet as a table (--rows rows), JSON indented, "
                                      "anything else byte for byte (--raw: always byte for byte).")
    cat.add_argument("key", help="store key, e.g. runs/RUN_ID/results/probes.parquet")
    cat.add_argument("--rows", type=int, default=None, help="Parquet rows to show (default 20, with --csv all; 0: all)")
    cat.add_argument("--columns", metavar="A,B", help="Parquet: only these columns, in this order")
    cat.add_argument("--csv", action="store_true",
                     help="Parquet: print CSV (lists and structs as JSON) instead of a table")
    cat.add_argument("--raw", action="store_true", help="bytes as stored, whatever the type")
    add_config_args(cat)
    cat.set_defaults(func=_cat, stages=[])
    ver = ssub.add_parser("verify", help="check every cached unit against its done marker",
                          description="Check every finished trajectory and probe unit and every rendered MemShot "
                                      "session: each object's size and SHA-256 against what its done marker (a "
                                      "session's shard) recorded; and every content-addressed image blob against "
                                      "the digest its key names; and every DMV-Bench catalogue image against the "
                                      "sha256 its catalog.parquet recorded. Prints one line per damaged unit or blob; exits 1 "
                                      "when any is damaged. --discard drops their markers so the next run redoes "
                                      "them, and deletes a damaged blob with every cached session that showed it "
                                      "(and the probe units that read those) so the next encode run browses them "
                                      "again, and deletes a damaged catalogue image so the next catalog run renders it "
                                      "again (a run also heals what it reads).")
    ver.add_argument("prefix", nargs="*", help="cache roots to check (default: trajectories probes runs blobs catalog)")
    ver.add_argument("--discard", action="store_true",
                     help="drop the done markers of damaged units; delete damaged blobs (and what showed them) "
                          "and damaged catalogue images")
    add_config_args(ver)
    ver.set_defaults(func=_verify, stages=[])


def human(n: int) -> str:
    """Bytes as ``512 B`` / ``3.4 KiB`` / ``1.2 MiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def sized_keys(store: "Store", prefix: str) -> Iterator[tuple[str, int]]:
    """``(key, bytes)`` under ``prefix`` in key order, through the store's Arrow filesystem (one
    listing; S3 returns sizes with the listing)."""
    import pyarrow.fs as pafs

    fs = store.arrow_filesystem()
    root = store.arrow_path()
    base = store.arrow_path(prefix) if prefix.strip("/") else root
    infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    files = sorted((i.path, i.size or 0) for i in infos if i.type == pafs.FileType.File)
    cut = len(root.rstrip("/")) + 1
    for path, size in files:
        key = path[cut:]
        name = key.rsplit("/", 1)[-1]
        if name.startswith(".") and name.endswith(".tmp"):  # the store's in-flight writes
            continue
        yield key, size


def _ls(args: argparse.Namespace) -> int:
    from vismem.pipelines.runner import open_store

    cfg = config_from_args(args)
    with open_store(cfg, create=False) as (store, _env):
        if args.keys:
            keys = store.list(args.prefix)
            for k in keys if args.limit == 0 else keys[: args.limit]:
                print(k)
            return 0
        items = list(sized_keys(store, args.prefix))
        shown = items if args.limit == 0 else items[: args.limit]
        width = max((len(human(s)) for _, s in shown), default=1)
        for k, size in shown:
            print(f"{human(size):>{width}}  {k}")
        where = store.url(args.prefix) if args.prefix.strip("/") else store.uri
        more = f" ({len(items) - len(shown)} not shown; --limit 0 lists all)" if len(shown) < len(items) else ""
        print(f"{len(items):,} object{'' if len(items) == 1 else 's'}, {human(sum(s for _, s in items))} "
              f"under {where}{more}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from vismem.core.blobref import BLOB_ROOT
    from vismem.core.cache import CACHE_ROOTS, verify_store
    from vismem.pipelines.dmv.catalog_job import verify_catalogue
    from vismem.pipelines.dmv.trajectories import verify_blobs
    from vismem.pipelines.memshot.shotcache import verify_renders
    from vismem.pipelines.runner import open_store

    cfg = config_from_args(args)
    with open_store(cfg, create=False) as (store, _env):  # a running local-s3 run's server is shared
        checked, problems = verify_store(store, args.prefix or CACHE_ROOTS, discard=args.discard)
        for prefix in args.prefix or ["runs"]:  # rendered sessions live under their run
            n, bad = verify_renders(store, prefix, discard=args.discard)
            checked, problems = checked + n, problems + bad
        if not args.prefix or any(p.strip("/") in ("blobs", BLOB_ROOT) for p in args.prefix):
            n, bad = verify_blobs(store, discard=args.discard)  # images agents observed: key = digest
            checked, problems = checked + n, problems + bad
        catalogues = [p for p in args.prefix if p.strip("/").split("/")[0] == "catalog"]
        for prefix in catalogues or ([] if args.prefix else ["catalog"]):
            n, bad = verify_catalogue(store, prefix.strip("/"), discard=args.discard)  # vs catalog.parquet
            checked, problems = checked + n, problems + bad
    for line in problems:
        print(line + ("  (discarded)" if args.discard else ""))
    print(f"{checked:,} cached unit{'' if checked == 1 else 's'} checked, {len(problems)} damaged")
    return 1 if problems else 0


def _get(args: argparse.Namespace) -> int:
    from vismem.core.errors import VismemError
    from vismem.core.storeget import copy_out
    from vismem.pipelines.runner import open_store

    cfg = config_from_args(args)
    with open_store(cfg, create=False) as (store, _env):
        key = args.key.strip("/")
        if store.exists(key) and not args.key.endswith("/"):
            if args.dest == "-":
                _to_stdout(store, key)
                return 0
            dest = Path(args.dest or key.rsplit("/", 1)[-1])
            if dest.is_dir():
                dest = dest / key.rsplit("/", 1)[-1]
            print(f"{human(copy_out(store, key, dest))}  {store.url(key)} -> {dest}")
            return 0
        keys = store.list(key)
        if not keys:
            raise VismemError(f"nothing at {store.url(key) if key else store.uri} (no object, no prefix); "
                              "see `vismem store ls`")
        if args.dest == "-":
            raise VismemError(f"{key} is a prefix of {len(keys)} objects: give a folder, not '-'")
        dest = Path(args.dest or key.rsplit("/", 1)[-1])
        total = 0
        for k in keys:  # each file whole or not at all; those copied before a failure stay
            total += copy_out(store, k, dest / k[len(key):].lstrip("/"))
        print(f"{len(keys):,} objects, {human(total)}  {store.url(key)}/ -> {dest}/")
    return 0


def _to_stdout(store: "Store", key: str) -> None:
    """Stream ``key`` to stdout; a content-addressed blob is spooled to a temporary file and
    checked first, so a damaged one prints nothing (a pipe cannot take bytes back)."""
    import shutil
    import tempfile

    from vismem.core.blobref import blob_digest
    from vismem.core.storeget import CHUNK, write_out

    out = sys.stdout.buffer
    if blob_digest(key) is None:  # (a reference's span of a blob cannot be checked, nor is it elsewhere)
        write_out(store, key, out)
        return
    with tempfile.TemporaryFile() as spool:
        write_out(store, key, spool, tail="; nothing was written")
        spool.seek(0)
        shutil.copyfileobj(spool, out, CHUNK)


def _cat(args: argparse.Namespace) -> int:
    import json

    from vismem.core.bounds import TABLE_BYTES
    from vismem.core.errors import ConfigError, VismemError
    from vismem.pipelines.runner import open_store

    tabular = args.columns is not None or args.csv
    if tabular and (args.raw or not args.key.endswith(".parquet")):
        raise ConfigError(f"--columns and --csv apply to Parquet objects, not {args.key}" +
                          (" printed --raw" if args.raw else ""))
    cfg = config_from_args(args)
    with open_store(cfg, create=False) as (store, _env):
        if not store.exists(args.key):
            raise VismemError(f"no object {store.url(args.key)}; see `vismem store ls`")
        table = args.key.endswith(".parquet") and not args.raw
        data = store.get_bytes(args.key, bound=TABLE_BYTES if table else None)  # a table is bounded
    if args.raw:
        sys.stdout.buffer.write(data)
    elif args.key.endswith(".parquet"):
        _cat_table(data, args)
    elif args.key.endswith(".json"):
        print(json.dumps(json.loads(data), indent=2, sort_keys=True))
    else:
        sys.stdout.buffer.write(data)
    return 0


def _cat_table(data: bytes, args: argparse.Namespace) -> None:
    """A Parquet object as a table or (``--csv``) CSV, its ``--columns`` only, ``--rows`` of it."""
    import polars as pl

    from vismem.core.errors import ConfigError, did_you_mean
    from vismem.core.parquetio import decode_table

    df = decode_table(args.key, data)
    if args.columns is not None:
        cols = [c.strip() for c in args.columns.split(",") if c.strip()]
        for c in cols:
            if c not in df.columns:
                raise ConfigError(f"{args.key} has no column {c!r}{did_you_mean(c, df.columns)}; "
                                  f"it has: {', '.join(df.columns)}")
        if not cols:
            raise ConfigError("--columns names no column (give A,B,...)")
        df = df.select(cols)
    want = args.rows if args.rows is not None else (0 if args.csv else 20)
    rows = df.height if want == 0 else min(want, df.height)
    if args.csv:
        import json

        # CSV has no nested values: lists and structs become JSON text, the rest stays as it is.
        nested = [c for c, t in df.schema.items() if t.is_nested()]
        out = df.head(rows).with_columns(
            pl.Series(c, [json.dumps(v, default=str) for v in df[c].head(rows).to_list()], dtype=pl.Utf8)
            for c in nested)
        sys.stdout.write(out.write_csv())
        return
    with pl.Config(tbl_rows=rows, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=200):
        print(df.head(rows))
    print(f"{df.height:,} rows x {df.width} columns" + (f" ({rows} shown; --rows 0 shows all)" if rows < df.height else ""))
