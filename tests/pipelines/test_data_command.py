"""``vismem data`` / ``vismem data fetch``: the real pins, files served over loopback (VISMEM_DATA_MIRROR)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.rangeserver import build_mirror, serve
from vismem.pipelines.datafetch import DATASETS

REPO = Path(__file__).resolve().parents[2]


def _vismem(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **(env or {})), timeout=300)


@pytest.fixture
def mirror(tmp_path, data_dir):
    """A mirror folder laid out as ``<dataset>/<file>``, its files read from the suite's data."""
    return build_mirror(data_dir, tmp_path / "mirror")


def test_fetch_verifies_the_pins_prints_the_licence_and_lists(mirror, tmp_path, data_dir):
    data = tmp_path / "data"
    # Half of seed_v2.json already there from an interrupted fetch: it is resumed, not restarted.
    part = data / "dmv-bench" / "seed_v2.json.part"
    part.parent.mkdir(parents=True)
    part.write_bytes((mirror / "dmv-bench" / "seed_v2.json").read_bytes()[:300_000])
    with serve(mirror) as (url, log):
        r = _vismem("data", "fetch", "dmv-bench", "--data-dir", str(data), cwd=tmp_path,
                    env={"VISMEM_DATA_MIRROR": url})
    assert r.returncode == 0, r.stderr
    assert "licence Apache License 2.0" in r.stdout
    assert {"path": "/dmv-bench/seed_v2.json", "range": "bytes=300000-"} in log
    assert (data / "dmv-bench" / "seed_v2.json").read_bytes() == (data_dir / "dmv-bench" / "seed_v2.json").read_bytes()
    listed = json.loads(_vismem("data", "--data-dir", str(data), "--json", cwd=tmp_path).stdout)
    states = {d["name"]: d["state"] for d in listed["datasets"]}
    assert states["dmv-bench"] == "verified" and states["locomo"] == "missing"
    text = _vismem("data", "--data-dir", str(data), cwd=tmp_path).stdout
    assert "locomo              missing  (vismem data fetch locomo)" in text


def test_fetch_of_altered_bytes_fails_in_one_line_and_keeps_nothing(mirror, tmp_path):
    target = mirror / "locomo" / "locomo10.json"
    body = bytearray(target.read_bytes())
    body[100] ^= 1  # same size, different bytes
    target.write_bytes(bytes(body))
    data = tmp_path / "data"
    with serve(mirror) as (url, _log):
        r = _vismem("data", "fetch", "locomo", "--data-dir", str(data), cwd=tmp_path, env={"VISMEM_DATA_MIRROR": url})
    errors = [x for x in r.stderr.splitlines() if x.startswith("vismem: error:")]
    assert r.returncode == 4 and len(errors) == 1 and "sha256" in errors[0] and "nothing was kept" in errors[0]
    assert not list((data / "locomo").glob("locomo10.json*"))


def test_unknown_dataset_is_a_usage_error(tmp_path):
    r = _vismem("data", "fetch", "imagenet", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and "unknown dataset 'imagenet'" in r.stderr and not list(tmp_path.iterdir())


@pytest.mark.parametrize("over, name", [("stages=[memshot]", "locomo"), ("memshot.enabled=false", "dmv-bench")])
def test_offline_a_missing_dataset_stops_the_run_before_any_work_naming_how(tmp_path, over, name):
    # Offline: the mirror's port is closed, so the run's own fetch of what it lacks cannot succeed.
    r = _vismem("run", "--set", f"data_dir={tmp_path / 'empty'}", "--set", over,
                "--set", f"runs_dir={tmp_path / 'runs'}", "--store", f"file://{tmp_path}/st", cwd=tmp_path,
                env={"VISMEM_DATA_MIRROR": "http://127.0.0.1:9"})
    errors = [x for x in r.stderr.splitlines() if x.startswith("vismem: error:")]
    assert r.returncode == 4 and len(errors) == 1, r.stderr
    assert f"`vismem data fetch {name}`" in errors[0] and "VISMEM_DATA_MIRROR" in errors[0]
    assert "cannot download" in errors[0] and f"data_dir is {tmp_path / 'empty'}" in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no data dir, no runs dir, no store


@pytest.mark.parametrize("name", ["longmemeval-s", "longmemeval-m", "longmemeval-oracle"])
def test_longmemeval_is_pinned_at_a_hub_commit_with_sha256_and_size(name):
    import re

    (f,) = DATASETS[name].files
    assert re.fullmatch(r"https://huggingface\.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/[0-9a-f]{40}/"
                        r"longmemeval_\w+\.json", f.url), f.url  # a commit, never `main`
    assert f.url.endswith(Path(f.path).name) and re.fullmatch(r"[0-9a-f]{64}", f.sha256 or "") and f.size


def test_a_longmemeval_copy_that_is_not_the_pinned_file_is_refused(tmp_path):
    root = tmp_path / "mirror" / "longmemeval-oracle"
    root.mkdir(parents=True)
    (root / "longmemeval_oracle.json").write_text('[{"question_id": "q1"}]')  # a re-upload, not the pinned bytes
    data = tmp_path / "data"
    with serve(tmp_path / "mirror") as (url, _log):
        r = _vismem("data", "fetch", "longmemeval-oracle", "--data-dir", str(data), cwd=tmp_path,
                    env={"VISMEM_DATA_MIRROR": url})
    errors = [x for x in r.stderr.splitlines() if x.startswith("vismem: error:")]
    assert r.returncode == 4 and len(errors) == 1, r.stderr
    assert not (data / "longmemeval" / "longmemeval_oracle.json").exists()
