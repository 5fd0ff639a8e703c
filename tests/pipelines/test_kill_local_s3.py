"""SIGKILL of a run on the default ``local-s3://`` store: no orphan (weed, Ray, agents), and the
rerun completes with results identical to a clean run's (timing fields aside)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time

import pytest
import yaml

from vismem.core.lifeline import alive, pids_with_env
from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import open_store, run

ENCODE = {"chains": 1, "J": 3, "env": "http", "workers": 1}


def _marked(mark: str) -> list[int]:
    return pids_with_env("VISMEM_TEST_MARK", mark, exclude={os.getpid()})


def _wait_no_marked(mark: str, timeout_s: float = 75.0) -> list[int]:
    # The lifelines' own budget: weed's gets 10 s between SIGTERM and SIGKILL, the Ray sweep keeps
    # ending marked processes until two scans find none, for up to 30 s plus a 5 s grace (agents
    # ignore SIGTERM; a raylet may be starting its agents while it is ended); on a loaded 2-core
    # machine the whole took past 30 s once.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [p for p in _marked(mark) if alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return left


def _cmdlines(pids: list[int]) -> dict[int, str]:
    out = {}
    for pid in pids:
        try:
            out[pid] = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            out[pid] = "?"
    return out


def _done_markers(mark: str, slug: str | None) -> int:
    """Done markers the marked run's weed server holds (read with the credentials weed was given),
    of one back-end's cache (``slug``) or of any (None)."""
    import boto3

    for pid in _marked(mark):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            environ = dict(kv.split("=", 1) for kv in open(f"/proc/{pid}/environ", "rb").read().decode().split("\0")
                           if "=" in kv)
        except OSError:
            continue
        if not argv[0].endswith(b"weed"):
            continue
        port = next(a.split(b"=", 1)[1].decode() for a in argv if a.startswith(b"-s3.port="))
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                          aws_access_key_id=environ["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=environ["AWS_SECRET_ACCESS_KEY"])
        try:
            keys = s3.list_objects_v2(Bucket="vismem", Prefix=f"trajectories/{slug}/" if slug else "trajectories/").get("Contents", [])
        except Exception:  # noqa: BLE001 - not up yet
            return 0
        return sum(1 for k in keys if k["Key"].endswith(".done.json"))
    return 0


def _weed_pid(mark: str) -> int | None:
    for pid in _marked(mark):
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0].endswith(b"weed"):
                return pid
        except OSError:
            continue
    return None


