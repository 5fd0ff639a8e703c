"""LocalRayCluster's bookkeeping (mostly without starting Ray): a failed start leaks nothing, listeners
are read from /proc, loopback is recognised; and a cluster whose owner was killed leaves no process.
A real two-raylet cluster's stop() (its renamed agents included) is checked on the cluster
tests/pipelines/test_cluster.py starts anyway (one start, not two)."""

from __future__ import annotations

import os
import socket

from vismem.pipelines.localcluster import LocalRayCluster, is_loopback, listening_sockets, ray_port_holders


def test_failed_start_removes_its_dirs_and_processes():
    c = LocalRayCluster()
    tries = []

    def fail(args):
        tries.append(args)
        raise RuntimeError("`ray start` timed out")

    c._run = fail  # type: ignore[method-assign]
    try:
        c.start()
    except RuntimeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("start did not raise")
    assert not c.root.exists() and c.leftovers() == [] and c._lifeline is None
    assert len(tries) == 1  # only a taken port is tried again


def test_listening_sockets_of_a_process():
    with socket.socket() as lo, socket.socket() as anyaddr:
        lo.bind(("127.0.0.1", 0))
        lo.listen()
        anyaddr.bind(("0.0.0.0", 0))
        anyaddr.listen()
        found = {(a, p) for pid, a, p in listening_sockets([os.getpid()])}
        assert ("127.0.0.1", lo.getsockname()[1]) in found and ("0.0.0.0", anyaddr.getsockname()[1]) in found
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.0.2.2")


def test_ray_port_holders_finds_a_ray_process_by_its_port_only():
    """A renamed Ray process re-parented to init is found by the port it holds; others are not."""
    import subprocess
    import sys

    code = "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)"
    procs = [subprocess.Popen([sys.executable, "-c", code, tag], stdout=subprocess.PIPE, text=True)
             for tag in ("ray::ServeProxy", "plain")]
    try:
        ray_port, plain_port = (int(p.stdout.readline()) for p in procs)
        assert ray_port_holders([ray_port, plain_port]) == [procs[0].pid]
        assert ray_port_holders([plain_port]) == []
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert ray_port_holders([ray_port]) == []


def test_every_port_of_a_cluster_is_distinct():
    c = LocalRayCluster(workers=3, lifeline=False)
    starts: list[list[str]] = []
    c._run = starts.append  # type: ignore[method-assign]
    c._wait_nodes = lambda n: None  # type: ignore[method-assign]
    try:
        c.start()
    finally:
        c.stop()
    assert len(starts) == 4
    ports = [a.split("=", 1)[1] for args in starts for a in args if a.startswith("--") and a.split("=")[0].endswith("port")]
    assert len(ports) == 3 + 6 * 4 and len(set(ports)) == len(ports)
    assert f"--port={c.gcs_port}" in starts[0] and f"--dashboard-port={c.dashboard_port}" in starts[0]
    assert all(f"--address=127.0.0.1:{c.gcs_port}" in args for args in starts[1:])


def test_a_start_whose_port_was_taken_starts_again_on_fresh_ports():
    c = LocalRayCluster(workers=1, lifeline=False)
    heads: list[list[str]] = []

    def run(args):
        if "--head" in args:
            heads.append(args)
            if len(heads) == 1:
                raise RuntimeError("`ray start --head` failed: ValueError: Failed to bind to 127.0.0.1:1 "
                                   "because it's already occupied.")

    c._run = run  # type: ignore[method-assign]
    c._wait_nodes = lambda n: None  # type: ignore[method-assign]
    try:
        c.start()
    finally:
        c.stop()
    assert len(heads) == 2 and heads[0] != heads[1]


# An owner that starts a one-raylet cluster, prints its root and token, and waits to be killed.
_OWNER = """
import time
from vismem.pipelines.localcluster import LocalRayCluster
c = LocalRayCluster(workers=0).start()
print(c.root, c.token, flush=True)
time.sleep(600)
"""


def test_an_owner_killed_without_stop_leaves_neither_processes_nor_its_temp_dir():
    """SIGKILL of the process that started a cluster: its lifeline ends the cluster's processes
    and removes its temp dir (``/tmp/vmrXXXXXX``, a few MB of logs and sockets), which it once left."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from vismem.core.lifeline import alive, descendants, pids_with_env
    from vismem.pipelines.localcluster import TOKEN_VAR, _cmdline

    owner = subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    try:
        root, token = owner.stdout.readline().split()
        root = Path(root)
        tree = descendants(pids_with_env(TOKEN_VAR, token, exclude={os.getpid(), owner.pid}))
        assert root.is_dir() and any((root / "head").iterdir()) and len(tree) >= 2
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
        deadline = time.monotonic() + 60
        while (root.exists() or any(alive(p) for p in tree)) and time.monotonic() < deadline:
            time.sleep(0.3)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    assert [p for p in tree if alive(p)] == [], {p: _cmdline(p)[:100] for p in tree if alive(p)}
    assert not root.exists(), sorted(str(p) for p in root.rglob("*"))[:20]
