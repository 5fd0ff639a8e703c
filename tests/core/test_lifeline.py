"""Nothing outlives its owner: lifelines, the local S3 server's owner lock and stale servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vismem.core.errors import StoreError
from vismem.core.lifeline import Lifeline, alive, pids_with_env
from vismem.core.s3server import LocalS3Server, stale_servers

REPO = Path(__file__).resolve().parents[2]


def _wait_gone(pids, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def _owner(tmp_path, body: str) -> subprocess.Popen:
    """A Python process that sets something up, prints one line and sleeps (to be SIGKILLed)."""
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def test_child_and_marked_processes_die_when_the_owner_is_sigkilled(tmp_path):
    owner = _owner(tmp_path, """
        import os, subprocess, sys, time
        from vismem.core.lifeline import Lifeline
        line = Lifeline([sys.executable, "-c", "import time; time.sleep(600)"], sweep_env=("T_MARK", "x1"))
        os.environ["T_MARK"] = "x1"   # what a Ray start would inherit
        marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        print(line.child_pid, marked.pid, flush=True)
        time.sleep(600)
    """)
    child, marked = map(int, owner.stdout.readline().split())
    # A just-started process can show an empty /proc environ for a moment on a loaded machine.
    deadline = time.monotonic() + 10
    while pids_with_env("T_MARK", "x1") != [marked] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(child) and alive(marked) and pids_with_env("T_MARK", "x1") == [marked]
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=10)
    assert _wait_gone([child, marked]) == []


def test_close_ends_the_child_and_the_owner_survives_its_own_sweep():
    os.environ["T_MARK2"] = "y2"  # the owner carries the mark in os.environ, not in its /proc environ
    try:
        with Lifeline([sys.executable, "-c", "import time; time.sleep(600)"], sweep_env=("T_MARK2", "y2")) as line:
            child = line.child_pid
            assert alive(child) and line.poll() is None
    finally:
        os.environ.pop("T_MARK2")
    assert _wait_gone([child]) == [] and alive(os.getpid())


def test_sweep_ends_processes_that_spawn_successors_while_being_ended(tmp_path):
    """Four generations, each of which answers SIGTERM by starting the next (marked, inheriting
    the environment) and exiting: a fixed number of rounds leaves the last alive."""
    pidfile = tmp_path / "pids"
    # Each generation starts with SIGTERM blocked (the mask survives exec) and unblocks it only
    # once its handler is in place: a sweep that signals a generation still starting up (a loaded
    # machine) delivers the signal to the handler, so all four generations really happen.
    code = textwrap.dedent(f"""
        import os, signal, subprocess, sys, time
        gen = int(sys.argv[1])
        def successor(*_):
            if gen < 4:
                subprocess.Popen([sys.executable, __file__, str(gen + 1)], start_new_session=True,
                                 preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}}))
            os._exit(0)
        signal.signal(signal.SIGTERM, successor)
        open({str(pidfile)!r}, "a").write(f"{{os.getpid()}}\\n")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGTERM}})
        time.sleep(600)
    """)
    script = tmp_path / "gen.py"
    script.write_text(code)
    os.environ["T_MARK3"] = "z3"
    try:
        line = Lifeline(sweep_env=("T_MARK3", "z3"), grace_s=0.5)
        first = subprocess.Popen([sys.executable, str(script), "1"], start_new_session=True,
                                 preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}))
    finally:
        os.environ.pop("T_MARK3")
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    line.close()  # the sweep runs to the end before close returns
    first.wait(timeout=10)
    pids = [int(x) for x in pidfile.read_text().split()]
    assert len(pids) == 4 and _wait_gone(pids, 5) == []


def test_second_owner_of_a_data_dir_gets_one_line_naming_the_live_run(tmp_path):
    first = LocalS3Server(data_dir=tmp_path / "s3").start()
    try:
        with pytest.raises(StoreError, match=rf"another vismem run \(pid {os.getpid()}\) is using .*s3"):
            LocalS3Server(data_dir=tmp_path / "s3").start()
    finally:
        first.stop()
    again = LocalS3Server(data_dir=tmp_path / "s3").start()  # free once the owner stopped
    again.stop()


def test_weed_dies_with_a_sigkilled_owner_and_the_rerun_starts_at_once(tmp_path):
    owner = _owner(tmp_path, f"""
        import time
        from vismem.core.s3server import LocalS3Server
        s = LocalS3Server(data_dir={str(tmp_path / 's3')!r}).start()
        print(s.pid, flush=True)
        time.sleep(600)
    """)
    weed = int(owner.stdout.readline())
    assert stale_servers(tmp_path / "s3") == [weed]
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=10)
    assert _wait_gone([weed]) == [], "weed outlived its owner"
    t0 = time.monotonic()
    srv = LocalS3Server(data_dir=tmp_path / "s3").start()
    srv.stop()
    assert time.monotonic() - t0 < 20


def test_an_orphan_weed_without_an_owner_is_ended_before_the_start(tmp_path):
    """A weed left by an older vismem (no lifeline, no lock) holds leveldb's lock: ended first."""
    from vismem.core.s3server import _weed_binary

    d = (tmp_path / "s3").resolve()
    d.mkdir()
    orphan = subprocess.Popen([_weed_binary(), "mini", f"-dir={d}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                               "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(1.0)
        srv = LocalS3Server(data_dir=d).start()
        try:
            assert orphan.poll() is not None and stale_servers(d) == [srv.pid]
        finally:
            srv.stop()
    finally:
        if orphan.poll() is None:
            orphan.kill()
        orphan.wait(timeout=10)


def test_bad_bucket_fails_at_once():
    t0 = time.monotonic()
    with pytest.raises(StoreError, match="bucket name 'Bad_Bucket'"):
        LocalS3Server(data_dir="/tmp/never-used", buckets=("Bad_Bucket",)).start()
    assert time.monotonic() - t0 < 1 and not Path("/tmp/never-used").exists()


def test_weed_dies_with_its_sigkilled_watchdog(tmp_path):
    """The owner lives on but its lifeline is killed by hand: weed must not stay behind it."""
    srv = LocalS3Server(data_dir=tmp_path / "s3").start()
    try:
        weed, watchdog = srv.pid, srv.proc.pid
        assert alive(weed) and stale_servers(tmp_path / "s3") == [weed]
        os.kill(watchdog, signal.SIGKILL)
        assert _wait_gone([weed], 5.0) == [], "weed outlived its killed watchdog"
    finally:
        srv.stop()


def test_a_watchdog_whose_child_died_exits_quietly(tmp_path):
    """A child that dies first (the S3 server killed) ends the watchdog with the child's status and
    nothing on the owner's terminal (its pipe-reading thread once made interpreter shutdown
    print a "Fatal Python error")."""
    owner = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from vismem.core.lifeline import Lifeline
        line = Lifeline([sys.executable, "-c", "import sys; sys.exit(7)"])
        deadline = time.monotonic() + 20
        while line.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        print(line.poll())
    """)], cwd=REPO, capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert owner.stdout.strip() == "7" and owner.stderr == "", owner.stderr


def test_close_ends_a_child_that_outlived_its_killed_watchdog(tmp_path):
    """A watchdog killed by hand leaves its child only PR_SET_PDEATHSIG's SIGTERM; a child that
    does not act on it (weed hung in its shutdown) must still end when its owner closes the line,
    not stay until the next vismem command's stale-server check."""
    log = tmp_path / "child.log"
    line = Lifeline([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                     "print('ready', flush=True); time.sleep(600)"], log=log, grace_s=1.0)
    child = line.child_pid
    deadline = time.monotonic() + 30  # the child's SIG_IGN is in place (a start can be slow under load)
    while "ready" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(line.pid, signal.SIGKILL)
    line.proc.wait(timeout=10)
    time.sleep(1.0)
    assert alive(child), "the child ended on PR_SET_PDEATHSIG alone; this test needs one that ignores it"
    line.close()
    assert _wait_gone([child], 5.0) == [], "the child outlived its killed watchdog and the owner's close()"
