"""Issue 43: a timed goal is a ratio evaluated from the same run's records (a peer's or the
calibration unit's), no time carries a target, and `vismem bench --compare` shows what moved
between two recorded runs in ratios, whatever machines they ran on."""

from __future__ import annotations

import json
import math

import pytest

from vismem.bench import harness
from vismem.bench.calibration import UNIT, calibration_records, per_unit, units
from vismem.bench.ratios import compare, compare_report, describe, ratio, resolve


def _run(unit_s: float, wall_s: float, peer_s: float, *, machine: str = "m") -> list[dict]:
    """A recorded run: a calibration unit, a benchmark's wall, its peer's wall and two ratios."""
    recs = [harness.record("calibration", "unit_s", unit_s, "s"), harness.record("b", "wall_s", wall_s, "s"),
            harness.record("b", "peer_ms", peer_s * 1e3, "ms"), per_unit("b", "wall_s", target_s=10.0),
            ratio("b", "wall / peer", "wall_s", "peer_ms", target=0.5),
            harness.record("b", "recall", 0.9, "share", target=0.8, better="higher")]
    return [{**r, "machine": machine, "calibration_version": 1} for r in recs]


def test_a_time_takes_no_target_and_a_rate_neither():
    with pytest.raises(ValueError, match="ratio"):
        harness.record("b", "wall_s", 1.0, "s", target=2.0)
    with pytest.raises(ValueError, match="ratio"):
        harness.record("b", "speed", 1.0, "shots/s", target=2.0, better="higher")
    assert harness.record("b", "wall_s", 1.0, "s")["target"] is None  # a time without a target is fine
    assert harness.record("b", "html", 3.0, "MB", target=20.0)["target"] == 20.0


def test_a_ratio_target_is_evaluated_from_the_same_runs_records():
    recs = resolve(_run(unit_s=0.5, wall_s=15.0, peer_s=40.0))
    by = {(r["name"], r["metric"]): r for r in recs}
    unit = by["b", "wall_s / calibration unit"]
    # 15 s over this run's 0.5 s unit = 30 units; the target, 10 s on the reference machine, in units
    assert unit["value"] == 30.0 and unit["target"] == units(10.0) == 59 and harness.meets(unit) is True
    assert unit["ratio"]["over"] == list(UNIT) and describe(unit) == "15 s / 0.5 s"
    peer = by["b", "wall / peer"]  # seconds over milliseconds: both in seconds first
    assert peer["value"] == pytest.approx(15.0 / 40.0) and harness.meets(peer) is True
    # The same work on a machine twice as slow: every absolute figure doubles, no ratio moves.
    slow = {(r["name"], r["metric"]): r for r in resolve(_run(unit_s=1.0, wall_s=30.0, peer_s=80.0))}
    assert slow["b", "wall_s / calibration unit"]["value"] == 30.0 and slow["b", "wall / peer"]["value"] == peer["value"]
    assert all(harness.meets(slow[k]) for k in [("b", "wall_s / calibration unit"), ("b", "wall / peer")])


def test_a_ratio_without_its_parts_in_the_run_is_an_error_not_a_pass():
    recs = [r for r in _run(0.5, 15.0, 40.0) if r["name"] != "calibration"]
    unit = next(r for r in resolve(recs) if r["metric"] == "wall_s / calibration unit")
    assert math.isnan(unit["value"]) and "calibration / unit_s" in unit["error"] and harness.meets(unit) is None
    unresolved = per_unit("b", "wall_s", target_s=1.0)
    assert math.isnan(unresolved["value"]) and harness.meets(unresolved) is None


