"""One run of a run id per store at a time: a second one stops with one line before writing."""

from __future__ import annotations

import time

import pytest

from vismem.pipelines.lease import RunBusy, RunLease


def test_a_held_lease_stops_a_second_run_and_is_given_back(file_store):
    with RunLease(file_store, "r-1", heartbeat_s=0.05) as first:
        assert file_store.get_json("runs/r-1/lease.json")["owner"] == first.me["owner"]
        beat = file_store.get_json("runs/r-1/lease.json")["heartbeat"]
        time.sleep(0.3)
        assert file_store.get_json("runs/r-1/lease.json")["heartbeat"] > beat  # kept fresh
        with pytest.raises(RunBusy, match=r"run r-1 is already running in this store \(pid \d+ on "):
            with RunLease(file_store, "r-1"):
                pass
        with RunLease(file_store, "r-2"):  # another run id is another run
            pass
    assert not file_store.exists("runs/r-1/lease.json")
    with RunLease(file_store, "r-1"):  # free again
        pass


def test_an_abandoned_lease_is_taken_over(file_store):
    import socket
    import subprocess
    import sys

    # another host, silent for ten minutes
    file_store.put_json("runs/r-3/lease.json", {"owner": "dead", "pid": 1, "host": "h", "heartbeat": time.time() - 600})
    with RunLease(file_store, "r-3") as lease:
        assert file_store.get_json("runs/r-3/lease.json")["owner"] == lease.me["owner"]
    # this host, a process that is gone (a SIGKILLed run): taken over at once, heartbeat fresh or not
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    file_store.put_json("runs/r-4/lease.json", {"owner": "killed", "pid": int(gone.stdout), "host": socket.gethostname(),
                                                "heartbeat": time.time()})
    with RunLease(file_store, "r-4"):
        pass


def test_a_second_run_of_one_config_is_refused_before_any_work(tmp_path):
    import subprocess
    import sys

    from vismem.core.store import Store
    from vismem.pipelines.config import load_config

    store = Store.open(f"file://{tmp_path}/st")
    cfg = load_config(overrides={"stages": ["report"], "store": {"uri": store.uri}, "runs_dir": str(tmp_path / "runs")})
    with RunLease(store, cfg.run_id):
        out = subprocess.run([sys.executable, "-m", "vismem", "run", "report", "--store", store.uri, "--set",
                              f"runs_dir={tmp_path}/runs", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr
    assert f"run {cfg.run_id} is already running in this store" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not store.exists(f"runs/{cfg.run_id}/manifest.json")  # nothing written, not even a log
    assert not store.exists(f"runs/{cfg.run_id}/run.log")


def test_two_runs_that_find_the_lease_free_at_once_never_both_go_on(file_store):
    # Both read "free"; the first writes and would read its own lease straight back while the
    # second is still about to write. After the settle wait the first sees the second's lease.
    import threading

    a_wrote = threading.Event()

    class Racing:
        """The store as one run sees it: the second run writes only after the first has."""

        def __init__(self, first: bool) -> None:
            self.first = first

        def __getattr__(self, name):
            return getattr(file_store, name)

        def put_json(self, key, obj):
            if not self.first and not a_wrote.is_set():
                a_wrote.wait(5)
                time.sleep(0.05)
            file_store.put_json(key, obj)
            if self.first:
                a_wrote.set()

    got: dict[str, str] = {}
    b_read = threading.Event()

    def enter(name: str, first: bool) -> None:
        lease = RunLease(Racing(first), "r-5", heartbeat_s=60, settle_s=0.5)
        if first:
            b_read.wait(5)  # the second run has found the lease free before the first writes
        else:
            real = lease._current
            lease._current = lambda: (real(), b_read.set())[0] if not b_read.is_set() else real()
        try:
            with lease:
                got[name] = "held"
                time.sleep(1.0)
        except RunBusy as err:
            got[name] = str(err)

    threads = [threading.Thread(target=enter, args=(n, n == "a")) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(got) == ["a", "b"] and list(got.values()).count("held") == 1, got
    assert "started twice at once" in got["a"]
