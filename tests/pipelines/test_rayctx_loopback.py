"""A local Ray started the way vismem starts it listens on loopback only.

vismem runs Ray with ``RAY_AUTH_MODE=disabled``, so any listener beyond loopback would let anyone on
the network run code here. The run's Ray starts in a fresh process (so its listeners are its own)
marked with a token every Ray process inherits; the test reads what those processes listen on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_SCRIPT = r"""
import json, os, sys, time
os.environ["VISMEM_TEST_RAYTOKEN"] = sys.argv[1]
from vismem.core.lifeline import pids_with_env
from vismem.pipelines.settings import RayConfig
from vismem.pipelines.localcluster import listening_sockets
from vismem.pipelines.rayctx import init_ray, shutdown_ray

init_ray(RayConfig(num_cpus=2, object_store_mb=128))
import ray

@ray.remote
def pid():
    return os.getpid()

ray.get([pid.remote() for _ in range(2)])  # workers start and open their listeners
time.sleep(2)  # the agents finish starting
pids = pids_with_env("VISMEM_TEST_RAYTOKEN", sys.argv[1]) + [os.getpid()]
print(json.dumps(listening_sockets(pids)))
shutdown_ray()
"""


@pytest.mark.timeout(240)
def test_local_ray_listens_on_loopback_only(tmp_path):
    from vismem.pipelines.localcluster import is_loopback

    token = f"loopback-{os.getpid()}"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)  # the fix must not rely on the caller's env
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, token], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    listeners = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(listeners) >= 4, listeners  # GCS, raylet, agents, driver, workers were all seen
    exposed = [item for item in listeners if not is_loopback(item[1])]
    assert exposed == [], f"Ray listeners beyond loopback: {exposed}"


def test_the_store_server_and_the_shop_listen_on_loopback_only(s3_server, data_dir):
    """The other listeners of a local run, started as a run starts them (the slow tier's real run
    below reads them all at once): the local S3 server -- weed and every port it opens -- and the
    shop the agents browse (``ShopServer.from_data``, as the shop workers start it)."""
    from vismem.env.storefront.server import ShopServer
    from vismem.pipelines.localcluster import is_loopback, listening_sockets

    with ShopServer.from_data(data_dir, seed=0) as shop:
        listeners = listening_sockets([s3_server.pid, os.getpid()])
        assert (os.getpid(), "127.0.0.1", shop.port) in listeners
    weed = [x for x in listeners if x[0] == s3_server.pid]
    assert len(weed) >= 2 and any(port == int(s3_server.endpoint_url.rsplit(":", 1)[1]) for _p, _a, port in weed), weed
    exposed = [x for x in listeners if not is_loopback(x[1])]
    assert exposed == [], f"listeners beyond loopback: {exposed}"


@pytest.mark.slow  # a whole `vismem run` (weed + Ray + encode); fast: the two tests above
@pytest.mark.timeout(420)
def test_a_real_local_run_listens_on_loopback_only(tmp_path):
    # A plain `vismem run` on the default local-s3 store: its local S3 server, Ray (GCS, raylet,
    # agents, workers), the driver and the shop the agents browse. Every process the run starts
    # carries the token; their listeners are read while the run goes on.
    import time

    from vismem.core.lifeline import pids_with_env
    from vismem.pipelines.localcluster import is_loopback, listening_sockets

    token = f"realrun-{os.getpid()}"
    env = {**os.environ, "VISMEM_TEST_RAYTOKEN": token, "RAY_AUTH_MODE": "disabled", "VISMEM_PROGRESS": "0"}
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    cmd = [sys.executable, "-m", "vismem", "run", "encode", "--set", f"runs_dir={tmp_path}/runs",
           "--set", "encode.chains=1", "--set", "encode.J=2", "--set", "encode.env=http", "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[tuple[str, int, str]] = set()
    try:
        while proc.poll() is None:
            pids = pids_with_env("VISMEM_TEST_RAYTOKEN", token)
            for pid, addr, port in listening_sockets(pids):
                try:
                    name = open(f"/proc/{pid}/comm").read().strip()
                except OSError:
                    name = "?"
                seen.add((addr, port, name))
            time.sleep(0.3)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    names = {n for _a, _p, n in seen}
    assert any("weed" in n for n in names) and any(n.startswith(("gcs_server", "raylet")) for n in names), seen
    assert len(seen) >= 6, seen
    exposed = sorted(item for item in seen if not is_loopback(item[0]))
    assert exposed == [], f"listeners of a local run beyond loopback: {exposed}"
