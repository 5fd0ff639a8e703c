"""A checkout without ``../shared``: where the data dir is, and a run fetching what it lacks.

The pinned files are served from a loopback mirror (``VISMEM_DATA_MIRROR``) built from the
suite's real data; the whole fresh-clone path end to end is ``tests/test_bare_clone.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.rangeserver import build_mirror, serve
from vismem.core import paths
from vismem.core.errors import DataError
from vismem.pipelines.config import load_config
from vismem.pipelines.datafetch import DATASETS, fetch_run_inputs

REPO = Path(__file__).resolve().parents[2]
PINNED = [f.path for name in ("locomo", "dmv-bench") for f in DATASETS[name].files]


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """This process as a checkout at ``tmp/clone`` with nothing beside it; ``$XDG_DATA_HOME`` in tmp."""
    clone = tmp_path / "clone"
    clone.mkdir()
    monkeypatch.setattr(paths, "repo_root", lambda: clone)
    monkeypatch.chdir(clone)
    monkeypatch.delenv(paths.DATA_DIR_VAR, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return clone


def test_default_data_dir_is_the_shared_folder_else_per_user_and_env_or_config_choose(bare, tmp_path, monkeypatch):
    user = tmp_path / "xdg" / "vismem" / "data"
    assert paths.resolve_data_dir() == user and "per-user" in paths.default_data_dir()[1]
    assert load_config(None).input_files()["memshot.dataset"] == user / "locomo" / "locomo10.json"
    (tmp_path / "shared" / "data").mkdir(parents=True)  # a workspace: the shared data beside the checkout
    assert paths.default_data_dir() == ((tmp_path / "shared" / "data").resolve(),
                                        "the shared data beside the checkout, ../shared/data")
    monkeypatch.setenv(paths.DATA_DIR_VAR, str(tmp_path / "mine"))
    assert paths.resolve_data_dir() == tmp_path / "mine"
    assert paths.resolve_data_dir(str(tmp_path / "given")) == tmp_path / "given"  # data_dir of a config wins


def test_vismem_data_says_which_dir_is_in_use_and_why(bare, tmp_path, capsys):
    from vismem.pipelines.cli import main

    assert main(["data"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"datasets in {tmp_path / 'xdg' / 'vismem' / 'data'} (the per-user data dir: no ")
    assert main(["data", "--json", "--set", f"data_dir={tmp_path / 'd'}"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["data_dir"] == str(tmp_path / "d") and out["data_dir_from"] == f"data_dir of the config: {tmp_path / 'd'}"


def test_a_run_fetches_the_small_datasets_it_lacks_into_its_data_dir(tmp_path, data_dir, monkeypatch):
    mirror = build_mirror(data_dir, tmp_path / "mirror")
    ref = load_config(None, overrides={"data_dir": str(data_dir)}).run_id
    cfg = load_config(None, overrides={"data_dir": str(tmp_path / "data")})
    lines: list[str] = []
    with serve(mirror) as (url, log):
        monkeypatch.setenv("VISMEM_DATA_MIRROR", url)
        assert sorted(fetch_run_inputs(cfg, echo=lines.append)) == sorted(PINNED)
        assert len(lines) == len(PINNED) and all(ln.startswith("data: fetched ") for ln in lines)
        assert all(f"into {tmp_path / 'data'} (" in ln and url in ln for ln in lines)
        for rel in PINNED:
            assert (tmp_path / "data" / rel).read_bytes() == (data_dir / rel).read_bytes()
        # Content-keyed: the run id is the one the same bytes give anywhere else.
        assert cfg.run_id == ref
        # A present file is kept as it is (a user's edit), and nothing is asked for again.
        (tmp_path / "data" / "locomo" / "LICENSE").unlink()
        (tmp_path / "data" / "locomo" / "locomo10.json").write_text("[]")
        asked = len(log)
        assert fetch_run_inputs(load_config(None, overrides={"data_dir": str(tmp_path / "data")}),
                                echo=lines.append) == []
        assert len(log) == asked and (tmp_path / "data" / "locomo" / "locomo10.json").read_text() == "[]"


def test_a_changed_file_on_the_mirror_stops_the_run_before_any_work_with_nothing_written(tmp_path, data_dir):
    mirror = build_mirror(data_dir, tmp_path / "mirror")
    target = mirror / "dmv-bench" / "cue_registry.json"  # the second dataset: locomo was fetched and checked first
    body = bytearray(target.read_bytes())
    body[1000] ^= 1  # same size, other bytes
    target.write_bytes(bytes(body))
    work = tmp_path / "work"
    work.mkdir()
    with serve(mirror) as (url, log):
        r = subprocess.run([sys.executable, "-m", "vismem", "run", "--set", f"data_dir={work / 'data'}", "--set",
                            f"runs_dir={work / 'runs'}", "--store", f"file://{work}/store"], capture_output=True,
                           text=True, cwd=work, timeout=300,
                           env=dict(os.environ, PYTHONPATH=str(REPO), VISMEM_DATA_MIRROR=url))
    errors = [x for x in r.stderr.splitlines() if x.startswith("vismem: error:")]
    assert r.returncode == 4 and len(errors) == 1, r.stderr
    assert str(work / "data" / "dmv-bench" / "cue_registry.json") in errors[0] and "sha256" in errors[0]
    assert "`vismem data fetch dmv-bench`" in errors[0] and "VISMEM_DATA_MIRROR" in errors[0]
    assert f"data_dir is {work / 'data'}" in errors[0]
    assert {"path": "/locomo/locomo10.json", "range": None} in log
    assert list(work.iterdir()) == []  # no data (not even the verified locomo), no run folder, no store


def test_longmemeval_and_the_official_images_are_never_fetched_implicitly(tmp_path, data_dir, monkeypatch):
    from vismem.env.storefront.catalog import load_catalog
    from vismem.env.storefront.images.sources import OfficialImageSource
    from vismem.pipelines.memshot.answercache import check_dataset_file

    mirror = build_mirror(data_dir, tmp_path / "mirror")
    (mirror / "longmemeval-oracle").mkdir()
    (mirror / "longmemeval-oracle" / "longmemeval_oracle.json").write_text("[]")
    cfg = load_config(None, overrides={"data_dir": str(tmp_path / "data"), "memshot": {
        "dataset": "longmemeval", "dataset_path": "longmemeval/longmemeval_oracle.json"}})
    with serve(mirror) as (url, log):
        monkeypatch.setenv("VISMEM_DATA_MIRROR", url)
        fetched = fetch_run_inputs(cfg, echo=lambda _line: None)
    assert fetched == [f.path for f in DATASETS["dmv-bench"].files]
    assert not any("longmemeval" in e["path"] for e in log) and not (tmp_path / "data" / "longmemeval").exists()
    with pytest.raises(DataError, match="`vismem data fetch longmemeval-oracle` downloads it"):
        check_dataset_file(cfg)
    with pytest.raises(DataError, match="never downloads it: get it from Hugging Face yyyujintang/DMV-Bench-Images"):
        OfficialImageSource(load_catalog(data_dir, seed=0), str(tmp_path / "no-images"))


def test_the_suite_set_up_fetches_its_data_into_the_per_user_dir(bare, tmp_path, data_dir, monkeypatch):
    from tests.conftest import _fetch_test_data

    monkeypatch.setenv("VISMEM_DATA_MIRROR", "http://127.0.0.1:9")  # offline: a clear reason, nothing written
    root, problem = _fetch_test_data()
    assert root == tmp_path / "xdg" / "vismem" / "data" and "`vismem data fetch locomo`" in problem
    assert not root.exists()
    with serve(build_mirror(data_dir, tmp_path / "mirror")) as (url, _log):
        monkeypatch.setenv("VISMEM_DATA_MIRROR", url)
        assert _fetch_test_data() == (root, "")
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == sorted(PINNED)
