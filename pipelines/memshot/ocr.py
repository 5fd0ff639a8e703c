"""Ray Data job: read the text of memory shots with a pixel reader, one reader per actor.

Input: one row per *session* (``session_rows``: the item ids and store keys of its shots, in
unit order); each actor builds the reader once (``ocr-minilm``: an onnxruntime session with one
thread, so two actors fill two cores) and reads a session's shots in one call — consecutive
shots repeat two turn-pairs, which the reader's line cache then reads for free. The per-batch
work is :func:`vismem.memory.dialogue.pixels.read_batch`, cache first: texts live in the store at
``ocr/<ocr_key>/<sha256>.txt`` (with the seconds their reading took beside them, ``.s``) and
are shared across runs. Output: one row per shot.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import polars as pl

from vismem.core.blobref import read_many
from vismem.memory.dialogue.retrieval import unit_item_id

if TYPE_CHECKING:
    from vismem.core.store import Store

#: Columns of the job's output frame (one row per shot).
OUTPUT_COLUMNS = ("item_id", "ocr_text", "ocr_s", "ocr_cached", "sha256", "ocr_healed")


def session_rows(units: pl.DataFrame) -> list[dict[str, Any]]:
    """One input row per (variant, conversation, session): its shots' item ids and keys, in order.

    ``units`` is the stage's image-unit frame (``variant``, ``conversation_id``, ``session_index``,
    ``unit_index``, ``unit_id``, ``image_key``); item ids follow ``embedding_items``.
    """
    if units.height == 0:
        return []
    df = (units.sort(["variant", "conversation_id", "session_index", "unit_index"])
          .with_columns(unit_item_id())
          .group_by(["variant", "conversation_id", "session_index"], maintain_order=True)
          .agg(pl.col("item_id"), pl.col("image_key")))
    return [{"item_ids": r["item_id"], "image_keys": r["image_key"]} for r in df.iter_rows(named=True)]


class _OcrActor:
    """Ray Data actor: one pixel reader; reads one session (one row) per call."""

    def __init__(self, spec: dict[str, Any], store: "Store") -> None:
        from vismem.serve.build import build_embedder

        self.reader = build_embedder(spec)
        self.store = store

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        from vismem.memory.dialogue.pixels import read_batch, store_cache

        get, put = store_cache(self.store)
        images = read_many(self.store.get_bytes, list(row["image_keys"]))  # one read per pack
        texts = read_batch(self.reader, images, get=get, put=put)
        return {"item_id": list(row["item_ids"]), "ocr_text": [t.text for t in texts],
                "ocr_s": [t.seconds for t in texts], "ocr_cached": [t.cached for t in texts],
                "sha256": [t.sha256 for t in texts], "ocr_healed": [t.healed for t in texts]}


def _all_cached(rows: list[dict[str, Any]], spec: dict[str, Any], store: "Store") -> list[dict[str, Any]] | None:
    """The job's output rows when every shot's text is already cached, else None.

    A re-run would otherwise start the actor pool and load an OCR model per actor only to find
    every text in the cache (~40 s on 2 busy cores for one conversation)."""
    from vismem.memory.dialogue.pixels import cache_key, cached_text, key_hash, store_cache
    from vismem.serve.embedders.ocr import reader_ocr_key

    key = reader_ocr_key(spec)
    if key is None:
        return None
    get, _ = store_cache(store)
    parts = []
    for row in rows:
        out: dict[str, list[Any]] = {"item_id": list(row["item_ids"]), "ocr_text": [], "ocr_s": [],
                                     "ocr_cached": [], "sha256": [], "ocr_healed": []}
        for img in read_many(store.get_bytes, list(row["image_keys"])):
            text_key = cache_key(key, img)
            hit = cached_text(get, text_key, quiet=True)  # a damaged text: the reader names it
            if hit is None:
                return None
            out["ocr_text"].append(hit[0])
            out["ocr_s"].append(hit[1])
            out["ocr_cached"].append(True)
            out["sha256"].append(key_hash(text_key))
            out["ocr_healed"].append(False)
        parts.append(out)
    return parts


def _frame(parts: list[dict[str, Any]]) -> pl.DataFrame:
    schema = {"item_id": pl.Utf8, "ocr_text": pl.Utf8, "ocr_s": pl.Float64, "ocr_cached": pl.Boolean,
              "sha256": pl.Utf8, "ocr_healed": pl.Boolean}
    # Ray hands lists back as numpy arrays of numpy scalars: convert to plain Python values.
    cast = {"item_id": str, "ocr_text": str, "ocr_s": float, "ocr_cached": bool, "sha256": str, "ocr_healed": bool}
    cols = {c: [cast[c](v) for p in parts for v in p[c]] for c in OUTPUT_COLUMNS}
    return pl.DataFrame(cols, schema=schema)


def read_shots(units: pl.DataFrame, spec: dict[str, Any], *, store: "Store", ray_cfg: Any = None,
               actors: int = 2, use_ray: bool = True) -> tuple[pl.DataFrame, dict[str, Any]]:
    """OCR text of every image unit in ``units`` → ``(frame with OUTPUT_COLUMNS, summary)``.

    ``use_ray=False`` reads in this process with one reader (tests, tiny inputs). Rows come back
    in ``units`` order whatever order the actors finish in.
    """
    rows = session_rows(units)
    t0 = time.perf_counter()
    if not rows:
        return _frame([]), {"shots": 0, "read": 0, "cached": 0, "healed": 0, "wall_s": 0.0}
    from vismem.core.progress import step, track

    with step(f"memshot OCR: looking up {len(rows):,} sessions' shots in the text cache"):
        cached = _all_cached(rows, spec, store)
    what = "memshot OCR: sessions read"
    if cached is not None:  # nothing to read: no actors, no models loaded
        parts = cached
    elif use_ray:
        import ray.data

        from vismem.pipelines.rayctx import actor_pool, collect, init_ray

        init_ray(ray_cfg)
        # One block per session: idle actors pull the next session, so the load balances.
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        out = ds.map(_OcrActor, fn_constructor_kwargs={"spec": spec, "store": store},
                     **actor_pool(ray_cfg, size=actors))
        parts = collect(out, what, total=len(rows))
    else:
        with step("memshot OCR: loading the reader"):
            actor = _OcrActor(spec, store)
        parts = [actor(r) for r in track(rows, what, total=len(rows))]
    df = _frame(parts)
    ids = (units.with_columns(unit_item_id())
           .select("item_id"))
    df = ids.join(df, on="item_id", how="left", maintain_order="left")
    if df["ocr_text"].null_count():
        raise RuntimeError(f"OCR job returned no text for {df['ocr_text'].null_count()} shots")
    summary = {"shots": df.height, "read": int((~df["ocr_cached"]).sum()), "cached": int(df["ocr_cached"].sum()),
               # damaged cached texts read again (named in the log by the reader)
               "healed": int(df["ocr_healed"].sum()),
               "ocr_s": round(float(df["ocr_s"].sum()), 3), "wall_s": round(time.perf_counter() - t0, 3)}
    return df, summary
