"""``vismem export``: a stored run's per-sample records through the real CLI."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from vismem.analysis import synthetic
from vismem.analysis.schemas import write_results

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _vismem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=300)


def test_export_jsonl_csv_and_stdout(file_store, tmp_path):
    ans = synthetic.memshot_answers(questions=3, conversations=1, ks=(1,))
    probes = synthetic.probes(backends=("toy",), Js=(2,), chains=1)
    write_results(file_store, "runs/r", "memshot_answers", ans)
    write_results(file_store, "runs/r", "probes", probes)
    file_store.write_table("runs/r/memshot/ranked.parquet", __import__("polars").DataFrame(
        {"variant": ["memshot"], "conversation_id": ["conv-0"], "question_id": ["q1"], "rank": [1],
         "unit_id": ["s1:3"], "score": [0.9]}))
    st = ["--store", file_store.uri]
    r = _vismem("export", "r", *st, "--out", str(tmp_path / "s.jsonl"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(recs) == ans.height + probes.height
    hit = [x for x in recs if x["item_id"] == "q1" and x["variant"] == "memshot"]
    assert hit[0]["retrieved"] == ["s1:3"] and hit[0]["item"] == "question 1?"
    r = _vismem("export", "r", *st, "--format", "csv", "--out", str(tmp_path / "s.csv"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert len(rows) == len(recs) and {"item_id", "variant", "retrieved", "prediction", "verdict"} <= set(rows[0])
    out = _vismem("export", "r", *st, "--out", "-", cwd=tmp_path)
    assert [json.loads(x) for x in out.stdout.splitlines()] == recs
    bad = _vismem("export", "missing", *st, cwd=tmp_path)
    assert bad.returncode != 0 and "'missing' not found" in bad.stderr and bad.stderr.strip().count("\n") == 0
