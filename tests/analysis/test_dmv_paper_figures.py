"""DMV-Bench figures as the paper defines them (issue 27): Fig. 7's alpha sweep per family with its
endpoints, built from the real variant names and studies."""

from __future__ import annotations

import polars as pl

from vismem.analysis import dmv, figures, synthetic
from vismem.analysis.schemas import validate
from vismem.memory.agent.variants import list_variants, load_variant

BACKENDS = ("gemini-2.5-flash", "qwen2.5-vl-7b")


def _variant_rows() -> pl.DataFrame:
    """Probe rows for every shipped variant, labelled as the probes stage labels them: one row per
    (study it belongs to, back-end, chain, probe); variant ``i`` gets ``i`` mod 5 correct of 5."""
    rows = []
    for i, name in enumerate(list_variants()):
        v = load_variant(name)
        alpha = v.labels.get("alpha")
        for st in [v.study, *v.also]:
            variant = "default" if v.study == "main" or st == "main" else ", ".join(
                f"{k}={x}" for k, x in sorted(v.labels.items()))
            for backend in BACKENDS:
                for seed in (0, 1):
                    for p in range(5):
                        rows.append({"backend": backend, "seed": seed, "J": 5, "architecture": name,
                                     "probe_id": f"p{p}", "visit_session": 1, "recall_session": 2, "reach": 1,
                                     "bank_size": 10, "encoding_position": p, "target_url": f"/product/{p}",
                                     "final_url": None, "correct": p < i % 5, "steps": 2, "study": st,
                                     "variant": variant, "alpha": alpha})
    return validate(pl.DataFrame(rows), "probes")


def test_alpha_sweep_groups_by_family_with_both_endpoints() -> None:
    sw = dmv.alpha_sweep(_variant_rows(), n_resamples=100)
    assert set(sw["architecture"].to_list()) == {"dualmem"}
    for backend in BACKENDS:
        d = sw.filter(pl.col("backend") == backend).sort("alpha")
        assert d["alpha"].to_list() == [0.0, 0.25, 0.5, 0.75, 1.0]
        assert d["source"].to_list() == ["dualmem-verb", "dualmem-a0.25", "dualmem-a0.5", "dualmem", "dualmem-vis"]
        assert d["n_probes"].to_list() == [10] * 5
    assert dmv.sweep_family("dualmem-a0.25") == dmv.sweep_family("dualmem-vis") == "dualmem"
    assert dmv.sweep_family("dualmem-vis-img") == "dualmem-vis-img" and dmv.sweep_family("m2a-lite") == "m2a-lite"


def test_fig7_has_one_line_of_five_points_per_backend() -> None:
    fig = figures.alpha(dmv.alpha_sweep(_variant_rows(), n_resamples=100))
    ax = fig.axes[0]
    lines = {c.get_label(): c.lines[0].get_xdata() for c in ax.containers}
    assert sorted(lines) == [f"dualmem ({b}, J=5)" for b in BACKENDS]
    assert all(list(x) == [0.0, 0.25, 0.5, 0.75, 1.0] for x in lines.values())
    figures.render(fig)


def test_encoding_position_bins_are_visit_sessions_per_J() -> None:
    from vismem.analysis import synthetic

    probes = synthetic.probes(backends=BACKENDS, Js=(5, 10, 15), chains=2, products_per_session=1,
                              p={"dualmem": 0.8, "m2a-lite": 0.6})
    # one empty bin, as in the paper: no probe targets session 14 of Qwen's J = 15 chains
    probes = probes.filter(~((pl.col("backend") == BACKENDS[1]) & (pl.col("J") == 15) & (pl.col("visit_session") == 14)))
    pos = dmv.position_bins(validate(probes, "probes"))
    per_arch = pos.group_by("architecture").len()
    assert per_arch["len"].to_list() == [53, 53]  # 2 x (4 + 9 + 14) - 1, the paper's count
    d = pos.filter((pl.col("backend") == BACKENDS[0]) & (pl.col("J") == 5) & (pl.col("architecture") == "dualmem"))
    assert d["bin"].to_list() == [1, 2, 3, 4] and d["bin_low"].to_list() == [1.0, 2.0, 3.0, 4.0]
    # visit session 1 of a J = 5 chain is probed after sessions 2..5: 4 probes per chain
    assert d["n"].to_list() == [8, 6, 4, 2]
    lead = dmv.leader_bins(pos, "dualmem")
    assert lead["bins"].sum() == 53
    figures.render(figures.bins(dmv.binned(probes, "bank_size"), pos, BACKENDS[0]))


