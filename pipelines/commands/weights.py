"""``vismem weights list|sync``: exactly the model weights a run config needs, put where the
cluster reads them.

The list is derived, never kept by hand: every model variant (``serve/models/<variant>.yaml``)
the config names anywhere -- a ``{model: ...}`` spec, a bare variant name -- and inside every
memory architecture it replays, as the replay builds it (``memory/agent/variants/``, with
``memory.components`` laid over: the local preset's stand-ins replace SigLIP-2) -- and of those,
each one whose weights are loaded on the cluster: a ``deploy:`` block with a ``model_source`` (vLLM or a vismem replica).
Hosted APIs (Gemini, GLM) and packaged weights (MiniLM) need nothing.

Each model's weights live in one folder under the models root: the folder its ``args.path``
names (``${VISMEM_MODELS_DIR:-/models}/clip-vit-base-patch32``), or the last part of its hub id
(``Qwen2.5-VL-7B-Instruct``, which Ray 2.60 can load as ``model_source: s3://.../Qwen2.5-VL-7B-Instruct``).
``sync`` copies each folder from a local source (``--from DIR``, holding ``DIR/<folder>`` or
``DIR/<org>/<name>``) or, without one, from the Hugging Face hub, to an ``s3://`` prefix (what
the KubeRay init container syncs to the model volume) or a local models dir; files already there
with the same size are skipped, so a re-run copies only what is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable

from vismem.core.errors import ConfigError
from vismem.serve.weights import Weights, weights_of

__all__ = ["Weights", "weights_of", "named_variants", "needed_weights", "sync"]


def named_variants(cfg: Any) -> list[str]:
    """Every model variant ``cfg`` (a :class:`RunConfig`) names, sorted: in its component specs,
    and in every memory architecture as the replay builds it (``memory.components`` laid over)."""
    from vismem.memory.agent import ARCHITECTURES, with_components
    from vismem.serve.models import list_models

    models = set(list_models())
    found: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, str):
            if obj in models:
                found.add(obj)
        elif isinstance(obj, dict):
            for value in obj.values():
                walk(value)
        elif isinstance(obj, (list, tuple)):
            for value in obj:
                walk(value)

    data = cfg.model_dump(mode="json")
    memory = data.pop("memory", {})
    comps = dict(cfg.memory.components)
    for spec in cfg.memory.architectures:  # a variant name stands for the components it builds
        walk(ARCHITECTURES.resolve(with_components(spec, comps) if comps else spec.raw()))
    walk({k: v for k, v in memory.items() if k not in ("architectures", "components")})
    walk(data)
    return sorted(found)


def needed_weights(cfg: Any) -> list[Weights]:
    """The weights of every variant ``cfg`` names that the cluster loads, one per folder."""
    out: dict[str, Weights] = {}
    for variant in named_variants(cfg):
        w = weights_of(variant)
        if w is None:
            continue
        other = out.get(w.folder)
        if other is not None and other.source != w.source:
            raise ConfigError(f"models {other.variant} and {w.variant} both want folder {w.folder!r} "
                              f"with different weights ({other.source}, {w.source})")
        out.setdefault(w.folder, w)
    return sorted(out.values(), key=lambda w: w.folder)


def source_dirs(weights: Iterable[Weights], root: Path) -> dict[str, Path]:
    """``folder -> local dir`` holding each model's files under ``root``; one :class:`ConfigError`
    naming every missing one, before anything is copied."""
    found, missing = {}, []
    for w in weights:
        for cand in (root / w.folder, root / w.source):
            if cand.is_dir() and any(p.is_file() for p in cand.rglob("*")):
                found[w.folder] = cand
                break
        else:
            missing.append(f"{w.variant} ({w.source}: {root / w.folder} or {root / w.source})")
    if missing:
        raise ConfigError(f"weights not found under {root}: " + "; ".join(missing))
    return found


def _files(folder: Path) -> list[tuple[str, Path]]:
    """``(relative key, path)`` of every file to copy (hub bookkeeping like ``.cache/`` left out)."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            out.append((rel, p))
    return out


def _sizes(store: Any, prefix: str) -> dict[str, int]:
    """Sizes of the objects already under ``prefix`` (keys relative to it)."""
    if store.is_s3:
        return {k[len(prefix) + 1:]: int(obj["Size"]) for k, obj in store.iter_s3_objects(prefix)}
    base = Path(store.arrow_path()) / prefix
    return {p.relative_to(base).as_posix(): p.stat().st_size for p in base.rglob("*") if p.is_file()}


