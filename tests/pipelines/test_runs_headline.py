"""``vismem runs`` shows each run's headline (the end-of-run summary's scoring, the run's seed) and report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from vismem.analysis import synthetic
from vismem.analysis.headline_text import headline_line
from vismem.analysis.report import ReportOptions, headline
from vismem.analysis.schemas import write_results

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _vismem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=300)


def test_runs_prints_headline_and_report_path(file_store, tmp_path):
    probes = synthetic.probes(backends=("toy",), Js=(4,), chains=3)
    write_results(file_store, "runs/r1", "probes", probes)
    file_store.put_json("runs/r1/manifest.json", {"run_id": "r1", "started_at": "2026-01-01T00:00:00Z",
                                                  "config": {"seed": 9}, "stages": {"report": {"status": "done"}}})
    file_store.put_bytes("runs/r1/report/index.html", b"<html/>")
    file_store.put_json("runs/empty/manifest.json", {"run_id": "empty", "stages": {}})
    st = ["--store", file_store.uri, "--set", "report.n_resamples=200"]
    r = _vismem("runs", *st, "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    runs = {x["run_id"]: x for x in json.loads(r.stdout)}
    want = headline_line(headline({"probes": probes}, ReportOptions(n_resamples=200, seed=9)))
    assert want and runs["r1"]["headline"] == want
    assert runs["r1"]["report"] == file_store.url("runs/r1/report/index.html")
    assert runs["empty"]["headline"] == "" and runs["empty"]["report"] is None
    text = _vismem("runs", *st, cwd=tmp_path).stdout
    assert f"  headline  {want}" in text and f"  report    {runs['r1']['report']}" in text
    quick = _vismem("runs", *st, "--no-headline", "--json", cwd=tmp_path)
    assert "headline" not in json.loads(quick.stdout)[0]
