"""The runner end to end on real parts: private weed S3 server + local Ray, manifest, resumption."""

from __future__ import annotations

import pytest

from vismem.pipelines.config import load_config
from vismem.pipelines.runner import open_store, run


def _probe_stage(ctx):
    """A stand-in stage (the real ones have their own tests): proves what a stage receives."""
    import ray

    assert ray.is_initialized()
    key = f"{ctx.run_prefix}/probe.txt"
    fresh = not ctx.store.exists(key)
    if fresh:
        ctx.store.put_bytes(key, b"ok")
    return {"fresh": fresh}


def test_local_s3_run_writes_manifest_and_resumes(tmp_path, ray_local, monkeypatch):
    import vismem.pipelines.stage as stages

    from vismem.pipelines.stage import Stage

    monkeypatch.setattr(stages, "get_stage", lambda name: Stage(name, None, _probe_stage))
    cfg = load_config(overrides={"stages": ["report"], "runs_dir": str(tmp_path / "runs"), "seed": 11})
    first = run(cfg, progress=False)
    assert first["_run_id"] == cfg.run_id and first["report"] == {"fresh": True}
    assert (tmp_path / "runs" / cfg.run_id / "run.log").is_file()
    assert (tmp_path / "runs" / ".s3").is_dir()  # the server's data lives under the runs dir
    with open_store(cfg) as (store, env):  # a second start of the server finds the same data
        assert env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
        man = store.get_json(f"runs/{cfg.run_id}/manifest.json")
    assert man["config"]["seed"] == 11
    assert man["stages"]["report"]["status"] == "done"
    assert man["git_revision"] and "ray" in man["packages"]
    second = run(cfg, progress=False)
    assert second["_run_id"] == first["_run_id"] and second["report"] == {"fresh": False}


def test_unknown_stage_fails_before_anything_starts(tmp_path):
    from vismem.core.errors import ConfigError

    cfg = load_config(overrides={"runs_dir": str(tmp_path / "runs")})
    with pytest.raises(ConfigError):
        run(cfg, stages=("nope",))
    assert not (tmp_path / "runs").exists()


def test_partial_stage_is_recorded_and_later_stages_still_run(tmp_path, ray_local, monkeypatch):
    import vismem.pipelines.stage as stages

    calls = []

    def stage(ctx):
        calls.append(len(calls))
        return {"status": "partial", "failed": ["k1"]} if len(calls) == 1 else {"status": "done"}

    monkeypatch.setattr(stages, "get_stage", lambda name: stages.Stage(name, None, stage))
    cfg = load_config(overrides={"stages": ["encode", "report"], "store": {"uri": f"file://{tmp_path}/st"},
                                 "runs_dir": str(tmp_path / "runs")})
    res = run(cfg, progress=False)
    assert res["_partial"] == ["encode"] and calls == [0, 1]
    from vismem.core.store import Store

    man = Store.open(f"file://{tmp_path}/st").get_json(f"runs/{cfg.run_id}/manifest.json")
    assert man["stages"]["encode"]["status"] == "partial" and man["stages"]["report"]["status"] == "done"
