"""The README's main job end to end: every stage of the local preset on real parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_local_preset_runs_every_stage_and_resumes(tmp_path):
    from vismem.core.store import Store
    from vismem.pipelines.config import load_config

    env = {**os.environ, "VISMEM_PROGRESS": "0"}
    cmd = [sys.executable, "-m", "vismem", "run", "--store", f"file://{tmp_path}/store", "--no-progress",
           "--set", f"runs_dir={tmp_path}/runs", "--json"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    out = json.loads(first.stdout[first.stdout.index("{"):])
    run_id = out["_run_id"]
    assert out["memshot"]["status"] == "done" and out["memshot"]["recall"]
    assert out["catalog"]["variants"] == 1000
    assert out["encode"]["status"] == "done" and out["encode"]["ran"] == out["encode"]["sessions"] >= 1
    assert set(out["report"]["found"]) >= {"encoding", "memshot_recall"}

    store = Store.open(f"file://{tmp_path}/store")
    man = store.get_json(f"runs/{run_id}/manifest.json")
    assert {s: v["status"] for s, v in man["stages"].items()} == dict.fromkeys(load_config().stages, "done")
    assert out["probes"]["probes"] > 0 and out["probes"]["ran"] == out["probes"]["units"]
    assert store.exists(f"runs/{run_id}/report/index.html")

    second = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    again = json.loads(second.stdout[second.stdout.index("{"):])
    assert again["encode"]["ran"] == 0 and again["encode"]["cached"] == out["encode"]["sessions"]
    assert again["memshot"]["recall"] == out["memshot"]["recall"]  # same config -> same scores
    assert again["probes"]["ran"] == 0 and again["probes"]["tsr"] == out["probes"]["tsr"]