def test_paper_column_quotes_the_paper_where_it_has_a_number() -> None:
    from vismem.analysis.dmv_paper import paper_backend, quoted, with_paper

    sw = with_paper(dmv.alpha_sweep(_variant_rows(), n_resamples=100), ("table4",), "tsr", on="source")
    gem = sw.filter(pl.col("backend") == BACKENDS[0]).sort("alpha")
    assert gem["paper"].to_list() == [0.651, None, 0.789, 0.820, 0.797]   # the paper gives no alpha-0.25 number
    assert sw.filter(pl.col("backend") == BACKENDS[1])["paper"].null_count() == 5
    cells = pl.DataFrame({"backend": ["openai-gemini-2.5-flash", "scripted-shopper-stand-in-s0", "qwen2.5-vl-7b"],
                          "J": [5, 5, 15], "architecture": ["dualmem", "dualmem", "textonly"]})
    assert with_paper(cells, ("table2",), "tsr")["paper"].to_list() == [0.827, None, 0.0]
    abl = pl.DataFrame({"backend": [BACKENDS[0]] * 2, "J": [5, 5], "architecture": ["dualmem-a0.5", "dualmem-clip"]})
    # the 7-chain ablation subset first, the encoder block's full-set number where the subset has none
    assert with_paper(abl, ("table4", "table4-encoder"), "tsr")["paper"].to_list() == [0.789, 0.697]
    perm = pl.DataFrame({"backend": list(BACKENDS), "J": [50, 50], "a": ["dualmem"] * 2, "b": ["m2a-lite"] * 2})
    assert with_paper(perm, ("table10",), "p_value", on="a")["paper"].to_list() == [0.6875, 0.0625]
    assert paper_backend("Gemini-2.5-Flash / scripted-recall") == "gemini-2.5-flash" and paper_backend("x") is None
    assert quoted().filter(pl.col("architecture").is_in(["nomemory", "textonly"]))["value"].sum() == 0


def test_wide_table2_shows_the_papers_numbers_beside_each_cell_it_states() -> None:
    from vismem.analysis.report import ReportOptions, build_report

    probes = synthetic.probes(backends=BACKENDS, Js=(5, 10), chains=2,
                              p={"dualmem": 0.8, "m2a-lite": 0.6, "nomemory": 0.0})
    main = next(s for s in build_report({"probes": probes}, "r", options=ReportOptions(n_resamples=100)).sections
                if s.id == "dmv-main")
    t2 = next(t for t in main.tables if t.id == "table2")
    g5 = f"{BACKENDS[0]} J=5"
    # each paper column sits right after its cell, is a percent column, never bold
    assert t2.shown[1:3] == [g5, f"{g5} paper"] and f"{g5} paper" in t2.percent and f"{g5} paper" not in t2.highlight
    by = {r["architecture"]: r for r in t2.df.iter_rows(named=True)}
    assert (by["dualmem"][f"{g5} paper"], by["nomemory"][f"{g5} paper"], by["m2a-lite"][f"{g5} paper"]) == (
        0.827, 0.0, None)
    assert by["dualmem"][f"{BACKENDS[1]} J=10 paper"] is None and by["nomemory"][f"{BACKENDS[1]} J=10 paper"] == 0.0
    # the n_r row quotes the paper's probe count for the one cell it states (Table 4's caption: 2,762)
    assert by["n_r"][f"{g5} paper"] == 2762 and by["n_r"][f"{BACKENDS[0]} J=10 paper"] is None
    assert "2,762" in t2.caption
    assert "not in the paper text we have" in t2.caption
    # a run on other back-ends (the local stand-ins) keeps Table 2 as it was: no paper columns
    local = synthetic.probes(backends=("scripted-shopper-stand-in-s0",), Js=(5,), chains=2, p={"dualmem": 0.8})
    t2l = next(t for s in build_report({"probes": local}, "r", options=ReportOptions(n_resamples=100)).sections
               if s.id == "dmv-main" for t in s.tables if t.id == "table2")
    assert not any(c.endswith(" paper") for c in t2l.df.columns) and "paper*" not in t2l.caption


