"""Ray Data job: render (or read back) catalogue product images and upload them from the workers.

Input rows come from :func:`plan_rows` (one per product variant: what
to render and the two store keys); each task builds the image source once, renders its batch
with and without cue, and uploads both images straight from the worker (with_cue last: its
presence marks the row done). One output row per input row: keys, byte sizes, sha256 and the
depicted cue object. The rendering itself is ``vismem.env.storefront`` (pure per product).
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vismem.core.store import Store

#: Columns of the job's output rows (one per input row).
OUTPUT_COLUMNS = ("url_hash", "with_cue_key", "base_key", "with_cue_bytes", "base_bytes", "with_cue_sha256",
                  "base_sha256", "depicted_object", "generated", "seconds", "cpu_s")



class RowCatalog:
    """Just enough of a Catalog for the image sources, built from job rows (no data dir on workers)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        from types import SimpleNamespace

        def ns(r: dict[str, Any]) -> Any:
            v = SimpleNamespace(**r)
            v.image_path = f"with_cue/{r['cat']}/{r['style']}/{int(r['image_idx']):02d}.png"
            v.base_image_path = f"base/{r['cat']}/{r['style']}/{int(r['image_idx']):02d}.png"
            return v

        self.variants = [ns(r) for r in rows]
        self.by_hash = {v.url_hash: v for v in self.variants}


#: Largest official catalogue image accepted (pixels; the released images are 1024 x 1024).
MAX_IMAGE_PIXELS = 8192 * 8192


def _conform(data: bytes, size: int, fmt: str, compress_level: int, name: str = "an official image") -> bytes:
    """Re-encode a foreign image (official set) to the configured size/format when they differ;
    one past :data:`MAX_IMAGE_PIXELS`, or not an image, is a DataError naming it (read from its
    header, before anything is decoded)."""
    import io

    from PIL import Image, UnidentifiedImageError

    from vismem.core.errors import DataError
    from vismem.env.storefront.images.scene import encode

    try:
        im = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError) as err:
        raise DataError(f"{name}: not a readable image ({err})") from None
    if im.size[0] * im.size[1] > MAX_IMAGE_PIXELS:
        raise DataError(f"{name}: {im.size[0]} x {im.size[1]} pixels, more than the {MAX_IMAGE_PIXELS:,} "
                        "a catalogue image may have")
    if im.size == (size, size) and (im.format or "").lower() == ("jpeg" if fmt == "jpeg" else fmt):
        return data
    return encode(im.convert("RGB").resize((size, size), Image.LANCZOS), fmt, compress_level)


def generate_rows(rows: list[dict[str, Any]], *, store: "Store", spec: dict[str, Any], size: int, fmt: str,
                  compress_level: int, upload_threads: int = 8) -> list[dict[str, Any]]:
    """Render + upload the images of ``rows`` (or read back those that exist); one result per row."""
    from vismem.env.storefront.imagesource import build_image_source

    if not rows:
        return []
    cat = RowCatalog(rows)
    src = build_image_source(spec, cat)  # type: ignore[arg-type]
    procedural = spec["name"] == "procedural"
    out: list[dict[str, Any]] = []
    cpu0 = time.process_time()
    pool = _upload_pool(upload_threads)  # kept across batches: its threads keep their store connections
    futures = []
    for r in rows:
        t0 = time.perf_counter()
        if r["exists"]:
            cue_b, base_b = store.get_bytes(r["with_cue_key"]), store.get_bytes(r["base_key"])
        else:
            if hasattr(src, "get_pair"):
                cue_b, base_b = src.get_pair(r["url_hash"])
            else:
                cue_b, base_b = src.get(r["url_hash"], True), src.get(r["url_hash"], False)
            if not procedural:
                cue_b, base_b = (_conform(b, size, fmt, compress_level, f"official image of variant {r['url_hash']}")
                                 for b in (cue_b, base_b))
            ctype = f"image/{'jpeg' if fmt == 'jpeg' else fmt}"
            futures.append(pool.submit(store.put_bytes, r["base_key"], base_b, content_type=ctype))
            # each put is atomic; a row counts as done only when both images are stored (plan_rows)
            futures.append(pool.submit(store.put_bytes, r["with_cue_key"], cue_b, content_type=ctype))
        depicted = src.depicted_object(r["url_hash"]) if hasattr(src, "depicted_object") else r["cue_object"]
        out.append({"url_hash": r["url_hash"], "with_cue_key": r["with_cue_key"], "base_key": r["base_key"],
                    "with_cue_bytes": len(cue_b), "base_bytes": len(base_b),
                    "with_cue_sha256": hashlib.sha256(cue_b).hexdigest(),
                    "base_sha256": hashlib.sha256(base_b).hexdigest(), "depicted_object": depicted,
                    "generated": not r["exists"], "seconds": time.perf_counter() - t0})
    for f in futures:
        f.result()  # surface upload errors
    cpu = (time.process_time() - cpu0) / len(out)  # this process's CPU (render, encode, upload threads)
    for r in out:
        r["cpu_s"] = cpu
    return out


_POOLS: dict[int, Any] = {}


