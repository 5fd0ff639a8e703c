"""End to end on a fresh two-raylet loopback cluster (slow): the whole local preset submitted with
the default config equals a local run except timing columns; a Ray worker killed mid-encoding
leaves identical trajectories; the J = 50 Monte Carlo pilot on a reduced number of chains."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import polars as pl
import pytest

from vismem.core.lifeline import alive
from vismem.core.store import Store
from vismem.pipelines.localcluster import LocalRayCluster, is_loopback
from tests.pipelines.test_cluster import _cluster_env, _store, _submit_and_check, _vismem

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]  # a whole preset twice: past the 600 s default

#: The job driver's argv (``python -m vismem run --config env:...``), not the shell around it.
DRIVER = b"vismem\x00run\x00--config\x00env:VISMEM_CONFIG_YAML"

#: Columns that measure time (they differ run to run; everything else must be equal).
TIMING = re.compile(r"(^|_)(wall|latency|seconds|secs|elapsed|time|started|finished|duration)(_|$)|_s$|_ms$")


def result_tables(store: Store, prefix: str) -> dict[str, pl.DataFrame]:
    """Every result table of a run, timing columns dropped, rows in a canonical order."""
    out = {}
    for key in store.list(f"{prefix}/results"):
        if not key.endswith(".parquet"):
            continue
        df = pl.read_parquet(store.get_bytes(key))
        df = df.drop([c for c in df.columns if TIMING.search(c)])
        plain = [c for c, t in df.schema.items() if t.is_numeric() or t in (pl.Utf8, pl.Boolean)]
        out[key.rsplit("/", 1)[-1]] = df.sort(plain) if plain else df
    return out


def _local_run(tmp_path: Path, env: dict, stages: list[str], extra: list[str] = ()) -> tuple[Store, str]:
    uri = f"file://{tmp_path}/local-store"
    r = _vismem(["run", *stages, "--store", uri, "--no-progress", "--set", f"runs_dir={tmp_path}/runs", *extra], env,
                timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-2000:]
    store = Store.open(uri)
    [man] = [k for k in store.list("runs") if k.endswith("manifest.json")]
    return store, man.rsplit("/", 1)[0]


def _assert_equal_tables(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    assert a and sorted(a) == sorted(b)
    for name in a:
        assert a[name].columns == b[name].columns, name
        assert a[name].equals(b[name]), f"{name} differs between the cluster and the local run"


def _stop_clean(cluster: LocalRayCluster) -> None:
    pids, listeners = cluster.pids(), cluster.listeners()
    assert not [x for x in listeners if not is_loopback(x[1])]
    assert cluster.stop() == []
    assert not [p for p in pids if alive(p)]


def test_whole_local_preset_on_cluster_equals_local_run(s3_server, tmp_path):
    from vismem.pipelines.stage import STAGE_ORDER

    env = _cluster_env(s3_server)
    local_store, local_prefix = _local_run(tmp_path, env, [])
    cluster = LocalRayCluster(head_cpus=1, workers=1, worker_cpus=1).start()
    try:
        man, store, prefix = _submit_and_check(cluster, env, "s3://vismem-test/whole", list(STAGE_ORDER), s3_server,
                                               timeout=2400)
        assert prefix == local_prefix  # the same run id
        _assert_equal_tables(result_tables(store, prefix), result_tables(local_store, local_prefix))
    finally:
        _stop_clean(cluster)


def _pids_with(cluster: LocalRayCluster, needle: bytes) -> list[int]:
    """The cluster's processes whose command line holds ``needle``."""
    out = []
    for pid in cluster.pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmd:
            out.append(pid)
    return out


def _sessions(store: Store) -> int:
    return sum(1 for k in store.list("trajectories") if k.endswith(".parquet") and ".timing." not in k)


def _wait(client, job_id: str, timeout_s: float = 1500) -> str:
    deadline = time.monotonic() + timeout_s
    while (status := str(client.get_job_status(job_id)).split(".")[-1]) not in ("SUCCEEDED", "FAILED", "STOPPED"):
        assert time.monotonic() < deadline, "job did not finish"
        time.sleep(2)
    return status


def test_driver_then_worker_killed_mid_encoding_leave_identical_trajectories(s3_server, tmp_path):
    """Kill the job's driver mid-encoding (the job fails), resubmit: the rerun resumes; kill an
    encoding worker mid-stage in it: the stage completes. Trajectories equal a local run's."""
    from ray.job_submission import JobSubmissionClient

    env = _cluster_env(s3_server)
    local_store, local_prefix = _local_run(tmp_path, env, ["encode"])
    total = _sessions(local_store)
    uri = "s3://vismem-test/killed"
    cluster = LocalRayCluster(head_cpus=1, workers=1, worker_cpus=1).start()
    try:
        client = JobSubmissionClient(cluster.dashboard_url)
        store = _store(s3_server, uri)
        jobs = []
        for needle in (DRIVER, b"EncodeWorker"):  # the driver, then a worker
            r = _vismem(["submit", "encode", "--store", uri, "--dashboard", cluster.dashboard_url], env, timeout=300)
            assert r.returncode == 0, r.stderr[-3000:]
            jobs.append(r.stdout.strip().splitlines()[-1])
            done_before = _sessions(store)
            killed = _kill_first(cluster, needle, lambda: _sessions(store) > done_before)
            status = _wait(client, jobs[-1])
            assert not alive(killed)
            if needle == DRIVER:
                assert status == "FAILED"
                assert 0 < _sessions(store) < total  # killed mid-encoding; what was committed stays
            else:
                assert status == "SUCCEEDED", client.get_job_logs(jobs[-1])[-3000:]
        _assert_equal_tables(result_tables(store, local_prefix), result_tables(local_store, local_prefix))
        steps = sorted(k for k in store.list("trajectories") if k.endswith(".parquet") and ".timing." not in k)
        assert len(steps) == total and steps == sorted(k for k in local_store.list("trajectories")
                                                       if k.endswith(".parquet") and ".timing." not in k)
        for key in steps:
            assert store.get_bytes(key) == local_store.get_bytes(key), key
    finally:
        _stop_clean(cluster)


