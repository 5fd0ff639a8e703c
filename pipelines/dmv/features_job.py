"""Feature extraction: one feature spec (a captioner or an encoder) over many items.

The per-batch work is pure but for the model: caption each image, or embed each image or text.
:func:`compute_features` runs it in the driver (small local sizes) or as a Ray Data actor-pool
job with one model per actor (fractional CPUs locally, a GPU per replica on a cluster); both
return ``(values, failures)`` keyed by content id. A failed item is reported, never stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from vismem.core.errors import NoSpace, StoreUnreachable

if TYPE_CHECKING:
    from vismem.core.store import Store

#: Columns of the job's input rows (one per item).
INPUT_COLUMNS = ("content_id", "image_key", "url_hash", "text")
#: Columns of its output rows (one per input row): the value (caption or vector) or an error.
OUTPUT_COLUMNS = ("content_id", "caption", "vector", "error")


def build_model(fs: Any) -> Any:
    """The captioner or embedder a feature spec names."""
    if fs.kind == "caption":
        from vismem.memory.agent.captioner import build_captioner

        return build_captioner(fs.spec)
    from vismem.serve.build import build_embedder

    return build_embedder(fs.spec)


def wants_accelerator(fs: Any) -> bool:
    """Whether feature spec ``fs`` runs a model in-process that wants a GPU (as its registration
    declares): only those reserve ``memory.feature_gpus``; endpoint clients, CPU models and
    stand-ins never hold a GPU idle."""
    if fs.kind == "caption":
        from vismem.memory.agent.captioner import CAPTIONERS

        return CAPTIONERS.wants_accelerator(fs.spec)
    from vismem.serve.registry import EMBEDDERS

    return EMBEDDERS.wants_accelerator(fs.spec)


def in_flight(model: Any) -> int:
    """Captions asked at once of ``model``: an endpoint client's own limit (``max_concurrency``
    of the VLM a captioner calls), else one at a time."""
    vlm = getattr(model, "vlm", None)
    return max(1, int(getattr(vlm, "max_concurrency", 1) or 1))


def _caption(model: Any, it: dict[str, Any], read_blob: Callable[[str], bytes]) -> dict[str, Any]:
    try:
        image = read_blob(it["image_key"]) if it.get("image_key") else None
        return {"content_id": it["content_id"], "caption": model.caption(image, url_hash=it.get("url_hash")),
                "vector": None, "error": None}
    except (NoSpace, StoreUnreachable):  # the store failed, not this item: the stage stops
        raise
    except Exception as e:  # noqa: BLE001 - this item's failure, retried by the next run
        return {"content_id": it["content_id"], "caption": None, "vector": None, "error": f"{type(e).__name__}: {e}"[:300]}


def feature_batch(kind: str, model: Any, items: list[dict[str, Any]], read_blob: Callable[[str], bytes]
                  ) -> list[dict[str, Any]]:
    """One output row per item, in item order: ``caption`` / ``vector`` filled, or ``error``.

    Captions are asked up to :func:`in_flight` at once (an endpoint captioner spends its time
    waiting for replies); embeddings go to the model as one batch.
    """
    if kind == "caption":
        n = min(in_flight(model), len(items))
        if n <= 1:
            return [_caption(model, it, read_blob) for it in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(n, thread_name_prefix="caption") as pool:
            return list(pool.map(lambda it: _caption(model, it, read_blob), items))
    try:
        if kind == "image_embedding":
            vecs = model.embed_images([read_blob(it["image_key"]) for it in items])
        else:
            vecs = model.embed_texts([it["text"] for it in items])
    except (NoSpace, StoreUnreachable):
        raise
    except Exception as e:  # noqa: BLE001 - the batch failed: every item is reported, none stored
        return [{"content_id": it["content_id"], "caption": None, "vector": None,
                 "error": f"{type(e).__name__}: {e}"[:300]} for it in items]
    return [{"content_id": it["content_id"], "caption": None, "vector": np.asarray(v, np.float32), "error": None}
            for it, v in zip(items, vecs)]


class _FeatureActor:
    """Ray Data actor: builds the model once, computes batches."""

    def __init__(self, fs: Any, store: "Store") -> None:
        self.fs, self.store = fs, store
        self.model = build_model(fs)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        n = len(batch["content_id"])
        items = [{c: (batch[c][i].item() if hasattr(batch[c][i], "item") else batch[c][i]) for c in INPUT_COLUMNS}
                 for i in range(n)]
        rows = feature_batch(self.fs.kind, self.model, items, self.store.get_bytes)
        return {"content_id": [r["content_id"] for r in rows], "caption": [r["caption"] for r in rows],
                "vector": [None if r["vector"] is None else r["vector"].tolist() for r in rows],
                "error": [r["error"] for r in rows]}


def _collect(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    values: dict[str, Any] = {}
    failures: list[dict[str, Any]] = []
    for r in rows:
        if r["error"]:
            failures.append({"content_id": r["content_id"], "error": r["error"]})
        else:
            values[r["content_id"]] = r["caption"] if r["vector"] is None and r["caption"] is not None \
                else (None if r["vector"] is None else np.asarray(r["vector"], np.float32))
    return values, failures


def pool_kwargs(fs: Any, ray_cfg: Any, *, actors: int, num_gpus: float) -> dict[str, Any]:
    """``map_batches`` kwargs of a feature job: an actor pool, GPUs only for an in-process model."""
    from vismem.pipelines.rayctx import actor_pool

    kwargs = actor_pool(ray_cfg, size=actors) if ray_cfg is not None else {}
    if num_gpus and wants_accelerator(fs):
        kwargs["num_gpus"] = num_gpus
    return kwargs


def compute_features(fs: Any, items: list[dict[str, Any]], *, store: "Store", on_ray: bool, batch_size: int = 32,
                     ray_cfg: Any = None, actors: int = 1, num_gpus: float = 0.0,
                     models: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Compute feature spec ``fs`` over ``items``; ``(content_id -> value, failures)``.

    ``models`` caches built models across calls in the driver (``on_ray=False``).
    """
    if not items:
        return {}, []
    if not on_ray:
        models = {} if models is None else models
        if fs.key not in models:
            models[fs.key] = build_model(fs)
        rows: list[dict[str, Any]] = []
        for i in range(0, len(items), batch_size):
            rows += feature_batch(fs.kind, models[fs.key], items[i:i + batch_size], store.get_bytes)
        return _collect(rows)
    import ray.data

    ds = ray.data.from_items([{c: it.get(c) for c in INPUT_COLUMNS} for it in items])
    kwargs = pool_kwargs(fs, ray_cfg, actors=actors, num_gpus=num_gpus)
    out = ds.map_batches(_FeatureActor, fn_constructor_kwargs={"fs": fs, "store": store}, batch_size=batch_size,
                         **kwargs)
    from vismem.pipelines.rayctx import collect

    rows = collect(out, f"features: {fs.kind} {fs.label}", total=len(items))
    if len(rows) != len(items):  # one output row per input row, or the job is broken
        raise RuntimeError(f"feature job returned {len(rows)} rows for {len(items)} items")
    return _collect(rows)
