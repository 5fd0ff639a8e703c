"""A run's final state outlives a store that cannot take it: kept in the run's local folder and
written by the next command against that store; and a later stage that lacks what a failed one
should have made names that failure, not a missing stage."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from vismem.core.errors import ConfigError, NoSpace, VismemError
from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.manifest import PENDING_STATE, Manifest, flush_pending


def _failing_store(store: Store, monkeypatch) -> None:
    def full(key, obj):
        raise NoSpace(f"no space left on device writing {store.url(key)}")

    monkeypatch.setattr(store, "put_json", full)


def test_a_failed_save_keeps_the_state_locally_and_the_next_command_writes_it(tmp_path, file_store, monkeypatch):
    pending = tmp_path / "runs" / "r1" / PENDING_STATE
    m = Manifest(file_store, "r1", pending=pending, store_name="local-s3://vismem")
    m.data = {"run_id": "r1", "stages": {}}
    m.stage("encode", "running")
    assert not pending.exists()  # the store took it
    _failing_store(file_store, monkeypatch)
    with pytest.raises(NoSpace):
        m.stage("encode", "failed", error="no space left on device writing x")
    kept = json.loads(pending.read_text())
    assert kept["store"] == "local-s3://vismem" and kept["manifest"]["stages"]["encode"]["status"] == "failed"
    assert file_store.get_json("runs/r1/manifest.json")["stages"]["encode"]["status"] == "running"

    monkeypatch.undo()
    assert flush_pending(file_store, "file:///elsewhere", tmp_path / "runs") == []  # another store's: left
    assert pending.exists()
    assert flush_pending(file_store, "local-s3://vismem", tmp_path / "runs") == ["r1"]
    entry = file_store.get_json("runs/r1/manifest.json")["stages"]["encode"]
    assert entry["status"] == "failed" and entry["error"] == "no space left on device writing x"
    assert not pending.exists()


def test_a_kept_state_never_undoes_a_later_run_of_the_same_id(tmp_path, file_store):
    runs = tmp_path / "runs"
    (runs / "r2").mkdir(parents=True)
    old = {"status": "failed", "started": 100.0, "error": "server died"}
    (runs / "r2" / PENDING_STATE).write_text(json.dumps(
        {"store": "s", "run_id": "r2", "manifest": {"run_id": "r2", "stages": {"encode": old, "replay": old}}}))
    newer = {"status": "done", "started": 200.0}
    file_store.put_json("runs/r2/manifest.json", {"run_id": "r2", "stages": {"encode": newer}})
    assert flush_pending(file_store, "s", runs) == ["r2"]
    stages = file_store.get_json("runs/r2/manifest.json")["stages"]
    assert stages == {"encode": newer, "replay": old}


def test_a_manifest_the_store_never_got_is_written_whole(tmp_path, file_store):
    runs = tmp_path / "runs"
    (runs / "r3").mkdir(parents=True)
    kept = {"run_id": "r3", "stages": {"encode": {"status": "failed", "started": 1.0}}}
    (runs / "r3" / PENDING_STATE).write_text(json.dumps({"store": "s", "run_id": "r3", "manifest": kept}))
    (runs / "junk").mkdir()
    (runs / "junk" / PENDING_STATE).write_text("{torn")  # unreadable: skipped, not fatal
    assert flush_pending(file_store, "s", runs) == ["r3"]
    assert file_store.get_json("runs/r3/manifest.json") == kept


def test_replay_after_a_partial_encode_names_it_instead_of_asking_for_the_stage(tmp_path, file_store):
    from vismem.pipelines.dmv.chains import load_run_chains

    cfg = load_config(overrides={"stages": ["encode", "replay"], "runs_dir": str(tmp_path / "runs"),
                                 "store": {"uri": file_store.uri}, "encode": {"chains": 1, "J": 2}})
    partial = {"stages": {"encode": {"status": "partial", "summary": {"failure": "2 of 2 sessions run failed"}}}}
    ctx = SimpleNamespace(config=cfg, store=file_store, manifest=SimpleNamespace(data=partial))
    with pytest.raises(VismemError) as got:
        load_run_chains(ctx)
    assert not isinstance(got.value, ConfigError) and got.value.exit_code == 1
    assert "this run's encode stage ended partial without them (2 of 2 sessions run failed)" in str(got.value)
    ctx.manifest = SimpleNamespace(data={"stages": {}})  # no encode in this run: run it first
    with pytest.raises(ConfigError, match="run the encode stage first"):
        load_run_chains(ctx)


def test_a_disk_that_fills_as_a_stage_ends_still_ends_the_run_failed(tmp_path, ray_local, monkeypatch):
    """The stage's work is done but its "done" cannot be recorded: one NoSpace line, and the
    stage ends failed (kept locally, then written by the next command), never left 'running'."""
    import errno
    import os

    import vismem.pipelines.stage as stages
    from vismem.pipelines.runner import open_store, run

    root = str(tmp_path / "st")
    write = os.write

    def full_under_store(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(root + "/"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(fd, data)

    def stage(ctx):
        ctx.store.put_bytes(f"{ctx.run_prefix}/out.txt", b"ok")
        monkeypatch.setattr(os, "write", full_under_store)  # the disk fills as the stage ends
        return {"status": "done"}

    monkeypatch.setattr(stages, "get_stage", lambda name: stages.Stage(name, None, stage))
    cfg = load_config(overrides={"stages": ["report"], "store": {"uri": f"file://{root}"},
                                 "runs_dir": str(tmp_path / "runs")})
    with pytest.raises(NoSpace, match=rf"^no space left on device writing file://{root}/runs/{cfg.run_id}/"
                                      r"manifest\.json during stage report$"):
        run(cfg, progress=False)
    monkeypatch.setattr(os, "write", write)
    pending = tmp_path / "runs" / cfg.run_id / PENDING_STATE
    assert json.loads(pending.read_text())["manifest"]["stages"]["report"]["status"] == "failed"
    with open_store(cfg, create=False) as (store, _env):
        entry = store.get_json(f"runs/{cfg.run_id}/manifest.json")["stages"]["report"]
    assert entry["status"] == "failed" and entry["error"].startswith("no space left on device writing")
    assert not pending.exists()


def test_a_state_no_disk_can_keep_leaves_no_torn_file(tmp_path, file_store, monkeypatch):
    """The store and the local disk both full: the save fails in one NoSpace, and the half-written
    pending file is removed rather than left (empty) beside the run's log."""
    import errno
    from pathlib import Path

    pending = tmp_path / "runs" / "r9" / PENDING_STATE
    m = Manifest(file_store, "r9", pending=pending, store_name="local-s3://vismem")
    m.data = {"run_id": "r9", "stages": {}}
    _failing_store(file_store, monkeypatch)
    real = Path.write_text

    def full_disk(self, text, *a, **k):
        real(self, "", *a, **k)  # the file is created, its bytes never fit
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(NoSpace):
        m.stage("encode", "failed", error="no space left on device writing x")
    monkeypatch.undo()
    assert sorted(p.name for p in pending.parent.iterdir()) == []


