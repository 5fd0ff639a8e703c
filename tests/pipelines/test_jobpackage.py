"""What a submitted job carries (no cluster needed): the package folder, an s3:// data dir, the
forwarded variables, the git revision, and a driver whose working dir vanished."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vismem.core.errors import ConfigError
from vismem.pipelines.config import load_config

REPO = Path(__file__).resolve().parents[2]


def test_package_ships_the_data_the_stages_read(tmp_path, data_dir):
    from vismem.pipelines import jobpackage

    cfg = load_config(None, overrides={"stages": ["catalog", "memshot"]})
    text, shipped = jobpackage.build(cfg, REPO, tmp_path)
    job = yaml.safe_load(text)
    assert job["data_dir"] == "_data"
    assert shipped == sorted(["locomo/locomo10.json", "dmv-bench/seed_v2.json", "dmv-bench/cue_registry.json"])
    for rel in shipped:
        assert (tmp_path / "_data" / rel).read_bytes() == (data_dir / rel).read_bytes()
    # The code is linked, the checkout's history and runs are not.
    assert (tmp_path / "vismem" / "pipelines" / "cli.py").is_file() and not (tmp_path / ".git").exists()
    assert (tmp_path / "vismem" / "__init__.py").is_file() and not (tmp_path / "pipelines").exists()
    assert not (tmp_path / "runs").exists() and not (tmp_path / ".venv").exists()
    # The job's config names the same run as the client's.
    job_cfg = load_config(None, overrides={k: v for k, v in job.items() if k != "data_dir"})
    assert job_cfg.run_id == cfg.run_id


def test_package_refuses_missing_or_oversized_data(tmp_path, monkeypatch):
    from vismem.pipelines import jobpackage

    cfg = load_config(None, overrides={"stages": ["catalog"], "data_dir": str(tmp_path / "none")})
    with pytest.raises(ConfigError, match="not found"):
        jobpackage.build(cfg, REPO, tmp_path / "pkg1")
    monkeypatch.setattr(jobpackage, "SHIP_LIMIT_MB", 0.5)
    cfg = load_config(None, overrides={"stages": ["catalog"]})
    with pytest.raises(ConfigError, match="data_dir=s3://"):
        jobpackage.build(cfg, REPO, tmp_path / "pkg2")


def test_s3_data_dir_is_copied_once_per_node(s3_store, s3_server, tmp_path, monkeypatch, data_dir):
    from vismem.core import datadir
    from vismem.core.paths import resolve_data_dir

    monkeypatch.setattr(datadir, "_DONE", {})
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VISMEM_DATA_CACHE", str(tmp_path / "cache"))
    uri = s3_store.uri + "/data"
    with pytest.raises(ConfigError, match="holds no objects"):
        resolve_data_dir(uri)
    src = data_dir / "dmv-bench/cue_registry.json"
    s3_store.put_bytes("data/dmv-bench/cue_registry.json", src.read_bytes())
    local = datadir.materialise(uri)
    assert local == datadir.cache_dir(uri) and (local / "dmv-bench/cue_registry.json").read_bytes() == src.read_bytes()
    # A changed object is fetched again (its ETag differs); an unchanged one is left as it is.
    monkeypatch.setattr(datadir, "_DONE", {})
    s3_store.put_bytes("data/dmv-bench/cue_registry.json", b"{}")
    assert (resolve_data_dir(uri) / "dmv-bench/cue_registry.json").read_bytes() == b"{}"
    mtime = (local / "dmv-bench/cue_registry.json").stat().st_mtime_ns
    monkeypatch.setattr(datadir, "_DONE", {})
    datadir.materialise(uri)
    assert (local / "dmv-bench/cue_registry.json").stat().st_mtime_ns == mtime


def test_forwarded_env_names_model_variables(monkeypatch):
    from vismem.pipelines.commands import jobs

    monkeypatch.setenv("VISMEM_GEMINI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GEMINI_API_KEY", "sk-abc-123456")
    monkeypatch.setenv("VISMEM_VLM_URL", "http://old")
    monkeypatch.setenv("UNRELATED_URL", "x")
    env = jobs.forwarded_env(["UNRELATED_URL"])
    assert env["VISMEM_GEMINI_BASE_URL"] == "http://127.0.0.1:9/v1" and env["GEMINI_API_KEY"] == "sk-abc-123456"
    assert "VISMEM_VLM_URL" not in env and env["UNRELATED_URL"] == "x"
    assert jobs._is_secret_var("GEMINI_API_KEY") and not jobs._is_secret_var("VISMEM_GEMINI_BASE_URL")


def test_git_revision_travels_by_variable(monkeypatch):
    from vismem.pipelines.manifest import GIT_REVISION_VAR, git_revision

    monkeypatch.setenv(GIT_REVISION_VAR, "abc123+dirty")
    assert git_revision() == "abc123+dirty"
    monkeypatch.delenv(GIT_REVISION_VAR)
    assert git_revision(REPO) != "abc123+dirty"


def test_driver_whose_cwd_vanished_still_finds_a_local_dir(tmp_path):
    # In a child process: removing our own cwd would disturb the test session.
    code = ("import os, sys; d = sys.argv[1]; os.makedirs(d); os.chdir(d); os.rmdir(d)\n"
            "from core.paths import local_dir; from pipelines.logs import run_log_path\n"
            "from pipelines.config import load_config\n"
            "p = run_log_path(load_config(None)); print(p); assert p.is_absolute()\n"
            "assert str(local_dir('runs')).startswith(__import__('tempfile').gettempdir())")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "gone")], capture_output=True, text=True,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "/vismem/runs/" in r.stdout


def test_package_imports_its_own_code_without_an_install(tmp_path):
    # On the cluster the working dir is on sys.path and nothing maps the root folders into the
    # namespace: the package must hold `vismem.<folder>` itself (the editable install's finder,
    # which would map them to this checkout, is taken out first).
    import subprocess
    import sys

    from vismem.pipelines import jobpackage

    cfg = load_config(None, overrides={"stages": ["catalog"]})
    jobpackage.build(cfg, REPO, tmp_path)
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
            "sys.path.insert(0, sys.argv[1]); import vismem.pipelines.jobpackage as j; print(j.__file__)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "vismem" / "pipelines" / "jobpackage.py")