def test_run_benchmarks_measures_the_calibration_first_and_resolves_against_it(monkeypatch):
    @harness.benchmark("unit-test-ratio", "a benchmark with a calibration-relative target")
    def _b():
        return [harness.record("unit-test-ratio", "wall_s", 0.01, "s"), per_unit("unit-test-ratio", "wall_s", target_s=1.0)]

    try:
        recs = harness.run_benchmarks(["unit-test-ratio"])
    finally:
        harness.BENCHMARKS.pop("unit-test-ratio", None)
    cal = [r for r in recs if r["name"] == "calibration"]
    assert recs[:len(cal)] == cal  # once, first
    assert {r["metric"] for r in cal} >= {"python_loop_s", "numpy_sort_s", "png_encode_s", "unit_s", "wall_s"}
    unit_s = next(r["value"] for r in cal if r["metric"] == "unit_s")
    assert all(r["calibration_version"] == 1 for r in cal) and 0 < unit_s < 5
    rec = next(r for r in recs if r["metric"] == "wall_s / calibration unit")
    assert rec["value"] == pytest.approx(0.01 / unit_s) and rec["ratio"]["over_value"] == unit_s
    assert harness.meets(rec) is True


def test_the_calibration_is_short():
    recs = {r["metric"]: r for r in calibration_records(repeats=2)}
    assert recs["wall_s"]["value"] < 10  # ~2 s with 5 repeats on the reference machine; generous when shared
    assert recs["unit_s"]["value"] == pytest.approx(sum(recs[k]["value"] for k in
                                                        ("python_loop_s", "numpy_sort_s", "png_encode_s")))


def test_compare_shows_ratio_moves_not_absolute_ones():
    # old run on a fast machine; new run on a machine twice as slow where b got 50 % slower
    # relative to the machine and its peer (a regression): the absolute times are not compared.
    old = _run(unit_s=0.5, wall_s=15.0, peer_s=40.0, machine="fast")
    new = _run(unit_s=1.0, wall_s=45.0, peer_s=80.0, machine="slow")
    rows = {r["metric"]: r for r in compare(old, new)}
    assert set(rows) == {"wall_s / calibration unit", "wall / peer", "recall"}  # no wall_s, no peer_ms
    # a targeted size compares too (it means the same on any machine); an untargeted MiB does not
    sized = [harness.record("b", "html_mb", 10.0, "MB", target=20.0), harness.record("b", "rss", 5.0, "MiB")]
    grown = [{**sized[0], "value": 15.0}, sized[1]]
    assert [(r["metric"], r["verdict"]) for r in compare(sized, grown)] == [("html_mb", "worse")]
    assert rows["wall_s / calibration unit"]["verdict"] == "worse"
    assert rows["wall_s / calibration unit"]["change"] == pytest.approx(0.5)
    assert rows["wall / peer"]["verdict"] == "worse" and rows["recall"]["verdict"] == "same"
    # twice as slow with the machine: nothing moved
    same = compare(old, _run(unit_s=1.0, wall_s=30.0, peer_s=80.0))
    assert {r["verdict"] for r in same} == {"same"}
    # better, new and gone
    moved = {r["metric"]: r for r in compare(old[:-1], _run(unit_s=0.5, wall_s=5.0, peer_s=40.0))}
    assert moved["wall_s / calibration unit"]["verdict"] == "better" and moved["recall"]["verdict"] == "new"
    assert {r["verdict"] for r in compare(old, old[:-1]) if r["metric"] == "recall"} == {"gone"}


def test_compare_report_and_the_cli(tmp_path, capsys):
    from vismem.pipelines.cli import main

    old = _run(unit_s=0.5, wall_s=15.0, peer_s=40.0, machine="fast")
    new = _run(unit_s=1.0, wall_s=45.0, peer_s=80.0, machine="slow")
    new = [{**r, "calibration_version": 2} for r in new]
    text = compare_report(old, new)
    lines = text.splitlines()
    assert lines[0].startswith("old: fast; calibration unit 0.5 s") and "slow" in lines[1]
    assert "calibration workloads differ" in text
    assert lines[4].startswith("worse") and "+50 %" in lines[4]  # the worst first
    assert lines[-1].startswith("3 machine-independent records; 2 moved the wrong way")
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert main(["bench", "--compare", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 0
    assert capsys.readouterr().out.strip() == text
    (tmp_path / "bad.json").write_text("{}")
    assert main(["bench", "--compare", str(tmp_path / "bad.json"), str(tmp_path / "new.json")]) == 2
    assert "not a list of benchmark records" in capsys.readouterr().err
