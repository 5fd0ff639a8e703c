"""``vismem compare``: two stored runs compared through the real CLI (file store, tiny tables)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from vismem.analysis import synthetic
from vismem.analysis.schemas import write_results

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _vismem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV, timeout=300)


def _write(store, run_id: str, seed: int) -> None:
    prefix = f"runs/{run_id}"
    write_results(store, prefix, "probes", synthetic.probes(backends=("toy",), Js=(4,), chains=3, seed=seed))
    write_results(store, prefix, "memshot_answers", synthetic.memshot_answers(questions=8, seed=seed))
    store.put_json(f"{prefix}/manifest.json", {"run_id": run_id, "config": {"seed": 5}, "stages": {}})


def test_compare_json_html_and_table(file_store, tmp_path):
    _write(file_store, "run-a", 0)
    _write(file_store, "run-b", 1)
    st = ["--store", file_store.uri, "--set", "report.n_resamples=200"]
    out = tmp_path / "cmp.html"
    r = _vismem("compare", "run-a", "run-b", *st, "--json", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["seed"] == 5  # run A's own seed drives the bootstrap
    assert set(got["deltas"]) == {"probes", "memshot_answers"}
    pa = synthetic.probes(backends=("toy",), Js=(4,), chains=3, seed=0)
    pb = synthetic.probes(backends=("toy",), Js=(4,), chains=3, seed=1)
    for row in got["deltas"]["probes"]:
        want = (pb.filter(pl.col("architecture") == row["architecture"])["correct"].mean()
                - pa.filter(pl.col("architecture") == row["architecture"])["correct"].mean())
        assert abs(row["delta"] - want) < 1e-12 and row["low"] <= row["delta"] <= row["high"]
    assert len(got["flips"]["probes"]) == sum(r["lost"] + r["gained"] for r in got["deltas"]["probes"])
    page = out.read_text()
    assert "run-a (A) vs run-b (B)" in page and "Flipped items" in page
    table = _vismem("compare", "run-a", "run-b", *st, "--out", str(out), cwd=tmp_path)
    assert table.returncode == 0 and "flipped items (probes)" in table.stdout and "dualmem" in table.stdout.lower()
    # On an 80-column log no architecture or variant name is cut to an ellipsis; rows in the papers' order.
    assert "text_rag" in table.stdout and "…" not in table.stdout
    assert table.stdout.index(" nomemory ") < table.stdout.index(" caption ") < table.stdout.index(" dualmem ")


def test_compare_errors_are_one_line(file_store, tmp_path):
    _write(file_store, "run-a", 0)
    st = ["--store", file_store.uri]
    r = _vismem("compare", "run-a", "nope", *st, cwd=tmp_path)
    assert r.returncode != 0 and r.stderr.strip().count("\n") == 0 and "'nope' not found" in r.stderr
    # A run with only DMV-Bench results shares nothing with one with only MemShot results.
    write_results(file_store, "runs/only-ms", "memshot_recall", synthetic.memshot_recall(questions=4))
    write_results(file_store, "runs/only-dmv", "probes", synthetic.probes(backends=("toy",), Js=(4,), chains=2))
    r = _vismem("compare", "only-ms", "only-dmv", *st, cwd=tmp_path)
    assert r.returncode == 4 and r.stderr.strip().count("\n") == 0 and "share no scored" in r.stderr


def test_back_ends_pair_by_readable_name_not_cache_slug(file_store, tmp_path):
    for run_id, slug, seed in (("ra", "toy--aaaa", 0), ("rb", "toy--bbbb", 1)):
        probes = synthetic.probes(backends=(slug,), Js=(4,), chains=2, seed=seed)
        enc = synthetic.encoding(backends=(slug,), chains=2, J=4).with_columns(pl.lit("toy (stand-in)").alias("backend_name"))
        write_results(file_store, f"runs/{run_id}", "probes", probes)
        write_results(file_store, f"runs/{run_id}", "encoding", enc)
    r = _vismem("compare", "ra", "rb", "--store", file_store.uri, "--set", "report.n_resamples=100", "--json",
                "--out", str(tmp_path / "c.html"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert {row["backend"] for row in json.loads(r.stdout)["deltas"]["probes"]} == {"toy (stand-in)"}
