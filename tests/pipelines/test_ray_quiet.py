"""A local run's terminal holds vismem's lines only: no Ray core-worker log line (Ray Data's
"Actor ... has constructor arguments in the object store and max_restarts > 0", once per actor,
ray-project/ray#57733). Its actors are therefore not restarted: an actor that dies ends the stage
in one line, and a re-run resumes."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time

import pytest
import yaml

from vismem.core.lifeline import alive, pids_with_env
from vismem.pipelines.rayctx import actor_pool
from vismem.pipelines.settings import RayConfig

#: A line of Ray's C++ logging: ``[2026-12-02 14:34:34,467 E 14377 14377] core_worker.cc:2465: ...``.
RAY_CPP_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,.]+ [DIWEF] \d+ \d+\] \w+\.(cc|h):\d+:", re.M)


def _cfg(tmp_path, **encode):
    data = {"name": "quiet", "stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
            "store": {"uri": f"file://{tmp_path}/store"}, "ray": {"num_cpus": 2, "object_store_mb": 256},
            "encode": {"chains": 1, "J": 1, "env": "http", "workers": 1, **encode}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    return [sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress"]


@pytest.mark.slow  # a whole `vismem run`; its checks ride on the killed run below (bench/suite.py SLOW_TIER)
def test_a_local_run_prints_no_ray_core_worker_line(tmp_path):
    r = subprocess.run(_cfg(tmp_path), capture_output=True, text=True, timeout=600,
                       env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert list((tmp_path / "store").rglob("*.done.json")), "the run browsed no session: its actor never ran"
    assert not RAY_CPP_LINE.search(r.stderr) and "constructor arguments" not in r.stderr, r.stderr[-3000:]
    assert "Warning" not in r.stderr, r.stderr[-3000:]  # nor the deprecation of the extra remote arg


def test_actor_restarts_are_off_locally_and_kept_on_a_cluster(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert actor_pool(RayConfig())["max_restarts"] == 0
    assert "max_restarts" not in actor_pool(RayConfig(address="auto", mode="cluster"))
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")  # a driver inside a submitted job
    assert "max_restarts" not in actor_pool(RayConfig())


def test_an_actor_dying_mid_stage_is_one_line_and_the_run_prints_no_ray_core_worker_line(tmp_path):
    """The encode worker killed (SIGKILL) while it browses: not restarted, not a traceback. Until
    then the run printed what every local run prints as it starts Ray and its actors (Ray's
    per-actor core-worker line, the deprecation warning): none of it may reach the terminal."""
    mark = secrets.token_hex(6)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "VISMEM_TEST_MARK": mark}
    # 0.1 s a step: the two sessions after the first still browse for seconds when the kill lands.
    proc = subprocess.Popen(_cfg(tmp_path, J=3, backends=[{"name": "scripted-shopper", "args": {"sleep_s": 0.1}}]),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    killed = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and killed is None:
            assert proc.poll() is None, proc.communicate()
            for pid in pids_with_env("VISMEM_TEST_MARK", mark, exclude={os.getpid()}):
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read()
                except OSError:
                    continue
                if b"EncodeWorker" in cmd and list((tmp_path / "store").rglob("*.done.json")):
                    os.kill(pid, signal.SIGKILL)
                    killed = pid
                    break
            time.sleep(0.1)
        assert killed is not None, "the encode worker was never seen mid-stage"
        _out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and not RAY_CPP_LINE.search(err), err[-3000:]
    assert "constructor arguments" not in err and "Warning" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("vismem:")]
    assert lines == [err.strip().splitlines()[-1]], err[-3000:]
    assert lines[0].startswith("vismem: error: a Ray worker process died during stage encode (") and \
        lines[0].endswith("); a re-run resumes from what was stored"), lines[0]
    assert not alive(killed)
