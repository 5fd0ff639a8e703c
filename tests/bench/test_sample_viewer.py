"""The sample-viewer benchmark at a small size: registered, the synthetic run's shape, its records."""

from __future__ import annotations

import polars as pl

from vismem.bench import calibration
from vismem.bench.harness import load_all
from vismem.bench.sample_viewer import (NAME, PAPER_VARIANTS, TARGET_HTML_MB, TARGET_OPEN_S, TURNS_PER_UNIT, VARIANTS,
                                        measure, synthetic_run, write_viewer)


def test_registered_with_the_bench_command():
    assert NAME in load_all()


def test_synthetic_run_has_the_asked_shape():
    run = synthetic_run(conversations=3, sessions=4, units_per_session=2, questions=20, top=4)
    assert run["questions"].height == 20 and run["questions"]["conversation_id"].n_unique() == 3
    assert set(run["ranked"]["variant"]) == set(VARIANTS)
    assert run["ranked"].group_by("variant", "question_id").len()["len"].to_list() == [4] * 20 * len(VARIANTS)
    assert run["recall"].height == run["answers"].height == 20 * len(VARIANTS) * 2
    # The recall rows agree with the ranking (the page recomputes hits from it).
    units = run["units"].select("variant", "unit_id", "dia_ids")
    top = (run["ranked"].filter(pl.col("rank") <= 4).join(units, on=["variant", "unit_id"])
           .join(run["questions"].select("question_id", "evidence"), on="question_id")
           .with_columns(pl.col("dia_ids").list.set_intersection("evidence").list.len().gt(0).alias("has"))
           .group_by("variant", "question_id").agg(pl.col("has").any()))
    got = top.join(run["recall"].filter(pl.col("k") == 5), on=["variant", "question_id"])
    assert (got["has"] == got["hit"]).all() and got["hit"].any() and not got["hit"].all()


def test_the_benchmark_ranks_the_paper_presets_variants():
    """The benchmark's run has every variant a full-LoCoMo run of the paper preset ranks (its
    variants and memories), each unit size with its own units."""
    from vismem.pipelines.config import load_config

    ms = load_config(preset="paper").memshot
    assert set(PAPER_VARIANTS) == set(ms.variants) | {m.name for m in ms.memories}
    run = synthetic_run(conversations=1, sessions=2, units_per_session=7, questions=4, top=4, variants=PAPER_VARIANTS)
    assert set(run["ranked"]["variant"]) == set(PAPER_VARIANTS)
    per_session = run["units"].group_by("variant").len().sort("variant")
    n = dict(per_session.iter_rows())
    assert n["h512"] == 2 * -(-28 // TURNS_PER_UNIT["h512"]) > n["memshot"] == 2 * 7 > n["h1024"] == 2 * 5
    assert n["full-session"] == n["text-rag"] == 2


def test_measure_in_chromium(tmp_path, chromium_path):
    path = write_viewer(tmp_path, synthetic_run(conversations=2, sessions=3, units_per_session=3, questions=30, top=6))
    recs = {r["metric"]: r for r in measure(path, chromium_path)}
    # the open time's target is a ratio over the run's calibration unit, not a time
    assert recs["open_s"]["target"] is None and 0 < recs["open_s"]["value"] < 30
    unit = recs["open_s / calibration unit"]
    assert unit["ratio"] == {"of": [NAME, "open_s"], "over": ["calibration", "unit_s"]}
    assert unit["target"] == calibration.units(TARGET_OPEN_S) == 12.0
    assert recs["html_mb"]["target"] == TARGET_HTML_MB and recs["html_mb"]["value"] == path.stat().st_size / 1e6
    assert recs["questions"]["value"] == 30 and recs["next_question_ms"]["value"] > 0 and recs["filter_ms"]["value"] > 0
    assert recs["variants"]["value"] == len(VARIANTS) and 0 < recs["open_cpu_s"]["value"] < 30
