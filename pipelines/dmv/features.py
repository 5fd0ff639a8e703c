"""Memory features in the store: content-addressed, computed once, shared by every run.

A feature is a function of *(content, model spec)* (``vismem.memory.agent.features``): a caption of an
image by a captioner and task, an image embedding by an encoder, a text embedding by an encoder.
Layout (relative to the store root, shared by all runs)::

    features/<spec_key>/spec.json                   kind, label, stand-in flag, the resolved spec
    features/<spec_key>/parts/<digest>.parquet      content_id + caption | vector, one part per batch
    features/<spec_key>/parts/<digest>.done.json    the part's done marker (its size and SHA-256)

``spec_key`` hashes the resolved spec minus transport arguments, so the same model reached
another way shares its features; parts are immutable and named by the content ids they hold,
so a killed job leaves only whole parts behind and a re-run computes what no part holds yet.
A part is a :class:`vismem.core.cache.UnitCache` unit: it is read only when it matches its done
marker, and a damaged part is discarded (named in the log), so its ids are simply computed again.
:func:`ensure_features` computes whatever a set of architectures needs over a set of chains:
captions first, then image embeddings, then the document texts (which may contain captions).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from vismem.core.bounds import TABLE_BYTES
from vismem.core.cache import CacheDamaged, UnitCache
from vismem.core.errors import TooLarge
from vismem.core.parquetio import decode_table
from vismem.core.store import parquet_bytes

log = logging.getLogger("vismem.features")

if TYPE_CHECKING:
    from vismem.core.store import Store

FEATURE_ROOT = "features"
SCHEMA_VERSION = 1


def _part_key(spec_key: str, ids: list[str]) -> str:
    digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]
    return f"{FEATURE_ROOT}/{spec_key}/parts/{digest}.parquet"


def save_spec(store: "Store", fs: Any) -> None:
    """Record what a spec key means (once)."""
    key = f"{FEATURE_ROOT}/{fs.key}/spec.json"
    if not store.exists(key):
        store.put_json(key, {"schema_version": SCHEMA_VERSION, "kind": fs.kind, "label": fs.label,
                             "stand_in": bool(fs.stand_in), "spec": fs.spec})


def save_part(store: "Store", fs: Any, values: dict[str, Any]) -> str | None:
    """Write one immutable part of ``content_id -> caption | vector`` for feature spec ``fs``."""
    import polars as pl

    if not values:
        return None
    ids = sorted(values)
    if fs.kind == "caption":
        df = pl.DataFrame({"content_id": ids, "caption": [values[i] for i in ids]},
                          schema={"content_id": pl.String, "caption": pl.String})
    else:
        vecs = [values[i] for i in ids]
        dim = next((len(v) for v in vecs if v is not None), 0)
        mat = np.stack([np.zeros(dim, np.float32) if v is None else np.asarray(v, np.float32) for v in vecs]) \
            if dim else np.zeros((len(ids), 0), np.float32)
        df = pl.DataFrame({"content_id": ids, "present": [v is not None for v in vecs]})
        df = df.with_columns(pl.Series("vector", mat, dtype=pl.Array(pl.Float32, dim)))
    key = _part_key(fs.key, ids)
    units = UnitCache(store, "")
    units.commit(key[: -len(".parquet")], {".parquet": parquet_bytes(df, schema_version=SCHEMA_VERSION)},
                 {"items": len(ids)})
    return key


def load_parts(store: "Store", fs: Any, healed: list[str] | None = None) -> dict[str, Any]:
    """Every stored ``content_id -> value`` of feature spec ``fs``; a damaged part is discarded
    (its ids are then missing, so computed again) and its line appended to ``healed``."""
    out: dict[str, Any] = {}
    units = UnitCache(store, "")
    keys = set(store.list(f"{FEATURE_ROOT}/{fs.key}/parts"))  # parts and their markers: one listing
    for key in sorted(k for k in keys if k.endswith(".parquet")):
        unit = key[: -len(".parquet")]
        try:  # a part written before parts had done markers is read as it is (each put is atomic)
            marked = units.done_key(unit) in keys
            df = (units.read_table(unit, ".parquet") if marked
                  else decode_table(key, store.get_bytes(key, bound=TABLE_BYTES), error=CacheDamaged))
        except TooLarge:
            raise  # as large as it was written: the bound must be raised, recomputing would not help
        except Exception as err:  # noqa: BLE001 - a damaged part, whatever broke it: its ids are computed again
            line = str(err) if isinstance(err, CacheDamaged) else f"damaged feature part {key}: {type(err).__name__}"
            log.warning("%s: discarded, recomputing", line)
            if healed is not None:
                healed.append(line)
            units.discard(unit)
            store.delete(key)
            continue
        if fs.kind == "caption":
            out.update(zip(df["content_id"].to_list(), df["caption"].to_list()))
            continue
        mat = df["vector"].to_numpy() if df.height else np.zeros((0, 0), np.float32)
        for cid, ok, row in zip(df["content_id"].to_list(), df["present"].to_list(), mat):
            out[cid] = np.asarray(row, dtype=np.float32) if ok else None
    return out


@dataclass
class FeatureStats:
    """What :func:`ensure_features` did, per kind (computed, reused, failed) and which specs."""

    computed: dict[str, int] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    failed: list[dict[str, Any]] = field(default_factory=list)
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    healed: list[str] = field(default_factory=list)  # one line per damaged part discarded

    def count(self, what: dict[str, int], kind: str, n: int) -> None:
        what[kind] = what.get(kind, 0) + n


def ensure_features(store: "Store", architectures: Iterable[Any], observations: Iterable[Any], *, compute: Any,
                    ) -> tuple[Any, FeatureStats]:
    """Load, and compute where missing, every feature ``architectures`` read for ``observations``.

    ``compute(fs, items) -> (values, failures)`` runs one feature spec over items (the Ray Data
    job or an in-process loop, :mod:`vismem.pipelines.dmv.features_job`); items are
    ``{"content_id", "image_key", "url_hash", "text"}``. Returns the loaded
    ``vismem.memory.agent.FeatureTables`` and what was done. Failed items are not stored (a re-run
    retries them) and are listed in the stats.
    """
    import time

    from vismem.memory.agent.features import FeatureTables, caption_id, content_id, text_id
    from vismem.memory.agent.tables import TableFeatures

    archs, obs = list(architectures), list(observations)
    needed = sorted({fs for a in archs for fs in a.required_features()}, key=lambda f: (f.kind, f.key))
    tables, stats = FeatureTables(), FeatureStats()
    target = {"caption": tables.captions, "image_embedding": tables.image_embeddings,
              "text_embedding": tables.text_embeddings}

    def fill(fs: Any, items: dict[str, dict[str, Any]]) -> None:
        t0 = time.perf_counter()
        save_spec(store, fs)
        tables.add_spec(fs)
        stats.specs[fs.key] = {"kind": fs.kind, "label": fs.label, "stand_in": fs.stand_in}
        have = load_parts(store, fs, stats.healed)
        todo = [v for k, v in items.items() if k not in have]
        if todo:
            values, failures = compute(fs, todo)
            save_part(store, fs, values)
            have.update(values)
            stats.failed += [{"kind": fs.kind, "label": fs.label, **f} for f in failures]
            stats.count(stats.computed, fs.kind, len(values))
        stats.count(stats.reused, fs.kind, len(items) - len(todo))
        for cid in items:
            if cid in have:
                target[fs.kind][(fs.key, cid)] = have[cid]
        stats.seconds[fs.kind] = stats.seconds.get(fs.kind, 0.0) + time.perf_counter() - t0

    visits = {caption_id(o.image_key, o.url_hash): {"content_id": caption_id(o.image_key, o.url_hash),
                                                     "image_key": o.image_key, "url_hash": o.url_hash, "text": None}
              for o in obs}
    images = {content_id(o.image_key): {"content_id": content_id(o.image_key), "image_key": o.image_key,
                                        "url_hash": o.url_hash, "text": None} for o in obs if o.image_key}
    for fs in (f for f in needed if f.kind == "caption"):
        fill(fs, visits)
    for fs in (f for f in needed if f.kind == "image_embedding"):
        fill(fs, images)
    # Document texts depend on the captions just filled (Caption embeds the caption itself).
    view = TableFeatures(tables)
    docs: dict[Any, dict[str, dict[str, Any]]] = {}
    for a in archs:
        for o in obs:
            try:
                pairs = a.documents(o, view)
            except KeyError:  # a caption that failed: that visit's document is not computable yet
                continue
            for fs, text in pairs:
                docs.setdefault(fs, {})[text_id(text)] = {"content_id": text_id(text), "image_key": None,
                                                          "url_hash": None, "text": text}
    for fs in sorted(docs, key=lambda f: f.key):
        fill(fs, docs[fs])
    return tables, stats


def spec_list(stats: FeatureStats) -> list[dict[str, Any]]:
    """The feature specs a run used (for the manifest)."""
    return [{"key": k, **v} for k, v in sorted(stats.specs.items())]
