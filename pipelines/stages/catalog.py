"""The ``catalog`` stage: the storefront catalogue and its 2,000 product images, as a Ray Data job.

1. **Plan** (pure): the catalogue (seed + colour order) → one row per variant with its image keys
   under a content-addressed prefix ``catalog/<params-hash>/``. The hash covers everything the
   pixels depend on (image source and its arguments, renderer version, size, format, and the
   cue assignment), so different seeds or colour orders never collide and equal ones share.
2. **Generate** (Ray Data): ``from_items(rows) → map_batches`` with fractional CPUs; each batch
   renders its products (with and without cue) and uploads them straight from the worker,
   ``with_cue/<cat>/<style>/NN.png`` and ``base/...`` (the official layout, so the ``store``
   image source and the official tooling read it). One output row per input row: keys, byte
   sizes, sha256, the depicted cue object. Rows whose images are already in the store are only
   read back (hash + size), never re-rendered: a killed run resumes.
3. **Collect** (pure): ``catalog.parquet`` (schema_version) beside the images, and
   ``runs/<run_id>/catalog.json`` pointing at the prefix.

Top-level imports stay light (the CLI imports this module for its flags).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from typing import Any

SCHEMA_VERSION = 1
#: Columns of ``catalog.parquet`` added to the catalogue's own (Catalog.to_polars()).
IMAGE_COLUMNS = ("with_cue_key", "base_key", "with_cue_bytes", "base_bytes", "with_cue_sha256",
                 "base_sha256", "depicted_object")
_EXT = {"png": "png", "jpeg": "jpg", "webp": "webp"}


# -- CLI hooks -------------------------------------------------------------------------------------

def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """``vismem run catalog --image-source procedural --image-limit 20``."""
    g = parser.add_argument_group("catalog")
    g.add_argument("--image-source", metavar="NAME", help="catalog: image source (procedural | official | ...)")
    g.add_argument("--image-root", metavar="URI", help="catalog: root of the official image set (dir or s3://)")
    g.add_argument("--image-limit", type=int, metavar="N", help="catalog: only the first N variants")


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if getattr(args, "image_source", None):
        out["image_source"] = args.image_source
    if getattr(args, "image_root", None):
        out["image_source_args"] = {"root": args.image_root}
    if getattr(args, "image_limit", None):
        out["limit"] = args.image_limit
    return {"catalog": out} if out else {}


# -- pure planning ---------------------------------------------------------------------------------

def source_spec(cfg: Any) -> dict[str, Any]:
    """The image source spec ``{name, args}`` the workers build (size/format folded in for procedural)."""
    args = dict(cfg.image_source_args)
    if cfg.image_source == "procedural":
        args.setdefault("size", cfg.image_size)
        args.setdefault("format", cfg.image_format)
        args.setdefault("compress_level", cfg.png_compress_level)
    return {"name": cfg.image_source, "args": args}


_SECRET_ARGS = ("access_key", "secret_key", "aws_access_key_id", "aws_secret_access_key", "token")


def public_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without credentials (what goes into params.json, the manifest and the pointer)."""
    return {"name": spec["name"], "args": {k: v for k, v in spec["args"].items() if k not in _SECRET_ARGS}}


def image_params(cfg: Any, variants: Any) -> dict[str, Any]:
    """Everything the stored pixels depend on (hashed into the prefix)."""
    from env.storefront.images.scene import RENDERER_VERSION

    assignment = "\n".join(f"{v.url_hash}:{v.cat}:{v.style}:{v.idx}:{v.cue_object}:{v.cue_color}:{v.image_idx}"
                           for v in sorted(variants, key=lambda v: v.url_hash))
    spec = source_spec(cfg)
    return {
        "source": public_spec(spec),
        "renderer": RENDERER_VERSION if cfg.image_source == "procedural" else None,
        "size": cfg.image_size, "format": cfg.image_format, "png_compress_level": cfg.png_compress_level,
        "assignment_sha256": hashlib.sha256(assignment.encode()).hexdigest(),
    }


