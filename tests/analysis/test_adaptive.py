"""The adaptive stopping rule (analysis.adaptive) and its simulation (analysis.adaptive_sim)."""

from __future__ import annotations

import numpy as np
import polars as pl

from vismem.analysis import adaptive_sim as sim
from vismem.analysis.adaptive import Rule, cell_status, checkpoints, draw_order, marks, open_blocks


def _units(scored: int, *, a_rate=1.0, b_rate=0.0, n_units=12, study_b="main"):
    rows = []
    for arch, rate, study in (("dualmem", a_rate, "main"), ("m2a-lite", b_rate, study_b)):
        for k in range(n_units):
            n = 4 + k % 3
            rows.append({"backend": "qwen", "architecture": arch, "study": study, "chain": k % 3, "j": 1 + k // 3,
                         "draw": k, "n": n, "correct": round(rate * n) if k < scored else None})
    return pl.DataFrame(rows, schema_overrides={"correct": pl.Int64})


def test_reasons_open_width_decided_exhausted():
    loose = Rule(width=1.0, min_units=4, batch=2)
    assert set(cell_status(_units(2), loose, [5])["reason"]) == {"open"}  # fewer than min_units scored
    st = cell_status(_units(4), loose, [5])
    assert set(st.filter(pl.col("kind") == "tsr")["reason"]) == {"width"} and "contrast" not in st["kind"].to_list()
    tight = Rule(width=0.01, min_units=4, batch=2, contrast=("dualmem", "m2a-lite"))
    st = cell_status(_units(12, n_units=40), tight, [15])
    con = st.filter(pl.col("kind") == "contrast").row(0, named=True)
    # decided by the bets, not by what the 28 units left could still do (all of them -1)
    assert con["architecture"] == "dualmem − m2a-lite" and con["low"] > 0 and con["reason"] == "decided"
    assert set(st.filter(pl.col("kind") == "tsr")["reason"]) == {"decided"}
    row = st.filter(pl.col("architecture") == "dualmem").row(0, named=True)
    assert (row["units_probed"], row["units_eligible"], row["estimate"]) == (12, 40, 1.0)
    done = cell_status(_units(12, a_rate=0.5, b_rate=0.5), tight, [5])
    assert set(done["reason"]) == {"exhausted"} and open_blocks(done) == []


def test_nested_J_cells_and_open_blocks_ignore_other_studies():
    tight = Rule(width=0.01, min_units=2, batch=2)
    st = cell_status(_units(4, a_rate=0.5, study_b="ablation"), tight, [3, 5])
    j3 = st.filter((pl.col("J") == 3) & (pl.col("architecture") == "dualmem")).row(0, named=True)
    assert j3["units_eligible"] == 6 and j3["units_probed"] == 4  # units with j < 3 only
    assert open_blocks(st) == ["qwen"]
    main_done = cell_status(_units(12, a_rate=0.5).filter(pl.col("architecture") == "dualmem")
                            .vstack(_units(4, study_b="ablation").filter(pl.col("architecture") == "m2a-lite")),
                            tight, [5])
    assert open_blocks(main_done) == []  # an open ablation cell holds nothing


def test_draw_order_and_checkpoints_follow_the_seed():
    assert np.array_equal(draw_order(20, 0, 1), draw_order(20, 0, 1))
    assert not np.array_equal(draw_order(20, 0, 1), draw_order(20, 0, 2))
    assert sorted(draw_order(20, 3, 1)) == list(range(20))
    assert checkpoints(10, Rule(min_units=4, batch=3)) == [4, 7, 10]


def test_simulated_studies_save_probes_and_keep_coverage():
    p = {"nomemory": 0.0, "m2a-lite": 0.6, "dualmem": 0.8}
    c, sizes = sim.synthetic(60, chains=6, J=12, products=3, p=p, seed=4)
    assert c.shape == (60, 3, 66) and (c[:, 0] == 0).all() and (c <= sizes).all()
    out = sim.simulate(c, sizes, Rule(width=0.15, min_units=8, batch=8), seed=4, contrast=(2, 1))
    assert out.saving() > 1.5 and out.coverage() >= 0.95 and out.wrong_decisions() <= 0.05
    assert (out.stop_units < sizes.size).mean() > 0.5
    wide = sim.expected_fraction(chains=6, J=12, products=3, rule=Rule(width=0.3, min_units=8, batch=8), studies=8)
    narrow = sim.expected_fraction(chains=6, J=12, products=3, rule=Rule(width=0.05, min_units=8, batch=8), studies=8)
    assert 0 < wide < narrow <= 1


def test_units_of_an_exhaustive_table_give_its_tsr_and_the_report_marks_every_cell():
    from vismem.analysis import dmv, synthetic
    from vismem.analysis.adaptive import units_from_probes
    from vismem.analysis.render import Section, Table, table_markdown
    from vismem.analysis.report import ReportOptions, _adaptive_marks, build_report

    probes = synthetic.probes(Js=(6,), chains=3, seed=2)
    units = units_from_probes(probes, seed=2)
    full = cell_status(units, Rule(grid=2001), [6]).filter(pl.col("kind") == "tsr")
    ref = dmv.tsr_cells(probes, common=False, n_resamples=10)
    both = full.join(ref, on=["backend", "J", "architecture"])
    assert both.height == ref.height and (both["reason"] == "exhausted").all()
    assert (both["estimate"] - both["tsr"]).abs().max() < 1e-12 and (both["probes_eligible"] == both["n_probes"]).all()
    assert ((both["low"] <= both["tsr"]) & (both["tsr"] <= both["high"]) & (both["high"] - both["low"] < 0.002)).all()
    assert units.select("backend", "chain", "j", "draw").unique().group_by("backend", "chain", "j").len()["len"].max() == 1

    status = synthetic.adaptive(scored=4)
    rep = build_report({"adaptive": status}, "r", options=ReportOptions(n_resamples=50))
    main = next(s for s in rep.sections if s.id == "dmv-main")
    table = next(t for t in main.tables if t.id == "adaptive")
    assert table.df.height == status.height and set(table.df["units"]) == {"4 / 12"}
    assert "4 / 12" in table_markdown(table) and set(table.df["reason"]) <= {"open", "width", "decided"}
    t2 = Section("dmv-main", "main", tables=[Table("table2", "TSR", pl.DataFrame({"architecture": ["dualmem"]}))])
    _adaptive_marks([t2], status)
    assert "Adaptive run" in t2.tables[0].caption and [t.id for t in t2.tables] == ["table2", "adaptive"]
    from vismem.analysis.dmv_runs import combine_runs

    both = combine_runs({"a": {"probes": probes, "adaptive": status}, "b": {"probes": probes}})
    assert marks(both["adaptive"])["run"].unique().to_list() == ["a"]