def copy_folder(src: Path, store: Any, folder: str) -> tuple[int, int]:
    """Copy ``src``'s files to ``folder/`` in ``store``; returns ``(copied, skipped)`` file counts."""
    have = _sizes(store, folder)
    copied = skipped = 0
    for rel, path in _files(src):
        if have.get(rel) == path.stat().st_size:
            skipped += 1
            continue
        store.put_file(f"{folder}/{rel}", path)
        copied += 1
    return copied, skipped


def _download(w: Weights, staging: Path) -> Path:
    """The hub snapshot of ``w`` in ``staging`` (only ``sync`` without ``--from`` downloads)."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(w.source, local_dir=staging / w.folder))


def open_target(to: str) -> Any:
    """The store at ``to`` (``s3://...``, ``file:///abs`` or an absolute path)."""
    from vismem.core.store import Store

    if to.startswith("/"):
        to = "file://" + to
    if not to.startswith(("s3://", "file://")):
        raise ConfigError(f"--to {to!r}: give s3://BUCKET/PREFIX or an absolute models dir")
    return Store.open(to)


def sync(weights: list[Weights], to: str, *, source: Path | None = None, log: Any = print) -> list[dict[str, Any]]:
    """Copy ``weights`` to ``to``; returns one row per model (folder, URI, files copied/skipped)."""
    sources = source_dirs(weights, source) if source is not None else {}
    store = open_target(to)
    rows = []
    with tempfile.TemporaryDirectory(prefix="vismem-weights-") as staging:
        for w in weights:
            src = sources.get(w.folder) or _download(w, Path(staging))
            copied, skipped = copy_folder(src, store, w.folder)
            rows.append({**asdict(w), "uri": store.url(w.folder), "copied": copied, "skipped": skipped})
            log(f"{w.variant}\t{store.url(w.folder)}\t{copied} copied, {skipped} already there")
            if source is None:
                shutil.rmtree(src, ignore_errors=True)  # one model's download on disk at a time
    return rows


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("weights", help="list or copy the model weights a run config needs",
                       description="The weights every model variant of a run config needs on the cluster "
                       "(derived from the config and serve/models/*.yaml): list them, or copy them to an "
                       "s3:// prefix or a local models dir.")
    wsub = p.add_subparsers(dest="weights_cmd", required=True)
    for name, text in (("list", "print the models whose weights the config needs"),
                       ("sync", "copy those weights to --to (from --from DIR, else the Hugging Face hub)")):
        w = wsub.add_parser(name, help=text, description=text)
        w.add_argument("--config", "-c", metavar="FILE", help="run config YAML")
        w.add_argument("--preset", choices=("local", "paper"), help="named preset (default: local)")
        w.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                       help="override a config field (repeatable)")
        w.add_argument("--json", action="store_true", help="JSON rows instead of text")
        if name == "sync":
            w.add_argument("--to", required=True, metavar="URI",
                           help="s3://BUCKET/PREFIX or an absolute models dir (the cluster's VISMEM_MODELS_DIR)")
            w.add_argument("--from", dest="source", metavar="DIR",
                           help="local folder holding DIR/<folder> or DIR/<org>/<name> per model")
        w.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from vismem.pipelines.config import dotted_overrides, load_config

    cfg = load_config(args.config, preset=args.preset, overrides=dotted_overrides(args.overrides))
    weights = needed_weights(cfg)
    if args.weights_cmd == "list":
        rows = [asdict(w) for w in weights]
        print(json.dumps(rows, indent=2) if args.json else
              "\n".join(f"{w.variant}\t{w.source}\t{w.folder}" for w in weights))
        return 0
    source = Path(args.source).resolve() if args.source else None
    if source is not None and not source.is_dir():
        raise ConfigError(f"--from {args.source}: no such folder")
    if source is None and os.environ.get("HF_HUB_OFFLINE") == "1":
        raise ConfigError("weights sync without --from downloads from the Hugging Face hub, but HF_HUB_OFFLINE=1")
    rows = sync(weights, args.to, source=source, log=(lambda _l: None) if args.json else print)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0
