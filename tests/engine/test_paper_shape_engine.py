"""The ``paper`` preset's shape, shrunk, on a loopback two-raylet Ray cluster with the real CPU engine
(``paper-tiny.yaml`` beside this file): ``vismem serve up`` deploys the tiny Qwen2.5-VL agent back-end
on the cluster's Serve (127.0.0.1 only), then one ``vismem run`` attached to the cluster runs every stage
of the paper preset -- MemShot with vLLM pooling retrievers (Qwen3-VL-Embedding, Jina-v4) and answers +
verdicts from in-job ``ray.data.llm`` engines; the catalogue; encoding chains against the served engine;
replay into every architecture; recall probes; the report -- and ends with its tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vismem.core.store import Store

HERE = Path(__file__).parent
REPO = HERE.parent.parent
MODEL = "tiny-qwen2.5-vl-vllm"


def _vismem(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout)


@pytest.mark.timeout(3600)
def test_paper_preset_shape_on_a_two_raylet_cluster_ends_with_its_tables(tmp_path, tiny_dir):
    from vismem.pipelines.localcluster import LocalRayCluster, is_loopback

    env = {**os.environ, "VISMEM_SERVE_STATE": str(tmp_path / "serve" / "state.json"), "VISMEM_PROGRESS": "0"}
    env.pop("VISMEM_SERVE_URL", None)
    store = f"file://{tmp_path}/store"
    cluster = LocalRayCluster(head_cpus=3, workers=1, worker_cpus=2, object_store_mb=400).start()
    try:
        assert cluster.alive_nodes() == 2
        up = _vismem(["serve", "up", MODEL, "--dashboard", cluster.dashboard_url, "--host", "127.0.0.1",
                      "--timeout", "1200"], env, timeout=1500)
        assert up.returncode == 0, up.stderr[-3000:] + up.stdout[-2000:]
        run = _vismem(["run", "--config", str(HERE / "paper-tiny.yaml"), "--address", cluster.address,
                       "--store", store, "--no-progress", "--json", "--set", f"runs_dir={tmp_path / 'runs'}"],
                      {**env, **cluster.attach_env}, timeout=3000)
        assert run.returncode == 0, run.stderr[-4000:] + run.stdout[-2000:]
        out = json.loads(run.stdout)
        assert [k for k in out if not k.startswith("_")] == ["memshot", "catalog", "encode", "replay", "probes",
                                                            "report"]
        assert all(out[s]["status"] == "done" for s in ("memshot", "catalog", "encode", "replay", "probes", "report"))
        enc = out["encode"]
        assert enc["ran"] == 8 and enc["failed"] == []  # 2 chains x J=2 x (the engine, the scripted shopper)
        assert any(MODEL in row["backend_name"] for row in enc["table3"]), enc["table3"]
        probes = out["probes"]
        assert probes["probes"] > 0 and probes["failed"] == [] and probes["vlm_calls_per_probe"] > 0
        s = Store.open(store)
        results = {k.rsplit("/", 1)[-1] for k in s.list(f"runs/{out['_run_id']}/results")}
        assert {"probes.parquet"} <= results, results
        report = [k for k in s.list(f"runs/{out['_run_id']}/report") if k.endswith("index.html")]
        assert report
        html = s.get_bytes(report[0]).decode()
        assert "tiny-qwen3-vl-vllm" in html and MODEL in html  # the report names the stand-ins it ran
        outward = [x for x in cluster.listeners() if not is_loopback(x[1])]
        assert not outward, f"listeners beyond loopback: {outward}"
    finally:
        _vismem(["serve", "down"], env, timeout=300)
        cluster.stop()