def _upload_pool(threads: int) -> Any:
    """This process's upload threads (one pool per size, kept across batches)."""
    from concurrent.futures import ThreadPoolExecutor

    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="catalog-upload")
    return _POOLS[threads]


def _generate_batch(batch: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Ray Data ``map_batches`` adapter: column batch in, column batch out, same row count."""
    import numpy as np

    n = len(batch["url_hash"])
    rows = [{k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in batch.items()} for i in range(n)]
    res = generate_rows(rows, **kw)
    return {k: np.array([r[k] for r in res]) for k in res[0]} if res else {k: np.array([]) for k in batch}


def generate(rows: list[dict[str, Any]], *, store: "Store", spec: dict[str, Any], cfg: Any, ray_cfg: Any,
             use_ray: bool = True) -> list[dict[str, Any]]:
    """Run the generation job over ``rows`` (Ray Data, or in-process with ``use_ray=False``).

    ``spec`` is the image source's ``{name, args}``; ``cfg`` the catalogue section (size,
    format, batch and upload settings).
    """
    kw = dict(store=store, spec=spec, size=cfg.image_size, fmt=cfg.image_format,
              compress_level=cfg.png_compress_level, upload_threads=cfg.upload_threads)
    if not rows:
        return []
    if not use_ray:
        return generate_rows(rows, **kw)
    import ray.data

    from vismem.pipelines.rayctx import batch_size_for, collect, init_ray, task_pool

    init_ray(ray_cfg)
    bs = cfg.batch_size or batch_size_for(len(rows), ray_cfg.concurrency)
    ds = ray.data.from_items(rows, override_num_blocks=max(1, (len(rows) + bs - 1) // bs))
    out = ds.map_batches(_generate_batch, fn_kwargs=kw, batch_size=bs, batch_format="numpy", **task_pool(ray_cfg))
    results = collect(out, "catalog: product images", total=len(rows))
    if len(results) != len(rows):  # one output row per input row, or the job is broken
        raise RuntimeError(f"catalog job returned {len(results)} rows for {len(rows)} variants")
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in results]


def damaged_images(store: "Store", recorded: list[dict[str, Any]], threads: int = 8) -> dict[str, str]:
    """``image key -> one line`` for every stored image of ``recorded`` (rows of an earlier
    ``catalog.parquet``) whose bytes are not the sha256 and size that row recorded, read
    concurrently. Catalogue images are byte-reproducible, so a damaged one is simply rendered again."""
    from vismem.core.cache import find_damage, record

    checks = [(r[f"{kind}_key"], r[f"{kind}_sha256"], r[f"{kind}_bytes"])
              for r in recorded for kind in ("with_cue", "base")]

    def problem(check: tuple[str, str, int]) -> str | None:
        key, want, size = check
        got = record(store.get_bytes(key))
        if (got["bytes"], got["sha256"]) == (size, want):
            return None
        return (f"damaged catalogue image {key}: {got['bytes']} bytes, sha256 {got['sha256'][:12]}, "
                f"catalog.parquet recorded {size} bytes, sha256 {want[:12]}")

    return {check[0]: line for check, line in find_damage(checks, problem, threads)}


def verify_catalogue(store: "Store", prefix: str = "catalog", *, discard: bool = False) -> tuple[int, list[str]]:
    """Check every stored catalogue image under ``prefix`` against the ``catalog*.parquet`` beside
    it: ``(images checked, one line per damaged one)``. ``discard`` deletes the damaged images, so
    the next catalog run renders them again (a run also heals what it finds)."""
    keys = set(store.iter_keys(prefix))
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    tables = sorted(k for k in keys if k.rsplit("/", 1)[-1].startswith("catalog") and k.endswith(".parquet"))
    for table in tables:
        for r in store.read_table(table).iter_rows(named=True):
            if r["with_cue_key"] in keys and r["base_key"] in keys:  # a lost image is no damage: a run redoes it
                rows[(table.rsplit("/", 1)[0], r["url_hash"])] = r
    bad = damaged_images(store, list(rows.values()))
    if discard:
        for key in bad:
            store.delete(key)
    return 2 * len(rows), list(bad.values())


_EXT = {"png": "png", "jpeg": "jpg", "webp": "webp"}


def _key(prefix: str, rel_png: str, fmt: str) -> str:
    rel = rel_png[: -len(".png")] + "." + _EXT[fmt] if fmt != "png" else rel_png
    return f"{prefix}/{rel}"


def plan_rows(variants: Any, prefix: str, fmt: str, existing: set[str]) -> list[dict[str, Any]]:
    """One job row per variant: what to render and where; ``exists`` when both images are stored."""
    rows = []
    for v in variants:
        cue_key, base_key = _key(prefix, v.image_path, fmt), _key(prefix, v.base_image_path, fmt)
        rows.append({"url_hash": v.url_hash, "cat": v.cat, "style": v.style, "idx": v.idx,
                     "cue_object": v.cue_object, "cue_color": v.cue_color, "image_idx": v.image_idx,
                     "with_cue_key": cue_key, "base_key": base_key,
                     "exists": cue_key in existing and base_key in existing})
    return rows
