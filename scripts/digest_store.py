#!/usr/bin/env python
"""Content digests of everything a run wrote into a ``file://`` store, timing values removed.

    python scripts/digest_store.py /tmp/store > before.json     # after a run into file:///tmp/store
    python scripts/digest_store.py /tmp/store --compare before.json

Parquet tables are digested row by row with timing columns dropped (``*_s``, ``*_ms``,
``latency*``, ``seconds``, ``started``/``finished``...); JSON objects the same way, key by key;
other objects by their bytes. Manifests, logs and per-step timing sidecars are skipped: they
hold wall-clock values by design. Used to prove that a refactor changed no output.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

TIMING = re.compile(r"(_s|_ms|^seconds|^latency.*|^started.*|^finished.*|^started_at|^wall.*|^time.*)$")
SKIP = re.compile(r"(manifest\.json|run\.log|\.timing\.parquet|\.tmp.*)$")


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        # `_objects` in a done marker records its objects' sizes and digests (integrity data;
        # the objects themselves are digested on their own).
        return {k: _clean(v) for k, v in sorted(value.items()) if not TIMING.search(str(k)) and k != "_objects"}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _clean_json_text(text: str) -> str:
    try:
        return json.dumps(_clean(json.loads(text)), sort_keys=True)
    except ValueError:
        return text


def digest(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".parquet":
        import polars as pl

        df = pl.read_parquet(io.BytesIO(data))
        df = df.drop([c for c in df.columns if TIMING.search(c)])
        # JSON held in a string column (a probe's step log) carries timings of its own.
        for c, t in df.schema.items():
            if t == pl.String and df[c].drop_nulls().str.starts_with("[").all() and df[c].drop_nulls().len():
                df = df.with_columns(pl.col(c).map_elements(_clean_json_text, return_dtype=pl.String))
        buf = io.StringIO()
        df.write_ndjson(buf)
        data = (",".join(f"{c}:{t}" for c, t in df.schema.items()) + "\n" + buf.getvalue()).encode()
    elif path.suffix == ".json":
        data = json.dumps(_clean(json.loads(data)), sort_keys=True).encode()
    # Run ids and catalogue prefixes inside values (keys of shots, pointers) are normalised too.
    for pat, repl in VALUE_HASHES:
        data = pat.sub(repl, data)
    return hashlib.sha256(data).hexdigest()


VALUE_HASHES = [(re.compile(rb"runs/[a-z0-9][a-z0-9_.-]*-[0-9a-f]{10}/"), b"runs/RUN/"),
                (re.compile(rb"catalog/[0-9a-f]{16}"), b"catalog/H"),
                (re.compile(rb"started: \d{4}-\d\d-\d\dT[\d:]+Z"), b"started: T")]


#: Content hashes inside keys (run ids, catalogue prefixes) are normalised away, so a run whose
#: config changed shape but not meaning compares equal object by object.
KEY_HASHES = [(re.compile(r"^runs/[^/]+/"), "runs/RUN/"), (re.compile(r"^catalog/[0-9a-f]{16}/"), "catalog/H/")]


def normalise(key: str) -> str:
    for pat, repl in KEY_HASHES:
        key = pat.sub(repl, key)
    return key


def digests(root: Path) -> dict[str, str]:
    return {normalise(str(p.relative_to(root))): digest(p) for p in sorted(root.rglob("*"))
            if p.is_file() and not SKIP.search(p.name)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--compare", type=Path, help="an earlier digest JSON; exit 1 on any difference")
    ap.add_argument("--ignore", action="append", default=[], help="regex of keys to leave out")
    a = ap.parse_args(argv)
    now = digests(a.root)
    skip = [re.compile(p) for p in a.ignore]
    now = {k: v for k, v in now.items() if not any(s.search(k) for s in skip)}
    if a.compare is None:
        json.dump(now, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    before = {k: v for k, v in json.loads(a.compare.read_text()).items() if not any(s.search(k) for s in skip)}
    diff = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in diff:
        print(f"{'changed' if k in before and k in now else 'missing' if k in before else 'new'}: {k}")
    print(f"{len(now)} objects, {len(diff)} differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
