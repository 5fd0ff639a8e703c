"""DMV-Bench tables name their protocol; one report combines runs of one protocol and says what it pools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from vismem.analysis import synthetic
from vismem.analysis.report import ReportOptions, build_report
from vismem.analysis.schemas import write_results

REPO = Path(__file__).resolve().parents[2]
FAST = ReportOptions(n_resamples=200, seed=1)
P = {"dualmem": 0.6, "m2a-lite": 0.5, "nomemory": 0.0}


def _manifest(protocol: str | None) -> dict:
    cfg = {"seed": 1, "catalog": {"colour_order": "official"}}
    return {"run_id": "r", "config": cfg | ({"encode": {"protocol": protocol}} if protocol else {})}


@pytest.mark.parametrize("protocol", ["official", "fixed"])
def test_every_dmv_table_caption_names_the_protocol(protocol):
    tables = {"probes": synthetic.probes(backends=("b",), Js=(4,), chains=3, p=P),
              "encoding": synthetic.encoding(chains=3, J=4)}
    rep = build_report(tables, "r", manifest=_manifest(protocol), options=FAST)
    dmv_tables = [t for s in rep.sections if s.id.startswith("dmv-") for t in s.tables]
    assert {t.id for t in dmv_tables} >= {"table2", "bootstrap", "permutation", "reach", "encoding"}
    for t in dmv_tables:
        assert t.caption.startswith(f"Protocol: {protocol} ("), (t.id, t.caption)
    assert not any(t.caption.startswith("Protocol") for s in rep.sections if s.id.startswith("memshot")
                   for t in s.tables)


def test_a_run_before_the_choice_ran_the_fixed_protocol_and_no_manifest_says_so():
    from vismem.analysis.dmv_runs import protocol_caption, run_protocol

    assert run_protocol({"config": {"seed": 0}}) == "fixed" and run_protocol(None) is None
    assert protocol_caption(None) == "Protocol: not recorded (no manifest config)."


def _runs():
    main = synthetic.probes(backends=("b",), Js=(5, 10), chains=4, p=P, seed=1)
    pilot = synthetic.probes(backends=("b",), Js=(12,), chains=2, p=P, seed=2)
    return main, pilot


def test_combined_runs_show_every_J_and_the_pooled_cell_says_which_chains():
    from vismem.analysis import dmv
    from vismem.analysis.dmv_runs import combine_runs, pooling_table

    main, pilot = _runs()
    both = combine_runs({"main": {"probes": main}, "pilot": {"probes": pilot}}, pool_first=(5,))["probes"]
    cells = dmv.tsr_cells(both, n_resamples=200)
    assert sorted(cells["J"].unique().to_list()) == [5, 10, 12]
    j5 = cells.filter((pl.col("J") == 5) & (pl.col("architecture") == "dualmem"))
    assert j5["n_chains"].item() == 6  # 4 main chains + the pilot's 2 (seeds 0, 1 in both: distinct chains)
    pilot5 = both.filter((pl.col("run") == "pilot") & (pl.col("J") == 5))
    assert pilot5.height and pilot5["recall_session"].max() <= 5 and (pilot5["source_J"] == 12).all()
    assert both["probe_id"].str.starts_with("main:").sum() == main.height
    pool = pooling_table(both).filter(pl.col("J") == 5)
    assert pool.select("run", "source_J", "chains", "rows").rows() == [
        ("main", 5, 4, "whole chains"), ("pilot", 12, 2, "first 5 sessions of J=12 chains")]
    rep = build_report({"probes": both}, "main+pilot", manifest=_manifest("official"), options=FAST)
    main_sec = next(s for s in rep.sections if s.id == "dmv-main")
    t2 = next(t for t in main_sec.tables if t.id == "table2")
    assert "b J=5 pools main 4 chains + pilot 2 chains (first 5 sessions of J=12)." in t2.caption
    assert {"b J=5", "b J=10", "b J=12"} <= set(t2.df.columns)
    assert any(t.id == "pooling" for t in main_sec.tables)
    # Without pooling the pilot keeps its own J only.
    alone = combine_runs({"main": {"probes": main}, "pilot": {"probes": pilot}})["probes"]
    assert alone.filter(pl.col("run") == "pilot")["J"].unique().to_list() == [12]


def test_the_same_chain_in_two_runs_is_one_cluster():
    from vismem.analysis.dmv_runs import combine_runs

    main, _ = _runs()
    a = main.with_columns(pl.lit("slug-x").alias("chain_slug"))
    both = combine_runs({"a": {"probes": a}, "b": {"probes": a}})["probes"]
    assert both["seed"].n_unique() == 4
    other = combine_runs({"a": {"probes": a}, "b": {"probes": a.with_columns(pl.lit("slug-y").alias("chain_slug"))}})
    assert other["probes"]["seed"].n_unique() == 8


def _write(store, rid, probes, protocol):
    write_results(store, f"runs/{rid}", "probes", probes)
    store.put_json(f"runs/{rid}/manifest.json", {"run_id": rid, "stages": {}, "config": {
        "seed": 1, "encode": {"protocol": protocol}}})


def test_cli_reports_several_runs_and_refuses_mixed_protocols(file_store, tmp_path, capsys, monkeypatch):
    main, pilot = _runs()
    _write(file_store, "main", main, "official")
    _write(file_store, "pilot", pilot, "official")
    _write(file_store, "other", pilot, "fixed")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "vismem", "report", "--store", file_store.uri, "--set", "report.n_resamples=200"]
    res = subprocess.run([*base[:4], "main", "pilot", *base[4:], "--set", "report.pool_first=[5]", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    assert summary["report_id"] == "main+pilot" and summary["protocol"] == "official"
    html = (Path(file_store.uri[len("file://"):]) / "reports" / "main+pilot" / "report" / "index.html").read_text()
    assert "pools main 4 chains + pilot 2 chains" in html and "Protocol: official" in html
    # The refusal through main() in this process (the command as a process is checked just above).
    from vismem.pipelines.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli_main([*base[3:4], "main", "other", *base[4:]]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "runs with different protocols cannot share a report: main (official), other (fixed)")
