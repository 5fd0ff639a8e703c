"""The catalog stage: planning is pure and content-addressed; the Ray Data job writes images and
catalog.parquet to the real S3 server, and resumes without regenerating."""

from __future__ import annotations

import hashlib
import io
import logging

import pytest

from vismem.pipelines.dmv import catalog as stage
from vismem.pipelines.dmv import protocol


def _ctx(store, tmp_path, data_dir, **catalog_cfg):
    from vismem.pipelines.config import parse_config
    from vismem.pipelines.manifest import Manifest
    from vismem.pipelines.context import RunContext

    cfg = parse_config({"name": "t-catalog", "data_dir": str(data_dir),
                        "catalog": catalog_cfg,
                        "ray": {"num_cpus": 2, "object_store_mb": 300, "actor_cpus": 0.25, "concurrency": 2}})
    return RunContext(config=cfg, store=store, run_dir=tmp_path / "run", manifest=Manifest(store, cfg.run_id),
                      logger=logging.getLogger("vismem"))


def test_stage_module_imports_light():
    import subprocess
    import sys

    code = "import sys, vismem.pipelines.dmv.catalog; print(any(m in sys.modules for m in ('ray', 'PIL', 'polars')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_prefix_depends_on_pixels_inputs_only(data_dir):
    from vismem.env.storefront.catalog import load_catalog
    from vismem.pipelines.dmv.config import CatalogConfig

    data = data_dir
    cfg = CatalogConfig()
    h = lambda c, cat: protocol.params_hash(protocol.image_params(c, cat.variants))  # noqa: E731
    s0, s0b, s1 = (load_catalog(data, seed=s) for s in (0, 0, 1))
    off = load_catalog(data, colour_order="official")
    assert h(cfg, s0) == h(cfg, s0b)
    assert len({h(cfg, s0), h(cfg, s1), h(cfg, off)}) == 3
    assert h(cfg.model_copy(update={"image_size": 256}), s0) != h(cfg, s0)
    assert h(cfg.model_copy(update={"limit": 20}), s0) == h(cfg, s0)  # a subset shares the images


def test_plan_rows_marks_existing(data_dir):
    from vismem.env.storefront.catalog import load_catalog

    cat = load_catalog(data_dir)
    vs = cat.variants[:3]
    done = {f"p/{vs[0].image_path}", f"p/{vs[0].base_image_path}", f"p/{vs[1].image_path}"}
    rows = stage.plan_rows(vs, "p", "png", done)
    assert [r["exists"] for r in rows] == [True, False, False]
    assert rows[2]["with_cue_key"] == f"p/with_cue/{vs[2].cat}/{vs[2].style}/{vs[2].image_idx:02d}.png"


