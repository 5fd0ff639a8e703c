"""SIGTERM ends a run like Ctrl-C: one line, exit 143 (128 + 15), nothing left running.

Ray's handlers, installed by ``ray.init`` over the CLI's, exited 15 without unwinding and printed
the core worker's C++ stack dump.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from vismem.core.lifeline import alive, pids_with_env


def _marked(mark: str) -> list[int]:
    return [p for p in pids_with_env("VISMEM_TEST_MARK", mark, exclude={os.getpid()}) if alive(p)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_sigterm_mid_run_is_one_line_exit_143_and_leaves_nothing_running(tmp_path):
    data = {"name": "termtest", "stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
            "store": {"uri": f"file://{tmp_path}/store"}, "ray": {"num_cpus": 2, "object_store_mb": 256},
            "encode": {"chains": 1, "J": 3, "env": "http", "workers": 1,
                       # 0.1 s a step: the two sessions after the first still browse for seconds
                       "backends": [{"name": "scripted-shopper", "args": {"sleep_s": 0.1}}]}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    mark = secrets.token_hex(6)
    env = {**os.environ, "VISMEM_TEST_MARK": mark, "RAY_AUTH_MODE": "disabled"}
    cmd = [sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        # Mid-stage: the first session is cached, the others are being browsed.
        while time.monotonic() < deadline and not list((tmp_path / "store").rglob("*.done.json")):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before SIGTERM"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    assert "SIGTERM received" not in err and "*** " not in err and "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1] == "vismem: terminated" and sum(ln.startswith("vismem:") for ln in lines) == 1, err[-3000:]
    deadline = time.monotonic() + 60  # Ray's processes end on their own once the driver has shut Ray down
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == [], {p: _cmdline(p)[:120] for p in _marked(mark)}


# The real CLI in a process whose ray.init sends SIGTERM to itself once the driver's core worker is
# up (Ray's own handlers in force: its Python one exits 15, its C++ one printed a stack dump).
_TERM_IN_INIT = """
import os, signal, sys, time
import ray._private.worker as w
connect = w.connect
def connect_then_term(*args, **kwargs):
    connect(*args, **kwargs)
    open(sys.argv[1], "w").close()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(2)  # still inside ray.init when the signal is handled
w.connect = connect_then_term
from vismem.pipelines.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_sigterm_while_ray_starts_is_one_line_exit_143_and_leaves_nothing_running(tmp_path):
    data = {"name": "terminit", "stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
            "store": {"uri": f"file://{tmp_path}/store"}, "ray": {"num_cpus": 2, "object_store_mb": 256},
            "encode": {"chains": 1, "J": 1, "env": "http", "workers": 1}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    mark = secrets.token_hex(6)
    env = {**os.environ, "VISMEM_TEST_MARK": mark, "RAY_AUTH_MODE": "disabled"}
    sent = tmp_path / "sent"
    cmd = [sys.executable, "-c", _TERM_IN_INIT, str(sent), "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress"]
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert sent.exists(), "ray.init never reached the driver's connect"
    assert r.returncode == 143, (r.returncode, r.stderr[-3000:])
    assert "SIGTERM received" not in r.stderr and "*** " not in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines[-1] == "vismem: terminated" and sum(ln.startswith("vismem:") for ln in lines) == 1, r.stderr[-3000:]
    deadline = time.monotonic() + 60
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == [], {p: _cmdline(p)[:120] for p in _marked(mark)}
