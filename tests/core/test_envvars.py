"""Environment variables are bounded inputs: one line naming the variable and its bounds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vismem.core.envvars import env_http_url, env_int
from vismem.core.errors import ConfigError


@pytest.mark.parametrize("raw, message", [
    ("abc", "VISMEM_T='abc' is not an integer (allowed: 0 to 32)"),
    ("33", "VISMEM_T=33 is out of bounds (allowed: 0 to 32)"),
    ("-1", "VISMEM_T=-1 is out of bounds"),
    ("9" * 45, "is not an integer"),
])
def test_env_int_refuses_what_is_not_a_bounded_integer(monkeypatch, raw, message):
    monkeypatch.setenv("VISMEM_T", raw)
    with pytest.raises(ConfigError) as err:
        env_int("VISMEM_T", 2, lo=0, hi=32)
    assert message in str(err.value) and err.value.exit_code == 2


def test_env_int_default_and_value(monkeypatch):
    monkeypatch.delenv("VISMEM_T", raising=False)
    assert env_int("VISMEM_T", 2, lo=0, hi=32) == 2
    monkeypatch.setenv("VISMEM_T", " 7 ")
    assert env_int("VISMEM_T", 2, lo=0, hi=32) == 7


@pytest.mark.parametrize("raw", ["file:///etc", "ftp://x/y", "not a url", "http://"])
def test_a_mirror_must_be_an_http_url(monkeypatch, raw):
    monkeypatch.setenv("VISMEM_M", raw)
    with pytest.raises(ConfigError, match="VISMEM_M must be an http"):
        env_http_url("VISMEM_M")
    monkeypatch.setenv("VISMEM_M", "https://mirror.example/data/")
    assert env_http_url("VISMEM_M") == "https://mirror.example/data"


def test_data_fetch_with_a_file_mirror_is_one_line_exit_2(tmp_path):
    env = {"VISMEM_DATA_MIRROR": "file:///etc", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "vismem", "data", "fetch", "locomo", "--data-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "VISMEM_DATA_MIRROR must be an http" in lines[0], r.stderr
    assert not any(tmp_path.glob("locomo*"))


def test_bound_overrides_are_bounded_checked_at_once_and_forwarded(monkeypatch):
    """Issue 38: the overridable bounds (core/bounds.py) read like any variable, fail together
    before any work, and reach a submitted job."""
    from vismem.core import bounds
    from vismem.pipelines.commands.jobs import forwarded_env

    for b in bounds.ALL:
        monkeypatch.delenv(b.var, raising=False)
    assert bounds.TABLE_BYTES.value() == 4 << 30 and not set(forwarded_env()) & {b.var for b in bounds.ALL}
    monkeypatch.setenv("VISMEM_MAX_TABLE_BYTES", "12345")
    assert bounds.TABLE_BYTES.value() == 12345 and bounds.TABLE_BYTES.past(12345) is None
    assert forwarded_env()["VISMEM_MAX_TABLE_BYTES"] == "12345"  # vismem submit hands it to the job
    monkeypatch.setenv("VISMEM_MAX_PACK_BYTES", "0")
    with pytest.raises(ConfigError, match=r"VISMEM_MAX_PACK_BYTES=0 is out of bounds \(allowed: 1 to "):
        bounds.check_all()


def test_a_run_with_a_bad_bound_override_fails_before_anything_is_written(tmp_path, monkeypatch):
    from vismem.pipelines.config import load_config
    from vismem.pipelines.runner import run

    monkeypatch.setenv("VISMEM_DATA_DIR_MAX_OBJECTS", "many")
    cfg = load_config(None, overrides={"runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/s"}})
    with pytest.raises(ConfigError, match="VISMEM_DATA_DIR_MAX_OBJECTS='many' is not an integer"):
        run(cfg, progress=False)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "s").exists()
