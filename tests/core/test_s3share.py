"""Read-only commands share the local S3 server a running vismem owns, and never stop it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from vismem.core.errors import StoreError
from vismem.core.lifeline import alive
from vismem.core.s3server import CREDENTIALS_FILE, STATE_FILE, LocalS3Server
from vismem.core.s3share import attach

REPO = Path(__file__).resolve().parents[2]


def test_attach_finds_the_owner_s_server_with_private_credentials_and_no_secret_in_the_state(tmp_path):
    owner = LocalS3Server(data_dir=tmp_path / "s3").start()
    try:
        state = json.loads((tmp_path / "s3" / STATE_FILE).read_text())
        assert state["owner_pid"] == os.getpid() and state["port"] == owner.port and state["host"] == "127.0.0.1"
        assert owner.secret_key not in json.dumps(state) and owner.access_key not in json.dumps(state)
        mode = stat.S_IMODE((tmp_path / "s3" / CREDENTIALS_FILE).stat().st_mode)
        assert mode == 0o600
        shared = attach(tmp_path / "s3")
        assert shared is not None
        assert (shared.endpoint_url, shared.access_key, shared.secret_key) == (
            owner.endpoint_url, owner.access_key, owner.secret_key)
        shared.detach()
        assert owner.proc is not None and owner.proc.poll() is None  # detaching never stops it
    finally:
        owner.stop()
    assert not (tmp_path / "s3" / STATE_FILE).exists() and not (tmp_path / "s3" / CREDENTIALS_FILE).exists()
    assert attach(tmp_path / "s3") is None  # nothing runs: the caller starts its own


def test_credentials_others_may_read_are_refused(tmp_path):
    owner = LocalS3Server(data_dir=tmp_path / "s3").start()
    try:
        os.chmod(tmp_path / "s3" / CREDENTIALS_FILE, 0o644)
        with pytest.raises(StoreError, match="not private to this user"):
            attach(tmp_path / "s3")
    finally:
        owner.stop()


def test_the_owner_waits_for_an_attached_reader_before_it_ends_weed(tmp_path):
    owner = LocalS3Server(data_dir=tmp_path / "s3").start()
    weed = owner.pid
    shared = attach(tmp_path / "s3")
    assert shared is not None
    stopper = threading.Thread(target=owner.stop)
    stopper.start()
    time.sleep(1.0)
    assert stopper.is_alive() and weed is not None and alive(weed)  # still serving the reader
    state = json.loads((tmp_path / "s3" / STATE_FILE).read_text())
    assert state["stopping"] is True  # a newcomer is never handed a server that is ending
    with pytest.raises(StoreError, match="did not publish"):
        attach(tmp_path / "s3", timeout_s=0.5)
    shared.detach()
    stopper.join(timeout=20)
    assert not stopper.is_alive()


def test_runs_and_store_ls_share_a_running_local_s3_run_s_server(tmp_path, capsys, monkeypatch):
    from vismem.pipelines.cli import main

    runs = tmp_path / "runs"
    script = tmp_path / "owner.py"
    # Another process holds the store, as a running `vismem run` does, and has written a manifest.
    script.write_text(textwrap.dedent(f"""
        import json, sys, time
        from vismem.core.s3server import LocalS3Server
        from vismem.core.store import Store
        s = LocalS3Server(data_dir={str(runs / '.s3')!r}).start()
        st = Store.open("s3://vismem", endpoint_url=s.endpoint_url, access_key=s.access_key, secret_key=s.secret_key)
        st.put_json("runs/alpha-0123456789/manifest.json", {{"run_id": "alpha-0123456789", "stages": {{}}}})
        print(s.pid, flush=True)
        sys.stdin.read()
        s.stop()
    """))
    owner = subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        weed = int(owner.stdout.readline())
        monkeypatch.chdir(tmp_path)
        over = ["--set", f"runs_dir={runs}"]
        assert main(["runs", *over, "--json"]) == 0
        assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["alpha-0123456789"]
        assert main(["store", "ls", *over]) == 0
        assert "runs/alpha-0123456789/manifest.json" in capsys.readouterr().out
        assert main(["store", "cat", "runs/alpha-0123456789/manifest.json", *over]) == 0
        assert "alpha-0123456789" in capsys.readouterr().out
        assert main(["store", "verify", *over]) == 0
        assert "0 cached units checked, 0 damaged" in capsys.readouterr().out
        assert alive(weed) and owner.poll() is None  # the read-only commands left the run's server up
    finally:
        owner.communicate("", timeout=60)
    assert owner.returncode == 0


def test_a_run_waits_for_a_read_only_command_s_own_server_and_is_refused_by_a_run_s(tmp_path, monkeypatch):
    import vismem.core.s3server as s3server

    # One read-only command's server for both of its cases (a weed start and stop less).
    reader = LocalS3Server(data_dir=tmp_path / "s3", read_only=True).start()
    try:
        assert (tmp_path / "s3" / "owner.lock").read_text().split() == [str(os.getpid()), "read-only"]
        # A read-only command that outlasts the run's wait for it: the run is refused, naming it.
        monkeypatch.setattr(s3server, "READER_WAIT_S", 0.5)
        with pytest.raises(StoreError, match=rf"a read-only vismem command \(pid {os.getpid()}\) is using"):
            LocalS3Server(data_dir=tmp_path / "s3").start()
        assert (tmp_path / "s3" / "owner.lock").read_text().split() == [str(os.getpid()), "read-only"]
    except BaseException:
        reader.stop()
        raise
    monkeypatch.undo()  # the run's own wait again (60 s)
    threading.Timer(1.0, reader.stop).start()  # the read-only command ends a moment later
    t0 = time.monotonic()
    run = LocalS3Server(data_dir=tmp_path / "s3").start()  # waits instead of being refused
    try:
        assert time.monotonic() - t0 >= 0.9 and run.proc is not None and run.proc.poll() is None
        assert (tmp_path / "s3" / "owner.lock").read_text().split() == [str(os.getpid())]
        with pytest.raises(StoreError, match=r"another vismem run \(pid \d+\) is using"):
            LocalS3Server(data_dir=tmp_path / "s3").start()  # a run's server: refused at once
    finally:
        run.stop()
