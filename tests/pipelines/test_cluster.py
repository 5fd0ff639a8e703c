"""A real two-raylet Ray cluster on loopback: `vismem submit` a tiny run, outputs land in the store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.localcluster import LocalRayCluster
from core.store import Store

REPO = Path(__file__).resolve().parents[2]


def _vismem(args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)


def test_submit_to_two_raylet_cluster(s3_server):
    env = {**os.environ, **s3_server.env(), "RAY_AUTH_MODE": "disabled"}
    with LocalRayCluster(head_cpus=1, workers=1, worker_cpus=1) as cluster:
        assert cluster.alive_nodes() == 2
        r = _vismem(["submit", "report", "--store", "s3://vismem-test/cluster", "--seed", "7",
                     "--dashboard", cluster.dashboard_url, "--wait", "--timeout", "240"], env)
        assert r.returncode == 0, r.stderr + r.stdout
        job_id = r.stdout.strip().splitlines()[-1]
        assert job_id.startswith("vismem-")

        st = _vismem(["status", job_id, "--dashboard", cluster.dashboard_url], env, timeout=60)
        assert st.returncode == 0 and st.stdout.strip() == "SUCCEEDED"
        logs = _vismem(["logs", job_id, "--dashboard", cluster.dashboard_url], env, timeout=60)
        assert logs.returncode == 0 and '"_run_id"' in logs.stdout

        store = Store.open("s3://vismem-test/cluster", endpoint_url=s3_server.endpoint_url,
                           access_key=s3_server.access_key, secret_key=s3_server.secret_key)
        manifests = [k for k in store.list("runs") if k.endswith("manifest.json")]
        assert len(manifests) == 1
        man = store.get_json(manifests[0])
        assert man["config"]["seed"] == 7 and man["stages"]["report"]["status"] == "done"
        pids = cluster._pids()
        assert pids
    assert not [p for p in pids if Path(f"/proc/{p}").exists() and
                Path(f"/proc/{p}/stat").read_text().split()[2] != "Z"]


def test_submit_needs_reachable_store_and_server(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    r = _vismem(["submit", "report", "--dashboard", "http://127.0.0.1:9"], env, timeout=60)
    assert r.returncode != 0 and "store the cluster can reach" in r.stderr
    r = _vismem(["submit", "report", "--store", f"file://{tmp_path}/s", "--dashboard", "http://127.0.0.1:9"], env,
                timeout=60)
    assert r.returncode != 0 and "cannot reach the Ray job server" in r.stderr