def params_hash(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


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


def build_table(catalog_df: Any, results: list[dict[str, Any]]) -> Any:
    """The catalogue's columns joined with the job's image columns, in catalogue order."""
    import polars as pl

    img = pl.DataFrame(
        [{k: r[k] for k in ("url_hash",) + IMAGE_COLUMNS} for r in results],
        schema={"url_hash": pl.Utf8, "with_cue_key": pl.Utf8, "base_key": pl.Utf8, "with_cue_bytes": pl.Int64,
                "base_bytes": pl.Int64, "with_cue_sha256": pl.Utf8, "base_sha256": pl.Utf8,
                "depicted_object": pl.Utf8},
    )
    out = catalog_df.join(img, on="url_hash", how="inner", maintain_order="left")
    if out.height != img.height:
        raise RuntimeError(f"catalog table has {out.height} rows for {img.height} generated variants")
    return out


# -- the worker side (runs inside Ray tasks) ------------------------------------------------------

class _RowCatalog:
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


def _conform(data: bytes, size: int, fmt: str, compress_level: int) -> bytes:
    """Re-encode a foreign image (official set) to the configured size/format when they differ."""
    import io

    from PIL import Image

    from env.storefront.images.scene import encode

    im = Image.open(io.BytesIO(data))
    if im.size == (size, size) and (im.format or "").lower() == ("jpeg" if fmt == "jpeg" else fmt):
        return data
    return encode(im.convert("RGB").resize((size, size), Image.LANCZOS), fmt, compress_level)


def generate_rows(rows: list[dict[str, Any]], *, store: Any, spec: dict[str, Any], size: int, fmt: str,
                  compress_level: int, upload_threads: int = 8) -> list[dict[str, Any]]:
    """Render + upload the images of ``rows`` (or read back those that exist); one result per row."""
    from concurrent.futures import ThreadPoolExecutor

    from env.storefront.imagesource import build_image_source

    if not rows:
        return []
    cat = _RowCatalog(rows)
    src = build_image_source(spec, cat)  # type: ignore[arg-type]
    procedural = spec["name"] == "procedural"
    store.exists(rows[0]["with_cue_key"])  # creates the client before threads share it
    out: list[dict[str, Any]] = []
    cpu0 = time.process_time()
    with ThreadPoolExecutor(max_workers=upload_threads) as pool:
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
                    cue_b, base_b = (_conform(b, size, fmt, compress_level) for b in (cue_b, base_b))
                ctype = f"image/{'jpeg' if fmt == 'jpeg' else fmt}"
                futures.append(pool.submit(store.put_bytes, r["base_key"], base_b, content_type=ctype))
                # with_cue last: its presence (with base) marks the row done for resumption
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


def _generate_batch(batch: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Ray Data ``map_batches`` adapter: column batch in, column batch out, same row count."""
    import numpy as np

    n = len(batch["url_hash"])
    rows = [{k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in batch.items()} for i in range(n)]
    res = generate_rows(rows, **kw)
    return {k: np.array([r[k] for r in res]) for k in res[0]} if res else {k: np.array([]) for k in batch}


# -- the stage -------------------------------------------------------------------------------------

def generate(rows: list[dict[str, Any]], *, store: Any, cfg: Any, ray_cfg: Any, use_ray: bool = True) -> list[dict[str, Any]]:
    """Run the generation job over ``rows`` (Ray Data, or in-process with ``use_ray=False``)."""
    kw = dict(store=store, spec=source_spec(cfg), size=cfg.image_size, fmt=cfg.image_format,
              compress_level=cfg.png_compress_level, upload_threads=cfg.upload_threads)
    if not rows:
        return []
    if not use_ray:
        return generate_rows(rows, **kw)
    import ray.data

    from pipelines.rayctx import init_ray, task_pool

    init_ray(ray_cfg)
    bs = cfg.batch_size
    ds = ray.data.from_items(rows, override_num_blocks=max(1, (len(rows) + bs - 1) // bs))
    out = ds.map_batches(_generate_batch, fn_kwargs=kw, batch_size=bs, batch_format="numpy", **task_pool(ray_cfg))
    results = out.take_all()
    if len(results) != len(rows):  # one output row per input row, or the job is broken
        raise RuntimeError(f"catalog job returned {len(results)} rows for {len(rows)} variants")
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in results]


def _check_source(cfg: Any, variants: Any) -> None:
    """Build the configured source once in the driver: unknown names or bad args → ConfigError."""
    from env.storefront.imagesource import IMAGE_SOURCES, _load_plugins, build_image_source
    from pipelines.errors import ConfigError

    _load_plugins()
    if cfg.image_source not in IMAGE_SOURCES:
        raise ConfigError(f"catalog.image_source {cfg.image_source!r} is not a registered image source "
                          f"(known: {', '.join(IMAGE_SOURCES.names())})")
    rows = plan_rows(variants[:1], "check", cfg.image_format, set())
    try:
        build_image_source(source_spec(cfg), _RowCatalog(rows))  # type: ignore[arg-type]
    except TypeError as err:
        raise ConfigError(f"catalog.image_source_args do not fit image source {cfg.image_source!r}: {err}") from None


def run(ctx: Any, *, use_ray: bool = True) -> dict[str, Any]:
    """Generate (or resume) the catalogue images and table; returns a summary."""
    import polars as pl

    from env.storefront.catalog import catalog_from_config

    t0 = time.perf_counter()
    cfg, store = ctx.config.catalog, ctx.store
    catalog = catalog_from_config(ctx.config)
    variants = list(catalog.variants[: cfg.limit] if cfg.limit else catalog.variants)
    _check_source(cfg, variants)  # fail before anything is written
    params = image_params(cfg, catalog.variants)
    prefix = f"catalog/{params_hash(params)}"
    if not store.exists(f"{prefix}/params.json"):
        store.put_json(f"{prefix}/params.json", params)
    existing = set(store.list(prefix))
    rows = plan_rows(variants, prefix, cfg.image_format, existing)
    table_key = f"{prefix}/catalog.parquet" if len(variants) == len(catalog.variants) else f"{prefix}/catalog-first{len(variants)}.parquet"
    prev: dict[str, dict[str, Any]] = {}
    # rows recorded by earlier runs (this subset's table or the full one) whose images are still there
    for key in dict.fromkeys((table_key, f"{prefix}/catalog.parquet")):
        if key in existing:
            for r in store.read_table(key).iter_rows(named=True):
                if r["with_cue_key"] in existing and r["base_key"] in existing:
                    prev[r["url_hash"]] = {k: r[k] for k in ("url_hash",) + IMAGE_COLUMNS} | {"generated": False}
    todo = [r for r in rows if r["url_hash"] not in prev]
    ctx.manifest.component("image_source", public_spec(source_spec(cfg)))
    t_job = time.perf_counter()
    results = generate(todo, store=store, cfg=cfg, ray_cfg=ctx.config.ray, use_ray=use_ray)
    t_job = time.perf_counter() - t_job
    by_hash = prev | {r["url_hash"]: r for r in results}
    ordered = [by_hash[r["url_hash"]] for r in rows]
    cat_df = catalog.to_polars().filter(pl.col("url_hash").is_in([v.url_hash for v in variants]))
    table = build_table(cat_df, ordered)
    store.write_table(table_key, table, schema_version=SCHEMA_VERSION)
    generated = sum(1 for r in results if r.get("generated"))
    pointer = {
        "schema_version": SCHEMA_VERSION, "store": store.uri, "prefix": prefix, "table": table_key,
        "params": params, "image_source": public_spec(source_spec(cfg)), "colour_order": catalog.colour_order,
        "seed": catalog.seed, "variants": len(variants), "generated": generated,
        # what the shop serves from: the images this job wrote, in the official layout (the
        # store source reads NN.png names, so only PNG sets are servable as stored)
        "serve_spec": {"name": "store", "args": {"uri": store.uri, "prefix": prefix}} if cfg.image_format == "png" else None,
    }
    store.put_json(f"{ctx.run_prefix}/catalog.json", pointer)
    return {"status": "done", "prefix": prefix, "table": table_key, "variants": len(variants),
            "generated": generated, "skipped": len(variants) - generated, "job_s": round(t_job, 3),
            "worker_cpu_s": round(sum(r.get("cpu_s", 0.0) for r in results), 3),
            "bytes": int(table["with_cue_bytes"].sum() + table["base_bytes"].sum()),
            "wall_s": round(time.perf_counter() - t0, 3)}