def test_catalog_job_on_ray_and_s3_resumes(ray_local, s3_store, tmp_path, data_dir):
    from PIL import Image

    from vismem.env.storefront.catalog import load_catalog
    from vismem.env.storefront.imagesource import build_image_source

    ctx = _ctx(s3_store, tmp_path, data_dir, limit=20, batch_size=5)
    first = stage.run(ctx)
    assert first["variants"] == 20 and first["generated"] == 20 and first["skipped"] == 0
    prefix = first["prefix"]
    assert prefix.startswith("catalog/") and len(prefix) == len("catalog/") + 16
    keys = s3_store.list(prefix)
    assert sum(k.endswith(".png") for k in keys) == 40
    table = s3_store.read_table(first["table"])
    assert table.height == 20 and set(table["schema_version"]) == {1}
    catalog = load_catalog(ctx.data_dir, seed=0)
    assert table["url_hash"].to_list() == [v.url_hash for v in catalog.variants[:20]]  # catalogue order
    for col in ("name", "price", "cue_object", "cue_color", "with_cue_key", "base_key", "depicted_object", "with_cue_bytes"):
        assert col in table.columns
    pointer = s3_store.get_json(f"{ctx.run_prefix}/catalog.json")
    assert pointer["prefix"] == prefix and pointer["table"] == first["table"]

    # the shop's store source serves exactly what the job wrote (same layout), bytes match the table
    src = build_image_source(pointer["serve_spec"] | {"args": pointer["serve_spec"]["args"] | {
        "endpoint_url": s3_store.spec.endpoint_url, "access_key": s3_store.spec.access_key,
        "secret_key": s3_store.spec.secret_key}}, catalog)
    row = table.row(7, named=True)
    data = src.get(row["url_hash"])
    assert hashlib.sha256(data).hexdigest() == row["with_cue_sha256"]
    assert Image.open(io.BytesIO(data)).size == (512, 512)
    # and they are the procedural source's bytes: the job is the renderer, sharded
    assert data == build_image_source("procedural", catalog).get(row["url_hash"])

    again = stage.run(ctx)
    assert again["generated"] == 0 and again["skipped"] == 20 and again["prefix"] == prefix

    s3_store.delete(row["with_cue_key"])  # a lost image is regenerated, identically
    third = stage.run(ctx)
    assert third["generated"] == 1
    assert hashlib.sha256(s3_store.get_bytes(row["with_cue_key"])).hexdigest() == row["with_cue_sha256"]


def test_official_source_through_the_job(tmp_path, file_store, data_dir):
    """The official images (here a fake set at 300 px) are conformed to the configured size."""
    from PIL import Image

    from vismem.env.storefront.catalog import load_catalog

    root = tmp_path / "official"
    cat = load_catalog(data_dir)
    for v in cat.variants[:10]:
        for rel in (v.image_path, v.base_image_path):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (300, 300), (v.image_idx * 20, 90, 90)).save(root / rel)
    ctx = _ctx(file_store, tmp_path, data_dir, limit=10, image_source="official", image_source_args={"root": str(root)})
    out = stage.run(ctx, use_ray=False)
    assert out["generated"] == 10
    table = file_store.read_table(out["table"])
    assert table["depicted_object"].to_list() == table["cue_object"].to_list()
    im = Image.open(io.BytesIO(file_store.get_bytes(table["with_cue_key"][0])))
    assert im.size == (512, 512)


def test_unknown_image_source_is_an_error(tmp_path, file_store, data_dir):
    from vismem.core.errors import ConfigError, DataError

    ctx = _ctx(file_store, tmp_path, data_dir, limit=2, image_source="nope")
    with pytest.raises(ConfigError, match="nope"):
        stage.run(ctx, use_ray=False)
    ctx = _ctx(file_store, tmp_path, data_dir, limit=2, image_source="official")
    with pytest.raises(ConfigError, match="root"):
        stage.run(ctx, use_ray=False)
    ctx = _ctx(file_store, tmp_path, data_dir, limit=2, image_source="official",
               image_source_args={"root": str(tmp_path / "missing")})
    with pytest.raises(DataError, match="with_cue"):
        stage.run(ctx, use_ray=False)
    assert file_store.list("catalog") == []  # nothing half-written


def test_credentials_never_reach_params_or_manifest():
    from vismem.pipelines.dmv.config import CatalogConfig

    cfg = CatalogConfig(image_source="official", image_source_args={"root": "s3://b/imgs", "access_key": "AK",
                                                                     "secret_key": "SK"})
    params = protocol.image_params(cfg, [])
    assert "AK" not in str(params) and "SK" not in str(params)
    assert params["source"]["args"] == {"root": "s3://b/imgs"}


def test_default_batch_size_makes_four_batches_per_task():
    from vismem.pipelines.rayctx import batch_size_for

    assert batch_size_for(1000, 2) == 125  # 8 batches on 2 cores
    assert batch_size_for(1001, 2) == 126  # rounded up: never a ninth, tiny batch
    assert batch_size_for(1000, 64) == 10  # a big cluster: at least 10 rows a batch
    assert batch_size_for(30, 2) == 10 and batch_size_for(0, 0) == 10


