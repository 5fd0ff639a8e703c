"""`vismem plan` beside the exhaustive plan: an adaptive config's saving in probe calls and
GPU-hours, from the probes stage's own per-call cost."""

from __future__ import annotations

from vismem.pipelines.config import load_config
from vismem.pipelines.plan import estimate
from vismem.pipelines.planrender import render


def test_adaptive_plan_scales_the_probes_stage_by_the_simulated_share():
    over = {"stages": ["probes"], "encode": {"chains": 10, "J": 30}, "probes": {"J": [30]}}
    ex = estimate(load_config(preset="paper", overrides=over))
    assert "adaptive" not in ex and "adaptive probes" not in render(ex)
    cfg = load_config(preset="paper", overrides={**over, "probes": {"J": [30], "mode": "adaptive"}})
    plan = estimate(cfg)
    ad, probes = plan["adaptive"], next(r for r in plan["stages"] if r["stage"] == "probes")
    assert probes["calls"] == ex["stages"][0]["calls"]  # the rows stay the exhaustive plan
    assert 0 < ad["fraction"] < 0.5 and ad["calls"] == ad["fraction"] * probes["calls"]
    assert ad["gpu_hours"] == ad["fraction"] * probes["gpu_hours"] > 0 and ad["saving"] > 2
    assert f"{ad['calls']:,.0f} probe calls" in render(plan)
