"""DMV-Bench tables on hand-built probe sets with known answers."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from vismem.analysis import dmv, synthetic
from vismem.analysis.bootstrap import cluster_ci, resample_counts, seeded_rng
from vismem.analysis.schemas import validate


def _probe(arch, seed, pid, correct, *, J=3, visit=1, recall=2, bank=10, pos=0, backend="b", study="main",
           variant="default", alpha=None):
    return {"backend": backend, "seed": seed, "J": J, "architecture": arch, "probe_id": pid, "visit_session": visit,
            "recall_session": recall, "reach": recall - visit, "bank_size": bank, "encoding_position": pos,
            "target_url": f"/product/{pid}", "final_url": None, "correct": correct, "steps": 3, "study": study,
            "variant": variant, "alpha": alpha}


def _known():
    """Chains 0,1,2. A: 3/4, 1/2, 2/2 correct; B: 1/4, 1/2, 0/2. Plus one A-only probe."""
    outcomes = {"A": {0: [1, 1, 1, 0], 1: [1, 0], 2: [1, 1]}, "B": {0: [1, 0, 0, 0], 1: [0, 1], 2: [0, 0]}}
    rows = []
    for arch, chains in outcomes.items():
        for seed, cs in chains.items():
            for i, c in enumerate(cs):
                reach = 1 + i % 2
                rows.append(_probe(arch, seed, f"p{i}", bool(c), visit=1, recall=1 + reach, bank=5 * (i + 1), pos=i))
    rows.append(_probe("A", 0, "only-a", True))
    return validate(pl.DataFrame(rows), "probes")


def test_tsr_cells_common_probes_and_cluster_ci():
    probes = _known()
    cells = dmv.tsr_cells(probes, n_resamples=2000, seed=4)
    a = cells.filter(pl.col("architecture") == "A").row(0, named=True)
    b = cells.filter(pl.col("architecture") == "B").row(0, named=True)
    assert (a["n_probes"], a["n_correct"], a["n_chains"]) == (8, 6, 3)  # the A-only probe is dropped
    assert a["tsr"] == 0.75 and b["tsr"] == 0.25
    w = resample_counts(3, 2000, seeded_rng(4, 2, 3))
    ref = cluster_ci([3, 1, 2], [4, 2, 2], weights=w)
    assert (a["cluster_low"], a["cluster_high"]) == pytest.approx((ref.low, ref.high))
    assert a["naive_low"] <= 0.75 <= a["naive_high"]
    with_extra = dmv.tsr_cells(probes, common=False, n_resamples=200)
    assert with_extra.filter(pl.col("architecture") == "A")["n_probes"][0] == 9


def test_table2_layout_and_n_r_row():
    probes = pl.concat([_known(), _known().with_columns(pl.lit(5, pl.Int64).alias("J"))])
    t2 = dmv.table2(dmv.tsr_cells(probes, n_resamples=200))
    assert t2.columns == ["architecture", "b J=3", "b J=5"]
    assert t2["architecture"].to_list() == ["A", "B", "n_r"]
    assert t2.row(0) == ("A", 0.75, 0.75) and t2.row(2) == ("n_r", 8.0, 8.0)


def test_retention_and_bins_known_values():
    probes = _known()
    ret = dmv.retention(probes, n_resamples=200)
    a = ret.filter(pl.col("architecture") == "A").sort("reach")
    # A by reach: reach 1 = p0 of each chain + p2 of chain 0 -> 1,1,1,1 ; reach 2 = 1,0,0,1 -> 0.5
    assert a["reach"].to_list() == [1, 2] and a["tsr"].to_list() == [1.0, 0.5]
    bins = dmv.binned(probes, "bank_size", n_bins=2)
    # bank sizes 5,10,15,20 -> edges 5,12.5,20: bin0 = {5,10}, bin1 = {15,20}
    ab = bins.filter(pl.col("architecture") == "A").sort("bin")
    assert ab["n"].to_list() == [6, 2] and ab["tsr"].to_list() == [5 / 6, 0.5]
    assert ab["bin_low"].to_list() == [5.0, 12.5]
    lead = dmv.leader_bins(bins, "A")
    assert lead.row(0, named=True) | {} == {"backend": "b", "J": 3, "bins": 2, "leads": 2, "ties": 0}


def test_paired_test_on_known_chain_sums():
    perm = dmv.paired_test(_known(), "A", "B")
    # d per chain: (3-1, 1-1, 2-0) = (2, 0, 2); T = 4: only (+,+,+)/(+,-,+) and flips -> 4 of 8.
    row = perm.row(0, named=True)
    assert row["d_bar"] == pytest.approx(4 / 8) and row["p_value"] == 0.5 and row["n_chains"] == 3


def test_ablations_alpha_sweep_and_encoding_stats():
    rows = [_probe("dualmem", s, f"p{i}", bool((i + s) % 2), study="ablation", variant=v)
            for v in ("inject=image", "inject=caption") for s in range(3) for i in range(4)]
    rows += [_probe("dualmem", s, f"p{i}", i < round(4 * a), study="alpha_sweep", alpha=a)
             for a in (0.0, 0.5, 1.0) for s in range(2) for i in range(4)]
    probes = validate(pl.DataFrame(rows), "probes")
    ab = dmv.ablations(probes, n_resamples=200)
    assert sorted(ab["variant"].to_list()) == ["inject=caption", "inject=image"]
    assert ab["tsr"].to_list() == [0.5, 0.5]
    sw = dmv.alpha_sweep(probes, n_resamples=200).sort("alpha")
    assert sw["alpha"].to_list() == [0.0, 0.5, 1.0] and sw["tsr"].to_list() == [0.0, 0.5, 1.0]
    assert dmv.tsr_cells(probes).height == 0  # no main-grid rows
    enc = validate(pl.DataFrame({"backend": ["x"] * 4, "seed": [0, 0, 1, 1], "j": [1, 2, 1, 2],
                                 "steps": [20, 22, 24, 26], "distinct_products": [10, 12, 2, 4],
                                 "styles": [3, 4, 1, 2]}), "encoding")
    st = dmv.encoding_stats(enc).row(0, named=True)
    assert st["sessions"] == 4 and st["chains"] == 2 and st["steps_mean"] == 23 and st["products_mean"] == 7
    assert st["share_styles_ge3"] == 0.5 and st["steps_sd"] == pytest.approx(np.std([20, 22, 24, 26], ddof=1))


def test_edge_cells_never_crash():
    empty = validate(pl.DataFrame(schema=synthetic.probes(chains=1, Js=(2,)).schema), "probes")
    assert dmv.tsr_cells(empty).height == 0 and dmv.table2(dmv.tsr_cells(empty)).height == 0
    assert dmv.binned(empty, "bank_size").height == 0 and dmv.paired_test(empty, "A", "B").height == 0
    one_chain = validate(pl.DataFrame([_probe("A", 0, f"p{i}", True) for i in range(3)]
                                      + [_probe("B", 0, f"p{i}", False) for i in range(3)]), "probes")
    cells = dmv.tsr_cells(one_chain, n_resamples=200)
    a = cells.filter(pl.col("architecture") == "A").row(0, named=True)
    assert a["tsr"] == 1.0 and math.isnan(a["cluster_low"]) and "single chain" in a["note"] and "all correct" in a["note"]
    assert "all wrong" in cells.filter(pl.col("architecture") == "B")["note"][0]
    assert a["naive_low"] == 1.0 and a["naive_high"] == 1.0
    perm = dmv.paired_test(one_chain, "A", "B").row(0, named=True)
    assert perm["p_value"] == 1.0 and "single chain" in perm["note"]
    assert dmv.top_two(cells) == ("A", "B")


def test_synthetic_grid_recovers_its_ordering():
    probes = validate(synthetic.probes(seed=3, chain_sd=0.25, chains=8), "probes")
    cells = dmv.tsr_cells(probes, n_resamples=500)
    assert dmv.top_two(cells) == ("dualmem", "m2a-lite")
    zero = cells.filter(pl.col("architecture").is_in(["nomemory", "textonly"]))
    assert (zero["tsr"] == 0).all()
    # Cluster CIs are wider than naive ones when chains carry random effects.
    real = cells.filter(pl.col("tsr") > 0)
    wider = ((real["cluster_high"] - real["cluster_low"]) > (real["naive_high"] - real["naive_low"])).mean()
    assert wider > 0.7


def test_reach_table_layout():
    rt = dmv.reach_table(dmv.retention(_known(), n_resamples=100))
    assert rt.columns == ["backend", "J", "architecture", "r=1", "r=2"]
    assert rt.row(0) == ("b", 3, "A", 1.0, 0.5)
