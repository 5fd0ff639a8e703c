"""The OCR job on real shots: two ocr-minilm readers as Ray Data actors, sessions in order, texts
cached by shot content in the store (a second read reads nothing), the read rate of what they
read, and the stage's glue that turns shots into the text the pixel reader embeds."""

from __future__ import annotations

import logging
import shutil
from types import SimpleNamespace

import polars as pl
import pytest

SPEC = {"name": "ocr-minilm", "args": {"ocr": {"name": "rapidocr-lines", "args": {"threads": 1}}}}


@pytest.fixture(scope="module")
def conv(data_dir):
    from dataclasses import replace

    from vismem.env.dialogue import load_locomo

    c = load_locomo(data_dir / "locomo/locomo10.json")[0]
    return replace(c, sessions=c.sessions[:2])  # 2 sessions, 10 shots: seconds, not minutes


def _units(store, conv, variant="memshot"):
    from vismem.pipelines.memshot.render import render_units, units_frame

    out = render_units(store, [conv], variant, None, f"runs/t/memshot/locomo/{variant}", use_ray=False)
    return units_frame(store, [out["prefix"]])


def _text_key(store, units, i: int) -> str:
    """The store key of shot ``i``'s cached OCR text (by the shot's content)."""
    from vismem.memory.dialogue.pixels import cache_key
    from vismem.serve.build import build_embedder

    return cache_key(build_embedder(SPEC).ocr_key, store.get_bytes(units["image_key"][i]))


@pytest.fixture(scope="module")
def first_read(tmp_path_factory, ray_local, conv):
    """The shots rendered into a store and read once on Ray by two actors, nothing cached yet:
    ``(store dir, units, texts, job summary)``. The Ray test checks this read; the stage test
    works on a copy of the store (its texts cached but one: a reading stays in its path)."""
    from vismem.core.store import Store
    from vismem.pipelines.memshot.ocr import read_shots

    root = tmp_path_factory.mktemp("ocr") / "store"
    store = Store.open(f"file://{root}")
    units = _units(store, conv)
    first, job = read_shots(units, SPEC, store=store, ray_cfg=ray_local, actors=2)
    return root, units, first, job


def test_ocr_job_on_ray_reads_and_caches_by_content(first_read, ray_local, conv):
    from vismem.core.store import Store
    from vismem.analysis.memshot_sections import readrate_table
    from vismem.memory.dialogue.readrate import unit_readings
    from vismem.pipelines.memshot.ocr import read_shots, session_rows

    root, units, first, job = first_read
    file_store = Store.open(f"file://{root}")  # only read below (every shot is cached)
    assert len(session_rows(units)) == 2 and units.height >= 6
    assert job["shots"] == units.height == job["read"] and job["cached"] == 0
    assert first["item_id"].to_list() == ("u:memshot:" + units["unit_id"]).to_list()  # units order kept
    assert all("Caroline" in t and "Melanie" in t for t in first["ocr_text"].to_list())
    assert file_store.get_bytes(_text_key(file_store, units, 0)).decode() == first["ocr_text"][0]
    # Every shot cached: no reader is built (no actor, no model), on Ray or not.
    import vismem.pipelines.memshot.ocr as ocr_job

    def no_reader(*a, **k):
        raise AssertionError("a reader was built for fully cached shots")

    orig, ocr_job._OcrActor = ocr_job._OcrActor, no_reader
    try:
        again, job2 = read_shots(units, SPEC, store=file_store, actors=2, use_ray=False)
        on_ray, _ = read_shots(units, SPEC, store=file_store, ray_cfg=ray_local, actors=2)
    finally:
        ocr_job._OcrActor = orig
    assert on_ray.equals(again)
    assert job2["cached"] == units.height and job2["read"] == 0
    # a cached shot still reports the seconds its first reading took (construction latency)
    assert again["ocr_s"].to_list() == first["ocr_s"].to_list() and (again["ocr_s"] > 0).all()
    assert again["ocr_text"].to_list() == first["ocr_text"].to_list()
    rates = readrate_table(unit_readings([conv], units.with_columns(
        ("u:memshot:" + pl.col("unit_id")).alias("item_id")).join(first, on="item_id")))
    r = rates.row(0, named=True)
    assert r["variant"] == "memshot" and r["shots"] == units.height and r["read_rate"] >= 0.95 and r["min_shot"] > 0.9


