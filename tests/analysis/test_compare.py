"""Run-to-run comparison: paired deltas, their intervals, flipped items and the HTML page."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from vismem.analysis import synthetic
from vismem.analysis.compare import SPECS, compare_tables, flips, paired_delta, paired_deltas
from vismem.analysis.compare_html import compare_html

ACC = next(s for s in SPECS if s.label == "Acc")
TSR = next(s for s in SPECS if s.label == "TSR")


def _answers(outcomes: dict[str, list[bool]], conv: str = "c0") -> pl.DataFrame:
    rows = [{"dataset": "locomo", "conversation_id": conv, "question_id": f"q{i}", "question": f"question {i}?",
             "category": "single-hop", "variant": v, "k": 5, "prediction": "x", "judge_label": ok, "f1": float(ok)}
            for v, oks in outcomes.items() for i, ok in enumerate(oks)]
    return pl.DataFrame(rows)


def test_paired_delta_equals_unpaired_mean_difference_and_is_seeded():
    rng = np.random.default_rng(3)
    a, b = rng.random(50), rng.random(50)  # continuous: the percentiles depend on the draws
    est, lo, hi = paired_delta(a, b, n_resamples=2000, seed=7)
    assert est == pytest.approx(b.mean() - a.mean())
    assert lo <= est <= hi
    assert (est, lo, hi) == paired_delta(a, b, n_resamples=2000, seed=7)
    assert (lo, hi) != paired_delta(a, b, n_resamples=2000, seed=8)[1:]


def test_pairing_narrows_the_interval_of_identical_items():
    # B equals A on 99 of 100 items: a paired interval is tight, far tighter than two independent samples'.
    a = np.r_[np.ones(50), np.zeros(50)]
    b = a.copy()
    b[0] = 0
    _, lo, hi = paired_delta(a, b, n_resamples=2000, seed=0)
    assert hi - lo < 0.05
    assert hi <= 0.0


def test_cluster_draws_whole_chains():
    # Two chains: every draw is one of {chain0 twice, chain1 twice, both}: the interval ends are chain means.
    a = np.array([1, 1, 0, 0], float)
    b = np.array([0, 0, 0, 0], float)
    est, lo, hi = paired_delta(a, b, np.array([0, 0, 1, 1]), n_resamples=500, seed=0)
    assert est == -0.5 and lo == pytest.approx(-1.0) and hi == pytest.approx(0.0)
    assert np.isnan(paired_delta(a, b, np.zeros(4), n_resamples=100, seed=0)[1])  # one chain: undefined


def test_deltas_use_only_shared_items_and_count_flips():
    a = _answers({"memshot": [True, True, False, False, True]})
    b = _answers({"memshot": [True, False, True, False]})  # q4 missing in B
    d = paired_deltas(a, b, ACC, n_resamples=500, seed=0).row(0, named=True)
    assert d["n"] == 4 and d["a"] == 0.5 and d["b"] == 0.5 and d["delta"] == 0.0
    assert (d["lost"], d["gained"]) == (1, 1)
    f = flips(a, b, ACC)
    assert f.select("question_id", "change").rows() == [("q1", "hit→miss"), ("q2", "miss→hit")]
    assert f["question"].to_list() == ["question 1?", "question 2?"]


def test_null_verdicts_count_as_acc_counts_them():
    # An unanswered question (no prediction, no verdict) is a miss, and so is an answer the judge
    # gave no verdict on (a judge failure), as Acc counts it (the official scripts' reading).
    a = _answers({"memshot": [True, True, True]})
    q1 = pl.col("question_id") == "q1"
    b = _answers({"memshot": [True, True, True]}).with_columns(
        pl.when(q1 | (pl.col("question_id") == "q2")).then(None).otherwise(pl.col("judge_label")).alias("judge_label"),
        pl.when(q1).then(None).otherwise(pl.col("prediction")).alias("prediction"))
    assert flips(a, b, ACC)["question_id"].to_list() == ["q1", "q2"]


def test_compare_tables_probes_pair_by_chain_and_probe():
    pa = synthetic.probes(backends=("toy",), Js=(4,), chains=3)
    pb = synthetic.probes(backends=("toy",), Js=(4,), chains=3, seed=1)
    out = compare_tables({"probes": pa}, {"probes": pb}, n_resamples=500, seed=0)
    d = out["probes"]
    assert set(d["architecture"]) == set(pa["architecture"])
    for r in d.iter_rows(named=True):
        ja = pa.filter(pl.col("architecture") == r["architecture"])
        jb = pb.filter(pl.col("architecture") == r["architecture"])
        assert r["a"] == pytest.approx(ja["correct"].mean()) and r["b"] == pytest.approx(jb["correct"].mean())
        both = ja.join(jb, on=["seed", "probe_id"])
        assert r["lost"] == int((both["correct"] & ~both["correct_right"]).sum())
    assert out["probes_flips"].height == int(d["lost"].sum() + d["gained"].sum())
    # Same run against itself: zero deltas, no flips.
    same = compare_tables({"probes": pa}, {"probes": pa}, n_resamples=200, seed=0)
    assert same["probes"]["delta"].abs().max() == 0 and same["probes_flips"].height == 0


def test_runs_without_shared_items_give_nothing():
    a = _answers({"memshot": [True]}, conv="c0")
    b = _answers({"memshot": [True]}, conv="c9")
    assert compare_tables({"memshot_answers": a}, {"memshot_answers": b}, n_resamples=100) == {}


def test_html_escapes_every_data_string():
    a = _answers({"<b>v&</b>": [True, False]}).with_columns(pl.lit("<script>x</script>").alias("question"))
    b = _answers({"<b>v&</b>": [False, True]})
    page = compare_html(compare_tables({"memshot_answers": a}, {"memshot_answers": b}, n_resamples=100),
                        "run<a>", "run&b", seed=0, n_resamples=100)
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<b>v&" not in page and "&lt;b&gt;v&amp;&lt;/b&gt;" in page
    assert "run&lt;a&gt;" in page and "run&amp;b" in page


def test_cells_over_the_same_chains_share_one_draw_and_match_the_single_cell_interval():
    from vismem.analysis.bootstrap import seeded_rng

    pa = synthetic.probes(backends=("toy",), Js=(4,), chains=4)
    pb = synthetic.probes(backends=("toy",), Js=(4,), chains=4, seed=1)
    d = paired_deltas(pa, pb, TSR, n_resamples=300, seed=3)
    for r in d.iter_rows(named=True):
        both = (pa.filter(pl.col("architecture") == r["architecture"]).sort("seed", "probe_id")
                .join(pb.select("architecture", "seed", "probe_id", "correct"), on=["architecture", "seed", "probe_id"]))
        est, lo, hi = paired_delta(both["correct"].cast(float).to_numpy(), both["correct_right"].cast(float).to_numpy(),
                                   both["seed"].to_numpy(), n_resamples=300, seed=seeded_rng(3, 0))
        assert (r["delta"], r["low"], r["high"]) == pytest.approx((est, lo, hi))


def test_deltas_come_in_the_papers_row_order():
    paper = ["nomemory", "textonly", "caption", "worldmm-lite", "mma-lite", "m2a-lite", "dualmem"]
    pa = synthetic.probes(backends=("toy", "abc"), Js=(4,), chains=2)
    pb = synthetic.probes(backends=("toy", "abc"), Js=(4,), chains=2, seed=1)
    d = compare_tables({"probes": pa}, {"probes": pb}, n_resamples=100, seed=0)["probes"]
    # Back-ends stay grouped (in their sorted order); within each, the architectures as Table 2.
    assert d["backend"].to_list() == ["abc"] * 7 + ["toy"] * 7
    assert d["architecture"].to_list() == paper * 2
    ans = {"no-render": [True, False], "memshot": [True, True], "text-rag": [False, True]}
    got = paired_deltas(_answers(ans), _answers(ans), ACC, n_resamples=100)
    assert got["variant"].to_list() == ["text-rag", "memshot", "no-render"]
