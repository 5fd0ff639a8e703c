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
