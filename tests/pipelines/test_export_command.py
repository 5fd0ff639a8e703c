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


def _unit_rows(probes, recalled: dict[str, list[str]]) -> list[dict]:
    """Probe-unit rows as the probes stage writes them: each probe's step log names what it recalled."""
    return [{"probe_id": r["probe_id"], "at_session": r["recall_session"] - 1, "target_url": r["target_url"],
             "correct": r["correct"], "steps": 1,
             "log": [{"step": 0, "recalled": recalled[r["probe_id"]]}, {"step": 1, "recalled": ["later"]}]}
            for r in probes.iter_rows(named=True)]


def test_probe_records_read_the_first_recall_step_from_the_probe_cache(file_store, tmp_path):
    import polars as pl

    from vismem.pipelines.dmv.probecache import ProbeCache
    from vismem.pipelines.dmv.probelogs import first_recalled

    probes = synthetic.probes(backends=("toy",), Js=(3,), chains=1, p={"dualmem": 0.5}).filter(
        pl.col("architecture") == "dualmem").with_columns(pl.lit("toy-slug").alias("chain_slug"),
                                                          pl.lit("dualmem--abc").alias("arch_key"))
    cache = ProbeCache(file_store, "toy-slug", int(probes["seed"][0]), "dualmem--abc")
    target = {r["probe_id"]: r["target_url"].rsplit("/", 1)[-1] for r in probes.iter_rows(named=True)}
    recalled = {pid: ([t, "other"] if i % 2 == 0 else ["other"]) for i, (pid, t) in enumerate(sorted(target.items()))}
    last = int(probes["recall_session"].max())
    for j in sorted(set(probes["recall_session"].to_list()) - {last}):  # the last unit is not cached
        cache.write("ex", j - 1, _unit_rows(probes.filter(pl.col("recall_session") == j), recalled), meta={})
    # A Monte Carlo unit of another chain length holds other logs under the same ids: never read for J=3.
    cache.write("mc9", 0, [{**r, "log": [{"recalled": ["wrong"]}]} for r in _unit_rows(probes, recalled)], meta={})
    got = first_recalled(file_store, probes)
    want = [recalled[r["probe_id"]] if r["recall_session"] != last else None for r in probes.iter_rows(named=True)]
    assert got == want and any(g is None for g in got) and any(g for g in got)
    write_results(file_store, "runs/d", "probes", probes)
    r = _vismem("export", "d", "--store", file_store.uri, "--out", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["retrieved"] for x in recs] == want
    assert [x["target_rank"] for x in recs] == [(w.index(target[x["item_id"]]) + 1 if w and target[x["item_id"]] in w
                                                 else None) for x, w in zip(recs, want)]
    assert {1, None} <= {x["target_rank"] for x in recs}
    r = _vismem("export", "d", "--store", file_store.uri, "--out", "-", "--no-recalled", cwd=tmp_path)
    assert r.returncode == 0 and all(json.loads(x)["retrieved"] is None for x in r.stdout.splitlines())