@pytest.mark.slow  # two whole `vismem run` processes and a reference run (bench/suite.py SLOW_TIER)
def test_sigkill_mid_run_on_local_s3_then_rerun_is_identical_and_leaves_no_orphan(tmp_path, ray_local):
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    # Reference: a clean run of the same sessions (same backend and protocol: same cache slug).
    ref_cfg = load_config(overrides={"stages": ["encode"], "runs_dir": str(tmp_path / "ref-runs"),
                                     "store": {"uri": f"file://{tmp_path}/ref"}, "encode": ENCODE})
    ref = run(ref_cfg, progress=False)["encode"]
    assert ref["status"] == "done" and ref["ran"] == 3

    # The killed run: slow steps (sleep_s is transport, not part of the slug) so the kill lands mid-run.
    data = {"name": "killtest", "stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
            "encode": {**ENCODE, "backends": [{"name": "scripted-shopper", "args": {"sleep_s": 0.1}}]}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    cfg = load_config(tmp_path / "cfg.yaml")
    assert cfg.store.uri == "local-s3://vismem"
    mark = secrets.token_hex(6)
    env = {**os.environ, "VISMEM_TEST_MARK": mark}
    cmd = [sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress", "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and _done_markers(mark, ref["backends"][0]) < 1:
        assert proc.poll() is None, "the run ended before the kill"
        time.sleep(0.3)
    assert proc.poll() is None and len(_marked(mark)) >= 3  # weed, Ray, workers: all alive
    proc.send_signal(signal.SIGKILL)  # the driver only: its children are orphaned
    proc.wait(timeout=30)
    left = _wait_no_marked(mark)
    assert left == [], f"processes outlived the killed run: {_cmdlines(left)}"

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout[done.stdout.index("{"):])["encode"]
    assert out["ran"] >= 1 and out["cached"] >= 1, f"the kill landed outside the run: {out}"
    assert out["ran"] + out["cached"] == 3 and out["failed"] == []
    assert _wait_no_marked(mark) == []

    ref_store = Store.open(f"file://{tmp_path}/ref")
    (slug,) = out["backends"]
    assert slug == ref["backends"][0]
    with open_store(cfg) as (store, _env):
        cache, ref_cache = TrajectoryCache(store, slug), TrajectoryCache(ref_store, slug)
        assert cache.done_keys() == ref_cache.done_keys() and len(cache.done_keys()) == 3
        for seed, j in sorted(cache.done_keys()):  # trajectories byte for byte
            assert store.get_bytes(cache.steps_key(seed, j)) == ref_store.get_bytes(ref_cache.steps_key(seed, j))
        table = store.read_table(out["results"]).drop("wall_s", "schema_version")
    assert table.equals(ref_store.read_table(ref["results"]).drop("wall_s", "schema_version"))


def _runs_json(cfg_path, capsys) -> list[dict]:
    """`vismem runs --json` as the next command, in this process: what it writes is the command's
    doing (the pending state), not its process's; a Python start and an import of vismem saved."""
    from vismem.pipelines.cli import main

    capsys.readouterr()
    rc = main(["runs", "--config", str(cfg_path), "--json", "--no-headline"])
    out = capsys.readouterr()
    assert rc == 0, out.err[-2000:]
    return json.loads(out.out)


def test_the_store_server_dying_mid_stage_is_one_line_and_the_manifest_ends_failed(tmp_path, capsys):
    """weed killed while encode runs: one line naming the dead server and the stage, exit 3 (a store
    error), no traceback nor a watchdog's "Fatal Python error"; the manifest, which the dead store
    cannot take, is kept locally and written by the next command (`vismem runs`), as failed."""
    data = {"name": "weeddies", "stages": ["encode", "replay"], "runs_dir": str(tmp_path / "runs"),
            "encode": {**ENCODE, "backends": [{"name": "scripted-shopper", "args": {"sleep_s": 0.1}}]},
            "memory": {"architectures": ["textonly"], "components": {}}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    cfg = load_config(tmp_path / "cfg.yaml")
    mark = secrets.token_hex(6)
    env = {**os.environ, "VISMEM_TEST_MARK": mark}
    cmd = [sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and _done_markers(mark, None) < 1:  # mid-stage: one session stored
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.3)
        weed = _weed_pid(mark)
        assert proc.poll() is None and weed is not None, "the run ended before weed was killed"
        os.kill(weed, signal.SIGKILL)
        _out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 3, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "Fatal Python error" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("vismem:")]
    assert len(lines) == 1 and lines[0] == err.strip().splitlines()[-1], err[-3000:]
    assert lines[0] == (f"vismem: error: the store's S3 server (weed, pid {weed}) died during stage encode; "
                        f"its log: {tmp_path / 'runs' / '.s3' / 'weed.log'}"), lines[0]
    pending = tmp_path / "runs" / cfg.run_id / "pending-state.json"
    assert pending.exists()
    assert _wait_no_marked(mark) == []  # nothing of the run outlived it

    (row,) = _runs_json(tmp_path / "cfg.yaml", capsys)
    assert (row["run_id"], row["status"], row["stages"]) == (cfg.run_id, "failed", {"encode": "failed"})
    assert not pending.exists()
    with open_store(cfg, create=False) as (store, _env):
        entry = store.get_json(f"runs/{cfg.run_id}/manifest.json")["stages"]["encode"]
    assert entry["status"] == "failed" and entry["error"] == lines[0][len("vismem: error: "):]


# The real CLI in a process whose ray.init kills the run's weed (SIGKILL) once the driver's core
# worker is up: the store dies before any stage begins.
_KILL_WEED_IN_INIT = """
import os, signal, sys, time
import ray._private.worker as w
from vismem.core.lifeline import alive, pids_with_env
connect = w.connect
def connect_then_kill_weed(*args, **kwargs):
    connect(*args, **kwargs)
    for pid in pids_with_env("VISMEM_TEST_MARK", os.environ["VISMEM_TEST_MARK"], exclude={os.getpid()}):
        try:
            argv0 = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[0]
        except OSError:
            continue
        if argv0.endswith(b"weed"):
            os.kill(pid, signal.SIGKILL)
            open(sys.argv[1], "w").write(str(pid))
            while alive(pid):
                time.sleep(0.05)
w.connect = connect_then_kill_weed
from vismem.pipelines.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_the_store_server_dying_as_ray_starts_ends_the_run_failed_with_its_cause(tmp_path, capsys):
    """weed killed while ``ray.init`` runs (before any stage): one line naming when it died, exit 3,
    and the run's record -- written before Ray starts, its failure kept locally while the store is
    gone -- is listed by the next command as failed with that cause (it was "no manifest")."""
    data = {"name": "weedinit", "stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
            "encode": {**ENCODE, "J": 1}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    cfg = load_config(tmp_path / "cfg.yaml")
    mark = secrets.token_hex(6)
    env = {**os.environ, "VISMEM_TEST_MARK": mark}
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-c", _KILL_WEED_IN_INIT, str(killed), "run", "--config", str(tmp_path / "cfg.yaml"),
           "--no-progress"]
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert killed.exists(), ("weed was never killed", r.stderr[-3000:])
    weed = int(killed.read_text())
    assert r.returncode == 3, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr and "Fatal Python error" not in r.stderr, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("vismem:")]
    assert lines == [r.stderr.strip().splitlines()[-1]], r.stderr[-3000:]
    assert lines[0] == (f"vismem: error: the store's S3 server (weed, pid {weed}) died while Ray started; "
                        f"its log: {tmp_path / 'runs' / '.s3' / 'weed.log'}"), lines[0]
    pending = tmp_path / "runs" / cfg.run_id / "pending-state.json"
    assert pending.exists()
    assert _wait_no_marked(mark) == []

    (row,) = _runs_json(tmp_path / "cfg.yaml", capsys)
    assert (row["run_id"], row["status"], row["stages"]) == (cfg.run_id, "failed", {})
    assert row["problem"] == lines[0][len("vismem: error: "):]
    assert not pending.exists()
    with open_store(cfg, create=False) as (store, _env):
        failure = store.get_json(f"runs/{cfg.run_id}/manifest.json")["failure"]
    assert failure["error"] == lines[0][len("vismem: error: "):]
