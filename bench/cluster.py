"""Benchmark ``cluster-encode``: encoding sessions/min submitted to the loopback cluster.

A fresh two-node (then three-node) loopback cluster (:class:`vismem.pipelines.localcluster.LocalRayCluster`:
a head plus 1 or 2 worker raylets of one CPU each) gets ``vismem submit encode`` with the default
config and a fresh store, scripted shopper over the HTTP env, so no session is cached. The
figure is sessions / the encode stage's wall time (from the run's manifest), i.e. what the
stage delivers once the job runs, without the job's start-up; the job's whole wall time is
recorded beside it. On a shared 2-core machine the third raylet adds no cores, so the ratio
measures scheduling overhead more than scaling.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vismem.bench.harness import benchmark, record

NAME = "cluster-encode"
CHAINS, J = 4, 5


def _encode_on(workers: int, tmp: Path) -> tuple[float, float]:
    """``(sessions/min of the encode stage, job wall s)`` on a cluster with ``workers`` raylets."""
    from vismem.core.store import Store
    from vismem.pipelines.localcluster import LocalRayCluster

    uri = f"file://{tmp}/store-{workers}"
    repo = Path(__file__).resolve().parents[1]
    with LocalRayCluster(head_cpus=1, workers=workers, worker_cpus=1) as cluster:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "vismem", "submit", "encode", "--store", uri,
                            "--dashboard", cluster.dashboard_url, "--wait", "--timeout", "1500",
                            "--set", f"encode.chains={CHAINS}", "--set", f"encode.J={J}", "--set", "encode.env=http"],
                           capture_output=True, text=True, cwd=repo, env={**os.environ, "RAY_AUTH_MODE": "disabled"},
                           timeout=1600)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"cluster-encode with {workers} worker raylet(s) failed: {r.stderr[-1500:]}")
    store = Store.open(uri)
    [key] = [k for k in store.list("runs") if k.endswith("manifest.json")]
    stage_s = float(store.get_json(key)["stages"]["encode"]["wall_s"])
    return CHAINS * J / stage_s * 60, wall


@benchmark(NAME, f"sessions/min of `vismem submit encode` ({CHAINS} chains x J={J}, HTTP env) on the loopback "
           "cluster with 1 and 2 worker raylets")
def cluster_encode() -> list[dict]:
    out: list[dict] = []
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            rate, wall = _encode_on(workers, Path(tmp))
            rates[workers] = rate
            out.append(record(NAME, f"sessions_per_min ({workers} worker raylet(s) + head)", rate, "sessions/min",
                              better="higher"))
            out.append(record(NAME, f"job_wall_s ({workers} worker raylet(s), submit to SUCCEEDED)", wall, "s"))
    out.append(record(NAME, "speedup (2 vs 1 worker raylets)", rates[2] / rates[1], "x", better="higher"))
    return out