def test_alpha_sweep_scores_every_point_on_the_chains_all_points_share() -> None:
    # The ablation points (-verb, -a0.25, -vis) probed on chain 0 only (probes.ablation_chains),
    # dualmem and dualmem-a0.5 on chains 0 and 1: the curve is chain 0's, as the paper's Fig. 7.
    rows = _variant_rows()
    sub = rows.filter(~(pl.col("architecture").is_in(["dualmem-verb", "dualmem-a0.25", "dualmem-vis"])
                        & (pl.col("seed") == 1)))
    full = rows.filter(pl.col("seed") == 0)
    sw, ref = (dmv.alpha_sweep(x, n_resamples=100).sort("backend", "alpha") for x in (sub, full))
    assert set(sw["n_chains"].to_list()) == {1}
    assert sw.select("backend", "alpha", "source", "tsr").equals(ref.select("backend", "alpha", "source", "tsr"))
    # with every point on every chain, nothing is dropped
    assert set(dmv.alpha_sweep(rows, n_resamples=100)["n_chains"].to_list()) == {2}


def test_bootstrap_table_quotes_table9s_one_stated_interval() -> None:
    from vismem.analysis.dmv_paper import with_paper_intervals

    cells = pl.DataFrame({"backend": [BACKENDS[0], BACKENDS[0], BACKENDS[1]], "J": [15, 5, 15],
                          "architecture": ["mma-lite", "mma-lite", "mma-lite"], "tsr": [0.36, 0.4, 0.3]})
    out = with_paper_intervals(cells)
    row = out.row(0, named=True)
    assert (row["paper naive_low"], row["paper naive_high"], row["paper cluster_low"], row["paper cluster_high"]) == (
        0.352, 0.364, 0.313, 0.394)
    assert out["paper cluster_low"].null_count() == 2  # J=5 and the other back-end: no number stated
    local = cells.with_columns(pl.lit("scripted-shopper (stand-in)").alias("backend"))
    assert with_paper_intervals(local).columns == local.columns  # no stated interval: the table is unchanged


def test_leader_bins_total_the_main_grid_beside_the_papers_counts() -> None:
    from vismem.analysis.dmv_paper import LEADER_TOTAL, with_paper_leader

    probes = synthetic.probes(backends=(*BACKENDS, "scripted-shopper-stand-in-s0"), Js=(5, 10, 50), chains=2,
                              p={"dualmem": 0.8, "m2a-lite": 0.6})
    bank, pos = dmv.binned(probes, "bank_size"), dmv.position_bins(probes)
    lead = dmv.leader_bins(bank, "dualmem").join(dmv.leader_bins(pos, "dualmem"), on=["backend", "J"], how="full",
                                                 coalesce=True, suffix="_position")
    out = with_paper_leader(lead, "dualmem")
    total = out.filter(pl.col("backend") == LEADER_TOTAL).row(0, named=True)
    # the total is over the paper's back-ends at J = 5, 10, 15 only (no stand-in, no J = 50 pilot)
    grid = lead.filter(pl.col("backend").is_in(list(BACKENDS)) & (pl.col("J") <= 15))
    assert grid.height == 4 and total["bins"] == grid["bins"].sum()
    assert total["leads_position"] == grid["leads_position"].sum()
    assert (total["paper bins"], total["paper leads"], total["paper bins_position"], total["paper leads_position"],
            total["paper ties_position"]) == (48, 48, 53, 49, 1)
    assert out.filter(pl.col("backend") != LEADER_TOTAL)["paper leads"].null_count() == lead.height
    assert out.columns[2:4] == ["bins", "paper bins"]
    # another leader, or a run without the paper's back-ends: the table as it was
    assert with_paper_leader(lead, "m2a-lite").equals(lead)
    local = lead.filter(pl.col("backend").str.starts_with("scripted"))
    assert with_paper_leader(local, "dualmem").equals(local)


def test_table10_quotes_the_bound_of_its_exhaustive_cells_and_the_pilots_values() -> None:
    from vismem.analysis.report import ReportOptions, build_report

    probes = synthetic.probes(backends=BACKENDS, Js=(5, 50), chains=3, p={"dualmem": 0.8, "m2a-lite": 0.6})
    opts = ReportOptions(n_resamples=100, compare=("dualmem", "m2a-lite"))
    perm = next(t for s in build_report({"probes": probes}, "r", options=opts).sections
                for t in s.tables if t.id == "permutation")
    by = {(r["backend"], r["J"]): r for r in perm.df.iter_rows(named=True)}
    assert [by[(BACKENDS[0], 5)][c] for c in ("paper_p_value_max", "paper_p_value")] == [0.0059, None]
    assert [by[(BACKENDS[1], 50)][c] for c in ("paper_p_value_max", "paper_p_value", "paper_d_bar")] == [
        None, 0.0625, 0.0852]
    assert "paper_p_value_max" not in perm.percent and "paper_d_bar" in perm.percent
