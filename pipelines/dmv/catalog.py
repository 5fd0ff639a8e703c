"""The ``catalog`` stage: the storefront catalogue and its 2,000 product images, as a Ray Data job.

1. **Plan** (pure): the catalogue (seed + colour order) → one row per variant with its image keys
   under a content-addressed prefix ``catalog/<params-hash>/``. The hash covers everything the
   pixels depend on (image source and its arguments, renderer version, size, format, and the
   cue assignment), so different seeds or colour orders never collide and equal ones share.
2. **Generate** (Ray Data, :mod:`vismem.pipelines.dmv.catalog_job`): ``from_items(rows) → map_batches``
   with fractional CPUs; each batch
   renders its products (with and without cue) and uploads them straight from the worker,
   ``with_cue/<cat>/<style>/NN.png`` and ``base/...`` (the official layout, so the ``store``
   image source and the official tooling read it). One output row per input row: keys, byte
   sizes, sha256, the depicted cue object. Rows whose images are already in the store are only
   read back (hash + size), never re-rendered: a killed run resumes. An image an earlier
   ``catalog.parquet`` recorded is checked against that record; a damaged one is named in the log
   and its row rendered again (counted as ``healed``).
3. **Collect** (pure): ``catalog.parquet`` (schema_version) beside the images, and
   ``runs/<run_id>/catalog.json`` pointing at the prefix.

Top-level imports stay light (the CLI imports this module for its flags).
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from vismem.pipelines.stage import Stage, count
from vismem.pipelines.dmv.catalog_job import plan_rows
from vismem.pipelines.dmv.protocol import image_params, params_hash, public_spec, source_spec, storefront_inputs

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import RunContext

SCHEMA_VERSION = 1
#: Columns of ``catalog.parquet`` added to the catalogue's own (Catalog.to_polars()).
IMAGE_COLUMNS = ("with_cue_key", "base_key", "with_cue_bytes", "base_bytes", "with_cue_sha256",
                 "base_sha256", "depicted_object")


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


def _check_source(cfg: Any, variants: Any) -> None:
    """Build the configured source once in the driver: unknown names or bad args → ConfigError."""
    from vismem.core.errors import ConfigError
    from vismem.env.storefront.imagesource import build_image_source
    from vismem.pipelines.dmv.catalog_job import RowCatalog

    rows = plan_rows(variants[:1], "check", cfg.image_format, set())
    try:
        build_image_source(source_spec(cfg), RowCatalog(rows))  # type: ignore[arg-type]
    except TypeError as err:
        raise ConfigError(f"catalog.image_source.args do not fit image source {cfg.image_source.key!r}: {err}") from None


def run(ctx: "RunContext", *, use_ray: bool = True) -> dict[str, Any]:
    """Generate (or resume) the catalogue images and table; returns a summary."""
    import polars as pl

    from vismem.pipelines.context import catalog_from_config

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
    # a recorded image is trusted only when its bytes are what the table recorded: a damaged one is
    # named, and its row rendered again (the images are byte-reproducible)
    from vismem.pipelines.dmv.catalog_job import damaged_images

    damaged = damaged_images(store, list(prev.values()))
    bad_rows = {r["url_hash"] for r in prev.values() if r["with_cue_key"] in damaged or r["base_key"] in damaged}
    for line in damaged.values():
        ctx.logger.warning("%s: discarded, recomputing", line)
    for r in rows:
        if r["url_hash"] in bad_rows:
            prev.pop(r["url_hash"])
            r["exists"] = False
    todo = [r for r in rows if r["url_hash"] not in prev]
    ctx.manifest.component("image_source", public_spec(source_spec(cfg)))
    t_job = time.perf_counter()
    from vismem.pipelines.dmv.catalog_job import generate

    results = generate(todo, store=store, spec=source_spec(cfg), cfg=cfg, ray_cfg=ctx.config.ray, use_ray=use_ray)
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
            "generated": generated, "skipped": len(variants) - generated, "healed": len(damaged),
            "job_s": round(t_job, 3),
            "worker_cpu_s": round(sum(r.get("cpu_s", 0.0) for r in results), 3),
            "bytes": int(table["with_cue_bytes"].sum() + table["base_bytes"].sum()),
            "wall_s": round(time.perf_counter() - t0, 3)}


def check(config: "RunConfig") -> None:
    """The image source is a registered name and its args fit it (nothing is built or read)."""
    from vismem.env.storefront.imagesource import IMAGE_SOURCES

    if config.catalog.enabled:
        IMAGE_SOURCES.check(config.catalog.image_source, field="catalog.image_source", injected=("catalog",))


def describe(s: dict[str, Any]) -> str:
    """One line of what ran and what was reused (the end-of-run summary)."""
    return (f"{count(s.get('variants'))} products: {count(s.get('generated'))} images generated, "
            f"{count(s.get('skipped'))} reused"
            + (f"; {s['healed']} damaged catalogue images redone" if s.get("healed") else ""))


STAGE = Stage(name="catalog", describe=describe, inputs=storefront_inputs, section="catalog", run=run, add_cli_args=add_cli_args,
              cli_overrides=cli_overrides, check=check)
