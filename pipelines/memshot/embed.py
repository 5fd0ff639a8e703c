"""Ray Data job: embed memory units and questions with one embedder per actor.

The work per batch is :func:`vismem.memory.dialogue.retrieval.embed_batch` (pure but for the embedder
and an image reader); this module only shards it: an actor pool (fractional CPUs locally, a GPU
per replica on a cluster), batches, never a model load per row. One output row per input row.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from vismem.memory.dialogue.retrieval import embed_batch

if TYPE_CHECKING:
    from vismem.core.store import Store

#: Columns of the job's input rows (see ``vismem.memory.dialogue.retrieval.embedding_items``).
INPUT_COLUMNS = ("item_id", "modality", "text", "image_key")
#: Columns of its output rows (one per input row).
OUTPUT_COLUMNS = ("item_id", "embedding", "embed_s")


class _EmbedActor:
    """Ray Data actor: builds the embedder once, embeds batches of items (text or image rows)."""

    def __init__(self, spec: dict[str, Any], store: "Store" = None) -> None:
        from vismem.serve.build import build_embedder

        self.embedder = build_embedder(spec)
        self.store = store

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        t0 = time.perf_counter()
        reader = self.store.get_bytes if self.store is not None else None
        vecs = embed_batch(self.embedder, list(batch["modality"]), list(batch["text"]),
                            list(batch["image_key"]), reader)
        return {"item_id": batch["item_id"], "embedding": vecs,
                "embed_s": np.full(len(vecs), (time.perf_counter() - t0) / max(len(vecs), 1))}


def embed_items_ray(items: pl.DataFrame, spec: dict[str, Any], *, store: "Store" = None, ray_cfg: Any = None,
                    batch_size: int = 64, actors: int = 1, num_gpus: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Ray Data version of :func:`vismem.memory.dialogue.retrieval.embed_items`: an actor pool, one embedder per actor.

    Returns ``(vectors, per-item seconds)`` in items order (measured inside the actors); order is kept
    (the run's DataContext preserves order, and rows are re-aligned by ``item_id`` anyway).
    """
    import ray.data

    from vismem.pipelines.rayctx import actor_pool

    if items.height == 0:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0)
    ds = ray.data.from_arrow(items.select(*INPUT_COLUMNS).to_arrow())
    kwargs = actor_pool(ray_cfg, size=actors) if ray_cfg is not None else {}
    if num_gpus:
        kwargs["num_gpus"] = num_gpus  # one GPU (or a share) per embedder replica on the cluster
    out = ds.map_batches(_EmbedActor, fn_constructor_kwargs={"spec": spec, "store": store},
                         batch_size=batch_size, batch_format="numpy", **kwargs)
    ids: list[str] = []
    vecs: list[np.ndarray] = []
    secs: list[np.ndarray] = []
    from vismem.core.progress import enabled, track

    batches = out.iter_batches(batch_size=None, batch_format="numpy")
    if not enabled():  # off a terminal: progress lines (on one, Ray Data's bar)
        batches = track(batches, "memshot: embedding (batches)", total=-(-items.height // batch_size))
    for b in batches:
        ids.extend(str(x) for x in b["item_id"])
        vecs.append(np.asarray(b["embedding"], dtype=np.float32))
        secs.append(np.asarray(b["embed_s"], dtype=np.float64))
    pos = {item: i for i, item in enumerate(ids)}
    order = [pos[i] for i in items["item_id"].to_list()]
    return np.concatenate(vecs)[order], np.concatenate(secs)[order]