def test_a_run_sets_space_aside_that_takes_its_state_when_the_disk_fills(tmp_path, file_store, monkeypatch):
    """The default store keeps its data on the runs dir's disk: when it is full, so is the local
    disk. The space a run set aside when it began is freed to keep the failed state, and the
    reserve is gone once the run is released."""
    import errno
    from pathlib import Path

    from vismem.pipelines.manifest import RESERVE, RESERVE_BYTES

    cfg = load_config(overrides={"stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
                                 "store": {"uri": file_store.uri}})
    run_dir = tmp_path / "runs" / cfg.run_id
    m = Manifest(file_store, cfg.run_id, pending=run_dir / PENDING_STATE, store_name=file_store.uri)
    m.begin(cfg, seeds={"root": 0})
    reserve = run_dir / RESERVE
    assert reserve.stat().st_size == RESERVE_BYTES and reserve.stat().st_blocks * 512 >= RESERVE_BYTES  # not sparse
    _failing_store(file_store, monkeypatch)
    real = Path.write_text

    def full_until_freed(self, text, *a, **k):
        if reserve.exists():  # the disk is full; only the reserve's blocks can be had
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, text, *a, **k)

    monkeypatch.setattr(Path, "write_text", full_until_freed)
    with pytest.raises(NoSpace):
        m.stage("encode", "failed", error="no space left on device writing x")
    monkeypatch.undo()
    kept = json.loads((run_dir / PENDING_STATE).read_text())
    assert kept["manifest"]["stages"]["encode"]["status"] == "failed" and not reserve.exists()
    m.release()  # nothing left to release: no error
    m2 = Manifest(file_store, cfg.run_id, pending=run_dir / PENDING_STATE, store_name=file_store.uri)
    m2.begin(cfg, seeds={"root": 0})
    assert reserve.exists()
    m2.release()
    assert not reserve.exists()


