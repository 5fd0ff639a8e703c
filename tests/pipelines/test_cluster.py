"""A real two-raylet Ray cluster on loopback: `vismem submit` with the default config.

The data reaches the job inside its package (``_data/``), the client's git revision and config
travel with it, the run log lands in the store, the model endpoint variables are forwarded
without their values being printed, and afterwards nothing of the cluster is left: no process,
and no listener beyond 127.0.0.1 while it ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from vismem.core.store import Store
from vismem.pipelines.localcluster import LocalRayCluster, is_loopback

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-do-not-print-4f2a9c"


def _vismem(args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)


def _vismem_here(args, capfd) -> tuple[int, str, str]:
    """A read-only command in this process (``cwd`` and the cluster's variables set by the test),
    its output read at the file descriptors: (exit status, stdout, stderr). The commands whose
    exact stderr is checked stay processes of their own (:func:`_vismem`)."""
    from vismem.pipelines.cli import main

    capfd.readouterr()
    rc = main(list(args))
    out, err = capfd.readouterr()
    return rc, out, err


def _store(s3_server, uri):
    return Store.open(uri, endpoint_url=s3_server.endpoint_url, access_key=s3_server.access_key,
                      secret_key=s3_server.secret_key)


def _git_revision() -> str:
    from vismem.pipelines.manifest import git_revision

    return git_revision(REPO)


def _submit_and_check(cluster, env, store_uri, stages, s3_server, capfd, timeout=420):
    """Submit ``stages`` with the default config; returns (manifest, store, run prefix)."""
    r = _vismem(["submit", *stages, "--store", store_uri, "--dashboard", cluster.dashboard_url, "--wait",
                 "--forward-credentials",  # the loopback cluster has no role of its own for weed
                 "--timeout", str(timeout)], env, timeout=timeout + 60)
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-2000:]
    assert SECRET not in r.stdout + r.stderr
    job_id = r.stdout.strip().splitlines()[-1]
    assert job_id.startswith("vismem-")

    rc, out, _err = _vismem_here(["status", job_id, "--dashboard", cluster.dashboard_url], capfd)
    assert rc == 0 and out.strip() == "SUCCEEDED"
    rc, out, _err = _vismem_here(["logs", job_id, "--dashboard", cluster.dashboard_url], capfd)
    assert rc == 0 and SECRET not in out

    # The model variables reached the job by name; the secret's value was never printed.
    from ray.job_submission import JobSubmissionClient

    info = JobSubmissionClient(cluster.dashboard_url).get_job_info(job_id)
    job_env = (info.runtime_env or {}).get("env_vars", {})
    assert job_env.get("VISMEM_TESTMODEL_BASE_URL") == "http://127.0.0.1:9/v1"
    assert "VISMEM_TESTMODEL_API_KEY" in job_env and "VISMEM_VLM_URL" not in job_env

    store = _store(s3_server, store_uri)
    manifests = [k for k in store.list("runs") if k.endswith("manifest.json")]
    assert len(manifests) == 1
    man = store.get_json(manifests[0])
    prefix = manifests[0].rsplit("/", 1)[0]
    for stage in stages:
        assert man["stages"][stage]["status"] == "done", man["stages"][stage]
    # Default config: the data travelled with the job, the run id is the client's.
    local_id = _vismem_here(["run", *stages, "--print-config"], capfd)[1].splitlines()[0]
    assert local_id == f"# run id: {man['run_id']}"
    assert man["config"]["data_dir"] == "_data"
    assert all(v["digest"].startswith("sha256:") for v in man["inputs"].values()) and man["inputs"]
    assert man["git_revision"] == _git_revision() != "unknown"
    assert SECRET not in json.dumps(man)
    log = store.get_bytes(f"{prefix}/run.log").decode()
    assert f"run {man['run_id']}" in log and SECRET not in log
    return man, store, prefix


def _cluster_env(s3_server):
    env = {**os.environ, **s3_server.env(), "RAY_AUTH_MODE": "disabled",
           "VISMEM_TESTMODEL_BASE_URL": "http://127.0.0.1:9/v1", "VISMEM_TESTMODEL_API_KEY": SECRET}
    env.pop("VISMEM_VLM_URL", None)
    return env


def _assert_clean(cluster, pids, listeners):
    assert pids and listeners
    outward = [x for x in listeners if not is_loopback(x[1])]
    assert not outward, f"listeners beyond loopback: {outward}"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _tree_with_agents(cluster, agents_wanted: int) -> list[int]:
    """Every process below the cluster's raylets and GCS, read here from /proc's parent links (not
    from the cluster's own bookkeeping) once ``agents_wanted`` dashboard and runtime-env agents
    are up. Those agents rename themselves, which hides the cluster's token: stop() once left them
    running."""
    import time

    from vismem.core.lifeline import descendants, pids_with_env
    from vismem.pipelines.localcluster import TOKEN_VAR

    deadline = time.monotonic() + 60
    while True:
        tree = descendants(pids_with_env(TOKEN_VAR, cluster.token, exclude={os.getpid()}))
        agents = [p for p in tree if "RuntimeEnvAgent" in _cmdline(p) or "DashboardAgent" in _cmdline(p)]
        if len(agents) >= agents_wanted or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(agents) >= agents_wanted, [_cmdline(p)[:80] for p in tree]
    return tree


def test_submit_to_two_raylet_cluster(s3_server, capfd, monkeypatch):
    """Also the cluster's stop(): no process of it is left, its renamed agents included (this
    cluster stands in for tests/pipelines/test_localcluster.py's real one: one start, not two)."""
    import time

    from vismem.core.lifeline import alive

    env = _cluster_env(s3_server)
    for k in set(env) | set(os.environ):  # the commands run here see what the subprocesses see
        if k not in env:
            monkeypatch.delenv(k)
        elif os.environ.get(k) != env[k]:
            monkeypatch.setenv(k, env[k])
    monkeypatch.chdir(REPO)
    cluster = LocalRayCluster(head_cpus=1, workers=1, worker_cpus=1)
    with cluster:
        assert cluster.alive_nodes() == 2
        assert set(cluster.raylet_pids()) == {"head", "w1"}
        # catalog reads dmv-bench on the driver; report reads the run back: both need the data.
        _submit_and_check(cluster, env, "s3://vismem-test/cluster", ["catalog", "report"], s3_server, capfd)
        for unknown in (["status", "vismem-nope"], ["logs", "vismem-nope"]):
            r = _vismem([*unknown, "--dashboard", cluster.dashboard_url], env, timeout=60)
            assert r.returncode != 0 and "Traceback" not in r.stderr
            assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "no job 'vismem-nope'" in r.stderr
        tree = _tree_with_agents(cluster, 4)  # both raylets' dashboard and runtime-env agents
        pids, listeners = cluster.pids(), cluster.listeners()
        _assert_clean(cluster, pids, listeners)
    assert cluster.stop() == []
    assert not [p for p in pids if alive(p)]
    deadline = time.monotonic() + 5
    while any(alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p for p in tree if alive(p)] == [], {p: _cmdline(p)[:100] for p in tree if alive(p)}
    assert not cluster.root.exists()


def test_submit_needs_reachable_store_and_server(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    r = _vismem(["submit", "report", "--dashboard", "http://127.0.0.1:9"], env, timeout=60)
    assert r.returncode != 0 and "store the cluster can reach" in r.stderr
    r = _vismem(["submit", "report", "--store", f"file://{tmp_path}/s", "--dashboard", "http://127.0.0.1:9"], env,
                timeout=60)
    assert r.returncode != 0 and "cannot reach the Ray job server" in r.stderr
