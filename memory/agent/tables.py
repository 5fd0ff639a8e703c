"""Table-backed features: what a pipeline job loads from the store, and its Parquet frames.

:class:`TableFeatures` answers the :class:`vismem.memory.agent.features.FeatureSource` protocol from
precomputed :class:`vismem.memory.agent.features.FeatureTables` (falling back to another source, e.g.
an in-process one for probe-query embeddings, or raising :class:`MissingFeature`);
:func:`tables_to_frames` / :func:`tables_from_frames` convert the tables to and from Polars
frames with a fixed schema.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

import numpy as np

from vismem.memory.agent.features import (FeatureSource, FeatureSpec, FeatureTables, MissingFeature, caption_id, content_id,
                                   text_id)


class TableFeatures:
    """A :class:`FeatureSource` over precomputed :class:`FeatureTables`.

    Args:
        tables: the features (e.g. loaded from the store with :func:`tables_from_frames`).
        read_blob: ``image_key -> bytes`` for injection (None: ``image_bytes`` falls back).
        fallback: asked for anything the tables lack (typically an :class:`InProcessFeatures`
            for query embeddings, which depend on the probe step's URL); None raises
            :class:`MissingFeature`.
    """

    def __init__(self, tables: FeatureTables, *, read_blob: Callable[[str], bytes] | None = None,
                 fallback: FeatureSource | None = None) -> None:
        self.tables = tables
        self.read_blob = read_blob
        self.fallback = fallback
        self._texts: dict[tuple[str, str], np.ndarray] = {}

    def _missing(self, what: str, spec: FeatureSpec, key: str) -> MissingFeature:
        return MissingFeature(f"no {what} for {key!r} under {spec.label} ({spec.key}) and no fallback source")

    def caption(self, image_key: str | None, url_hash: str | None, spec: FeatureSpec) -> str | None:
        k = (spec.key, caption_id(image_key, url_hash))
        if k in self.tables.captions:
            return self.tables.captions[k]
        if self.fallback is None:
            raise self._missing("caption", spec, k[1])
        return self.fallback.caption(image_key, url_hash, spec)

    def image_embedding(self, image_key: str | None, spec: FeatureSpec) -> np.ndarray | None:
        if not image_key:
            return None
        k = (spec.key, content_id(image_key))
        if k in self.tables.image_embeddings:
            return self.tables.image_embeddings[k]
        if self.fallback is None:
            raise self._missing("image embedding", spec, image_key)
        return self.fallback.image_embedding(image_key, spec)

    def text_embedding(self, text: str, spec: FeatureSpec) -> np.ndarray:
        k = (spec.key, text)
        vec = self._texts.get(k)
        if vec is None:
            vec = self.tables.text_embeddings.get((spec.key, text_id(text)))
            if vec is None:
                if self.fallback is None:
                    raise self._missing("text embedding", spec, text[:60])
                vec = self.fallback.text_embedding(text, spec)
            self._texts[k] = vec
        return vec

    def query_embedding(self, text: str, spec: FeatureSpec) -> np.ndarray:
        if self.fallback is None:
            raise self._missing("query embedding", spec, text[:60])
        return self.fallback.query_embedding(text, spec)

    def prefetch_queries(self, texts: Any, spec: FeatureSpec) -> int:
        """Batch-embed queries through the fallback (which memoises them); 0 without one."""
        fn = getattr(self.fallback, "prefetch_queries", None)
        return fn(texts, spec) if fn is not None else 0

    def image_bytes(self, image_key: str) -> bytes:
        if self.read_blob is not None:
            return self.read_blob(image_key)
        if self.fallback is None:
            raise MissingFeature(f"no blob reader for {image_key!r}")
        return self.fallback.image_bytes(image_key)


def tables_to_frames(tables: FeatureTables) -> dict[str, Any]:
    """The tables as Polars frames (what a pipeline writes to the store as Parquet):

    * ``specs``: ``spec_key, kind, label, stand_in, spec_json``;
    * ``captions``: ``spec_key, content_id, caption`` (null caption kept);
    * ``vectors``: ``kind, spec_key, content_id, vector`` (float32 lists; a null vector is an
      image the encoder was asked about but could not embed).
    """
    import polars as pl

    specs = pl.DataFrame(
        [{"spec_key": k, "kind": v["kind"], "label": v["label"], "stand_in": bool(v["stand_in"]),
          "spec_json": json.dumps(v["spec"], sort_keys=True, default=str)} for k, v in sorted(tables.specs.items())],
        schema={"spec_key": pl.String, "kind": pl.String, "label": pl.String, "stand_in": pl.Boolean,
                "spec_json": pl.String})
    captions = pl.DataFrame([{"spec_key": s, "content_id": c, "caption": t} for (s, c), t in tables.captions.items()],
                            schema={"spec_key": pl.String, "content_id": pl.String, "caption": pl.String})
    rows = [{"kind": "image_embedding", "spec_key": s, "content_id": c, "vector": None if v is None else v.tolist()}
            for (s, c), v in tables.image_embeddings.items()]
    rows += [{"kind": "text_embedding", "spec_key": s, "content_id": c, "vector": v.tolist()}
             for (s, c), v in tables.text_embeddings.items()]
    vectors = pl.DataFrame(rows, schema={"kind": pl.String, "spec_key": pl.String, "content_id": pl.String,
                                         "vector": pl.List(pl.Float32)})
    return {"specs": specs, "captions": captions, "vectors": vectors}


def tables_from_frames(frames: Mapping[str, Any]) -> FeatureTables:
    """Inverse of :func:`tables_to_frames`."""
    t = FeatureTables()
    for r in frames["specs"].iter_rows(named=True):
        t.specs[r["spec_key"]] = {"kind": r["kind"], "spec": json.loads(r["spec_json"]), "label": r["label"],
                                  "stand_in": r["stand_in"]}
    for r in frames["captions"].iter_rows(named=True):
        t.captions[(r["spec_key"], r["content_id"])] = r["caption"]
    for r in frames["vectors"].iter_rows(named=True):
        vec = None if r["vector"] is None else np.asarray(r["vector"], dtype=np.float32)
        target = t.image_embeddings if r["kind"] == "image_embedding" else t.text_embeddings
        target[(r["spec_key"], r["content_id"])] = vec
    return t