def test_stage_turns_shots_into_pixel_text(first_read, tmp_path, conv):
    """``_pixel_text``: image units become ``ocr`` rows holding the OCR text, text units are left
    alone, the read rate is written per shot and summarised per variant."""
    from vismem.core.store import Store
    from vismem.pipelines.memshot.config import MemShotConfig
    from vismem.pipelines.settings import RayConfig
    from vismem.pipelines.memshot.steps import pixel_text as _pixel_text

    # The Ray test's shots and texts, copied (this test writes); one text dropped, so that this
    # process's reader reads one shot (the in-process path) while the others come from the cache.
    root, shot_units, _first, _job = first_read
    shutil.copytree(root, tmp_path / "store")
    file_store = Store.open(f"file://{tmp_path / 'store'}")
    file_store.delete(_text_key(file_store, shot_units, 0))
    units = pl.concat([shot_units, _units(file_store, conv, "no-render")], how="diagonal_relaxed")
    cfg = SimpleNamespace(memshot=MemShotConfig(image_embedder=SPEC, ocr_on_ray=False), ray=RayConfig())
    ctx = SimpleNamespace(config=cfg, store=file_store, run_prefix="runs/t", logger=logging.getLogger("t"))
    out, extras = _pixel_text(ctx, units, [conv])
    assert (extras["ocr"]["read"], extras["ocr"]["cached"]) == (1, shot_units.height - 1)
    shots = out.filter(pl.col("variant") == "memshot")
    assert (shots["modality"] == "ocr").all() and all("Caroline" in t for t in shots["text"].to_list())
    text = out.filter(pl.col("variant") == "no-render")
    assert (text["modality"] == "text").all() and text["text"].to_list() == units.filter(
        pl.col("variant") == "no-render")["text"].to_list()
    assert extras["read_rate"]["memshot"]["read_rate"] >= 0.95 and extras["ocr"]["shots"] == shots.height
    per_shot = file_store.read_table("runs/t/results/memshot_readrate.parquet")
    assert per_shot.height == shots.height and set(per_shot["dataset"]) == {"locomo"}
    assert extras["seconds"]["embedder"].unique().to_list() == ["ocr-minilm (stand-in)"]
    none_cfg = SimpleNamespace(memshot=MemShotConfig(image_embedder=None), ray=RayConfig())
    assert _pixel_text(SimpleNamespace(**{**vars(ctx), "config": none_cfg}), units, [conv]) == (units, {})


def test_a_damaged_cached_text_is_read_again_and_counted(file_store, monkeypatch, caplog):
    # An emptied OCR text is named once, read again, and the job's summary (and so the stage's
    # line) counts it; a whole cache reads nothing.
    import vismem.serve.build as build
    from vismem.memory.dialogue.pixels import cache_key
    from vismem.pipelines.memshot.ocr import read_shots
    from vismem.pipelines.memshot.stage import describe

    class Reader:
        ocr_key = "fake/v1"
        reads = 0

        def read_images(self, images):
            Reader.reads += len(images)
            return [f"text of {img.decode()}" for img in images]

    monkeypatch.setattr(build, "build_embedder", lambda spec: Reader())
    for i in range(3):
        file_store.put_bytes(f"shots/{i}.png", f"shot {i}".encode())
    units = pl.DataFrame({"variant": ["memshot"] * 3, "conversation_id": ["c"] * 3, "session_index": [0, 0, 1],
                          "unit_index": [0, 1, 0], "unit_id": ["a", "b", "c"],
                          "image_key": [f"shots/{i}.png" for i in range(3)]})
    first, job = read_shots(units, SPEC, store=file_store, use_ray=False)
    assert (job["read"], job["healed"], Reader.reads) == (3, 0, 3)
    key = cache_key("fake/v1", b"shot 1")
    file_store.put_bytes(key, b"")  # emptied
    with caplog.at_level(logging.WARNING):
        again, job = read_shots(units, SPEC, store=file_store, use_ray=False)
    assert (job["read"], job["cached"], job["healed"], Reader.reads) == (1, 2, 1, 4)
    assert again["ocr_text"].to_list() == first["ocr_text"].to_list() and again["ocr_healed"].to_list() == [False, True, False]
    assert caplog.text.count(f"damaged cache object {key}") == 1
    assert describe({"conversations": 1, "questions": 2, "units": 3, "ocr": job}).endswith("; 1 damaged OCR texts redone")
