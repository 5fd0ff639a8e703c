"""The ``fleet`` benchmark at a tiny scale: the simulated endpoint's stats add up, the records
carry the issue's targets, and the plan of the same workload lands near the measured wall."""

from __future__ import annotations

import pytest

from vismem.bench.fleet import PLAN_TOLERANCE, UTIL_TARGETS, FleetScale, fleet_records, run_fleet
from vismem.bench.harness import BENCHMARKS, load_all
from vismem.serve.capacity import CapacityModel

TINY = FleetScale(fleet=CapacityModel(slots=4, base_s=0.1, per_image_s=0.02, per_token_s=0.0, jitter=0.2),
                  encode={"chains": 2, "J": 2, "workers": 2}, probes=None, answers={"questions": 32, "k": 2})


def _consistent(st: dict, slots: int) -> None:
    assert st["slots"] == slots and st["errors"] == 0 and st["in_flight"] == 0
    assert st["utilisation"] == pytest.approx(st["busy_slot_s"] / (slots * st["wall_s"]))
    assert st["calls_per_s"] == pytest.approx(st["calls"] / st["wall_s"])
    assert st["max_busy"] <= slots and st["mean_busy"] <= st["mean_in_flight"] + 1e-9
    # every call held a slot for its modelled time: 0.1 s + 0.02 s an image, +-20 % jitter
    assert 0.08 <= st["mean_service_s"] <= 0.2
    assert st["busy_slot_s"] == pytest.approx(st["calls"] * st["mean_service_s"], rel=0.05)


def test_answers_keep_a_tiny_fleet_busy_and_the_plan_predicts_the_wall():
    res = run_fleet(TINY, ("answers",))["answers"]
    st = res["stats"]
    _consistent(st, 4)
    assert st["calls"] == 32 and res["units"] == 32
    # 32 calls of ~0.14 s (2 images) on 4 slots: ~1.1 s of work per slot
    assert st["wall_s"] == pytest.approx(32 * st["mean_service_s"] / 4, rel=0.35)
    assert st["utilisation"] > 0.7
    assert res["plan_s"] == pytest.approx(st["wall_s"], rel=0.35)
    recs = {r["metric"]: r for r in fleet_records({"answers": res})}
    assert recs["answers.utilisation"]["target"] == UTIL_TARGETS["answers"] == 0.9
    assert recs["answers.plan_error"]["target"] == PLAN_TOLERANCE == 0.2
    assert recs["answers.plan_error"]["value"] == pytest.approx(abs(res["plan_s"] / st["wall_s"] - 1))


def test_encode_stage_on_local_ray_against_the_fleet(ray_local):
    # On the session's local Ray (the run leaves a caller's Ray running): the fleet's window, the
    # only one measured, starts after the actors are up either way; the bench's own Ray start-up
    # (every `vismem run` pays it, tested there) would be most of this test's time.
    res = run_fleet(TINY, ("encode",))["encode"]
    st = res["stats"]
    _consistent(st, 4)
    # 4 sessions of the scripted shopper (~25 steps each), one call a step; the plan is given the
    # measured steps per session, service time and CPU a call (every bench process while the
    # fleet had work), so its call count is the run's; each of the 4 sessions in flight steps at
    # service + client CPU, and the 2 cores must do every call's CPU (sessions are independent:
    # not J x steps)
    assert res["units"] == 4 and 80 <= st["calls"] <= 120
    assert 0 < st["cpu_per_call_s"] == pytest.approx(st["cpu_s"] / st["calls"]) and st["cpu_s"] < 2 * st["wall_s"] + 1
    cycle = st["mean_service_s"] + st["cpu_per_call_s"]
    assert res["plan_s"] == pytest.approx(max(st["calls"] / 4 * cycle, st["calls"] * st["cpu_per_call_s"] / 2), rel=0.01)
    assert 0 < st["max_in_flight"] <= 4


def test_fleet_is_a_registered_benchmark():
    load_all()
    assert "fleet" in BENCHMARKS