def test_j50_monte_carlo_pilot_end_to_end(tmp_path):
    """The pilot's shape (`--J 50 --set probes.J=[50] --set probes.mc=10`) on one chain, scripted
    back-ends, two architectures: every reach 1..49 gets at most M probes, all scored."""
    env = dict(os.environ)
    store, prefix = _local_run(tmp_path, env, ["encode", "replay", "probes", "report"],
                               ["--set", "encode.chains=1", "--set", "encode.J=50", "--set", "encode.env=http",
                                "--set", "probes.J=[50]", "--set", "probes.mc=10",
                                "--set", "memory.architectures=[nomemory,dualmem]"])
    probes = pl.read_parquet(store.get_bytes(f"{prefix}/results/probes.parquet"))
    # dualmem is also the alpha = 0.75 point of the Fig. 7 sweep (same probes, another study label)
    assert set(probes["study"].to_list()) == {"main", "alpha_sweep"}
    probes = probes.filter(pl.col("study") == "main")
    enc = pl.read_parquet(store.get_bytes(f"{prefix}/results/encoding.parquet"))
    assert enc.height == 50
    assert set(probes["J"].to_list()) == {50} and set(probes["architecture"].to_list()) == {"nomemory", "dualmem"}
    per = probes.group_by("architecture", "reach").len()
    assert per["len"].max() <= 10 and set(per["reach"].to_list()) <= set(range(1, 50))
    assert per["reach"].n_unique() >= 40  # nearly every reach has a product to recall
    # The same draws for both architectures (paired probes), each scored by URL match.
    ids = probes.group_by("architecture").agg(pl.col("probe_id").sort())
    assert ids["probe_id"][0].to_list() == ids["probe_id"][1].to_list()
    assert probes["correct"].dtype == pl.Boolean and probes["correct"].null_count() == 0
    acc = dict(probes.group_by("architecture").agg(pl.col("correct").mean()).iter_rows())
    assert acc["dualmem"] > acc["nomemory"]  # memory recalls at reach up to 49; no memory cannot


def _count(store: Store, prefix: str, suffix: str) -> int:
    return sum(1 for k in store.list(prefix) if k.endswith(suffix))


def _kill_first(cluster: LocalRayCluster, needle: bytes, ready, timeout_s: float = 900) -> int:
    """SIGKILL the first cluster process matching ``needle`` once ``ready()`` holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            victims = _pids_with(cluster, needle)
            if victims:
                os.kill(victims[0], signal.SIGKILL)
                return victims[0]
        time.sleep(0.2)
    raise AssertionError(f"nothing matching {needle!r} to kill")


def test_workers_killed_mid_catalogue_and_mid_probes_leave_identical_results(s3_server, tmp_path):
    """A catalogue task worker SIGKILLed while images are being written, then a probe actor
    SIGKILLed after the first probe units are committed: the job still succeeds, and the
    catalogue images and every result table equal a local run's."""
    from ray.job_submission import JobSubmissionClient

    env = _cluster_env(s3_server)
    stages = ["catalog", "encode", "replay", "probes"]
    extra = ["--set", "encode.chains=1", "--set", "memory.architectures=[nomemory,textonly,dualmem]"]
    local_store, local_prefix = _local_run(tmp_path, env, stages, extra)
    uri = "s3://vismem-test/killed-catalog-probes"
    cluster = LocalRayCluster(head_cpus=1, workers=1, worker_cpus=1).start()
    try:
        client = JobSubmissionClient(cluster.dashboard_url)
        store = _store(s3_server, uri)
        r = _vismem(["submit", *stages, "--store", uri, "--dashboard", cluster.dashboard_url, *extra], env,
                    timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        job = r.stdout.strip().splitlines()[-1]
        killed = [_kill_first(cluster, b"_generate_batch", lambda: _count(store, "catalog", ".png") > 40),
                  _kill_first(cluster, b"ProbeWorker", lambda: _count(store, "probes", ".done.json") > 0)]
        assert _wait(client, job) == "SUCCEEDED", client.get_job_logs(job)[-3000:]
        assert not any(alive(k) for k in killed)
        _assert_equal_tables(result_tables(store, local_prefix), result_tables(local_store, local_prefix))
        images = sorted(k for k in local_store.list("catalog") if k.endswith(".png"))
        assert len(images) == 2000 and sorted(k for k in store.list("catalog") if k.endswith(".png")) == images
        for key in images[::97]:
            assert store.get_bytes(key) == local_store.get_bytes(key), key
    finally:
        _stop_clean(cluster)