def test_a_run_failing_outside_any_stage_is_recorded_failed_with_its_cause(tmp_path, ray_local, monkeypatch):
    """A failure after the stages (here the step run once they are done) is the run's own: the
    manifest ends with a run-level failure, and `vismem runs` lists the run failed with that cause."""
    import vismem.pipelines.stage as stages
    from vismem.pipelines.commands.runs import list_runs
    from vismem.pipelines.runner import run

    monkeypatch.setattr(stages, "get_stage", lambda name: stages.Stage(name, None, lambda ctx: {"status": "done"}))
    cfg = load_config(overrides={"stages": ["report"], "store": {"uri": f"file://{tmp_path}/st"},
                                 "runs_dir": str(tmp_path / "runs")})

    def after(store, results):
        raise VismemError("the report could not be built")

    with pytest.raises(VismemError, match="^the report could not be built$"):
        run(cfg, progress=False, after=after)
    store = Store.open(f"file://{tmp_path}/st")
    manifest = store.get_json(f"runs/{cfg.run_id}/manifest.json")
    assert manifest["stages"]["report"]["status"] == "done"
    assert manifest["failure"]["error"] == "the report could not be built"
    (row,) = list_runs(store)
    assert (row["status"], row["problem"]) == ("failed", "the report could not be built")

    run(cfg, progress=False)  # a re-run that succeeds clears the earlier attempt's failure
    assert "failure" not in store.get_json(f"runs/{cfg.run_id}/manifest.json")
    assert list_runs(store)[0]["status"] == "done"


def test_a_kept_run_failure_is_written_unless_a_later_attempt_reached_the_store(tmp_path, file_store):
    runs = tmp_path / "runs"
    (runs / "r4").mkdir(parents=True)
    failure = {"error": "the store's S3 server died while Ray started", "at": 5.0}
    kept = {"run_id": "r4", "started_at": "2026-01-01T00:00:00Z", "stages": {}, "failure": failure}
    (runs / "r4" / PENDING_STATE).write_text(json.dumps({"store": "s", "run_id": "r4", "manifest": kept}))
    begun = {k: v for k, v in kept.items() if k != "failure"}  # the attempt as the store saw it begin
    file_store.put_json("runs/r4/manifest.json", begun)
    assert flush_pending(file_store, "s", runs) == ["r4"]
    assert file_store.get_json("runs/r4/manifest.json")["failure"] == failure

    (runs / "r4" / PENDING_STATE).write_text(json.dumps({"store": "s", "run_id": "r4", "manifest": kept}))
    later = {"run_id": "r4", "started_at": "2026-01-02T00:00:00Z", "stages": {}}
    file_store.put_json("runs/r4/manifest.json", later)
    assert flush_pending(file_store, "s", runs) == ["r4"]
    assert file_store.get_json("runs/r4/manifest.json") == later