_PHOTOS = """
import hashlib, sys
from vismem.env.storefront.catalog import load_catalog
from vismem.env.storefront.imagesource import build_image_source
from vismem.pipelines.dmv.config import CatalogConfig
from vismem.pipelines.dmv.protocol import source_spec

cat = load_catalog(sys.argv[1])
src = build_image_source(source_spec(CatalogConfig()), cat)
for v in cat.variants[::97]:
    cue, base = src.get_pair(v.url_hash)
    print(v.url_hash, hashlib.sha256(cue).hexdigest(), hashlib.sha256(base).hexdigest())
"""


def test_catalogue_pngs_are_the_same_bytes_in_two_fresh_processes(data_dir):
    """The catalogue's default PNG writer is one whose bytes repeat (content keys must not change
    between runs); each fresh process renders and encodes the same products."""
    import subprocess
    import sys

    from vismem.core.png import ISAL_MAX_LEVEL
    from vismem.pipelines.dmv.config import CatalogConfig

    assert CatalogConfig().png_compress_level <= ISAL_MAX_LEVEL == 0  # ISA-L at level 0, nothing above
    runs = [subprocess.run([sys.executable, "-c", _PHOTOS, str(data_dir)], capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    first = runs[0].stdout.splitlines()
    assert len(first) >= 10 and runs[1].stdout.splitlines() == first


def test_damaged_catalogue_image_is_named_and_rendered_again(tmp_path, file_store, data_dir, caplog, capsys):
    """A stored image whose bytes differ from what catalog.parquet recorded is not trusted: the
    re-run names it in one line, renders it again (byte-identical) and counts it; `vismem store
    verify` finds the same damage, and with --discard deletes it so the next run renders it."""
    from vismem.pipelines.cli import main

    verify = ["store", "verify", "--store", f"file://{tmp_path}/store"]
    ctx = _ctx(file_store, tmp_path, data_dir, limit=3)
    first = stage.run(ctx, use_ray=False)
    assert first["generated"] == 3 and not first.get("healed")
    row = file_store.read_table(first["table"]).row(1, named=True)
    original = file_store.get_bytes(row["base_key"])
    assert hashlib.sha256(original).hexdigest() == row["base_sha256"]
    file_store.put_bytes(row["base_key"], original[:-10] + b"0123456789")  # same size, other bytes
    assert main(verify) == 1
    out = capsys.readouterr().out
    assert f"damaged catalogue image {row['base_key']}: {len(original)} bytes" in out
    assert "6 cached units checked, 1 damaged" in out

    with caplog.at_level(logging.WARNING, logger="vismem"):
        again = stage.run(ctx, use_ray=False)
    assert again["healed"] == 1 and again["generated"] == 1 and again["skipped"] == 2
    assert file_store.get_bytes(row["base_key"]) == original
    lines = [r.getMessage() for r in caplog.records if "damaged catalogue image" in r.getMessage()]
    assert len(lines) == 1 and row["base_key"] in lines[0]
    assert "1 damaged catalogue images redone" in stage.describe(again)
    assert file_store.read_table(again["table"]).row(1, named=True)["base_sha256"] == row["base_sha256"]

    clean = stage.run(ctx, use_ray=False)  # healed: nothing left to redo
    assert clean["healed"] == 0 and clean["generated"] == 0
    assert main(verify) == 0

    file_store.put_bytes(row["with_cue_key"], b"not a png")
    assert main(verify + ["--discard", "catalog"]) == 1
    assert not file_store.exists(row["with_cue_key"])
    assert main(verify) == 0  # a lost image is not damage: the next run renders it
    redone = stage.run(ctx, use_ray=False)
    assert redone["generated"] == 1 and redone["healed"] == 0
    assert hashlib.sha256(file_store.get_bytes(row["with_cue_key"])).hexdigest() == row["with_cue_sha256"]
