"""Table 4 in the paper's blocks, the ablation subset beside the full set; Table 7; the caption rate."""

from __future__ import annotations

import polars as pl

from vismem.analysis import synthetic
from vismem.analysis.report import ReportOptions, build_report

FAST = ReportOptions(n_resamples=200, seed=1)
VARIANTS = {"dualmem-verb": 0.5, "dualmem-a0.25": 0.6, "dualmem-a0.5": 0.7, "dualmem": 0.8, "dualmem-vis": 0.75,
            "dualmem-img": 0.72, "dualmem-cap": 0.6, "dualmem-vis-img": 0.7, "dualmem-vis-cap": 0.55}


def _probes():
    # The ablation variants on chains 0-2, the encoder pair (and DualMem) on all 5, as the paper.
    abl = synthetic.probes(backends=("gemini-2.5-flash",), Js=(5,), chains=3, p=VARIANTS, study="ablation")
    full = synthetic.probes(backends=("gemini-2.5-flash",), Js=(5,), chains=5,
                            p={"dualmem-a0.5": 0.7, "dualmem-clip": 0.6, "dualmem": 0.8}, study="main", seed=3)
    return pl.concat([abl, full], how="diagonal_relaxed")


def test_table4_has_the_papers_blocks_with_the_subset_next_to_the_full_set():
    from vismem.analysis.dmv_table4 import table4

    t = table4(_probes(), n_resamples=200)
    assert t["block"].unique(maintain_order=True).to_list() == [
        "alpha sweep", "injection (hybrid, alpha 0.5)", "visual retrieval x injection", "encoder (alpha 0.5)"]
    assert t.filter(pl.col("block") == "alpha sweep")["architecture"].to_list() == [
        "dualmem-verb", "dualmem-a0.25", "dualmem-a0.5", "dualmem", "dualmem-vis"]
    clip = t.filter(pl.col("architecture") == "dualmem-clip").row(0, named=True)
    # CLIP was probed on all 5 chains; the subset is the 3 every Table 4 variant has.
    assert (clip["n_chains"], clip["n_chains_subset"]) == (5, 3)
    siglip = t.filter((pl.col("block") == "encoder (alpha 0.5)") & (pl.col("row") == "SigLIP-2")).row(0, named=True)
    assert siglip["architecture"] == "dualmem-a0.5" and siglip["n_chains"] == 5
    assert table4(_probes(), subset_chains=2, n_resamples=200)["n_chains_subset"].max() == 2
    # A variant probed only on the subset has no full-set value: never its subset number as the full set's.
    verb = t.filter(pl.col("architecture") == "dualmem-verb").row(0, named=True)
    assert (verb["n_chains_subset"], verb["tsr_subset"] is not None, verb["n_chains"], verb["tsr"]) == (3, True, None, None)
    dual = t.filter(pl.col("architecture") == "dualmem").row(0, named=True)  # on both: subset 3 chains, full 5
    assert (dual["n_chains_subset"], dual["n_chains"]) == (3, 5) and dual["tsr"] != dual["tsr_subset"]


def test_report_shows_table4_with_the_papers_numbers_per_block():
    rep = build_report({"probes": _probes()}, "r", options=FAST)
    abl = next(s for s in rep.sections if s.id == "dmv-ablations")
    t4 = next(t for t in abl.tables if t.id == "table4")
    a05 = t4.df.filter(pl.col("architecture") == "dualmem-a0.5")
    # dualmem-a0.5 sits in three blocks; its encoder row quotes the encoder block's full-set 79.6.
    assert a05["block"].to_list() == ["alpha sweep", "injection (hybrid, alpha 0.5)", "encoder (alpha 0.5)"]
    assert a05["paper"].to_list() == [0.789, 0.789, 0.796]
    assert "7-chain subset" in t4.caption
    assert "ablation chain subset, seeds 0-2 (3 chains)" in t4.caption  # which chains the subset is


def test_subset_caption_names_the_chains_per_cell_when_they_differ():
    from vismem.analysis.dmv_table4 import subset_caption

    two = pl.concat([_probes(), _probes().with_columns(pl.lit("qwen2.5-vl-7b").alias("backend"))
                     .filter(~((pl.col("seed") == 1) & (pl.col("architecture") == "dualmem-verb")))])
    assert subset_caption(two) == "gemini-2.5-flash J=5: seeds 0-2 (3 chains); qwen2.5-vl-7b J=5: seeds 0, 2 (2 chains)"
