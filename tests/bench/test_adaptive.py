"""The adaptive-probing benchmarks at a tiny scale: registered, and their records hold what the
issue's targets read (calls saved, coverage, wrong decisions)."""

from __future__ import annotations

from vismem.analysis import synthetic
from vismem.bench.adaptive import SCENARIOS, scenario_records, table_records
from vismem.bench.harness import BENCHMARKS, load_all


def test_adaptive_benchmarks_are_registered_and_record_their_targets():
    load_all()
    assert {"adaptive-synthetic", "adaptive-local-run"} <= set(BENCHMARKS)
    recs = {r["metric"]: r for r in scenario_records("lead", SCENARIOS["lead"], studies=20, chains=6, J=14, products=3)}
    assert recs["calls_saved"]["target"] == 5.0 and recs["calls_saved"]["value"] > 1.0
    assert recs["coverage"]["value"] >= 0.95 and recs["wrong_decisions"]["value"] <= 0.05
    local = {r["metric"]: r for r in table_records(synthetic.probes(Js=(8,), chains=3, seed=1), "t", studies=20)}
    assert local["coverage"]["value"] >= 0.95 and local["calls_saved"]["value"] >= 1.0
