"""Bad input gets one clear line and a non-zero exit before any work (issue 16's cases)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from vismem.core.errors import ConfigError, DataError, StoreError
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run

REPO_ARGS = [sys.executable, "-m", "vismem"]


def _cli(*args, cwd, timeout=120):
    return subprocess.run([*REPO_ARGS, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def _cfg(tmp_path, **over):
    return load_config(overrides={"runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"},
                                  **over})


@pytest.mark.parametrize("k", [[-1], [0], [5, 0]])
def test_k_below_one_is_a_config_error(k):
    with pytest.raises(ConfigError, match=r"memshot\.k: every k must be >= 1"):
        load_config(overrides={"memshot": {"k": k}})


COMPONENT_FIELDS = [
    ({"stages": ["memshot"], "memshot": {"text_embedder": "nope"}}, r"memshot\.text_embedder: unknown embedder 'nope'; registered: .*minilm"),
    ({"stages": ["memshot"], "memshot": {"image_embedder": "nope"}}, r"memshot\.image_embedder: unknown embedder 'nope'"),
    ({"stages": ["memshot"], "memshot": {"vlm": {"model": "nope"}}}, r"memshot\.vlm: unknown vlm 'nope'; registered: .*openai"),
    ({"stages": ["memshot"], "memshot": {"judge": "nope"}}, r"memshot\.judge: unknown vlm 'nope'"),
    ({"stages": ["encode"], "encode": {"backends": ["scripted-shopper", "nope"]}}, r"encode\.backends\[1\]: unknown vlm 'nope'"),
    ({"stages": ["replay"], "memory": {"architectures": ["dualmem", "nope"]}}, r"memory\.architectures\[1\]: unknown memory 'nope'"),
    ({"stages": ["probes"], "probes": {"backends": ["nope"]}}, r"probes\.backends\[0\]: unknown vlm 'nope'"),
    ({"stages": ["catalog"], "catalog": {"image_source": "nope"}}, r"catalog\.image_source: unknown image_source 'nope'; registered: .*procedural"),
    ({"stages": ["encode"], "encode": {"images": {"name": "nope"}}}, r"encode\.images: unknown image_source 'nope'"),
    # a known name with arguments it does not take (or lacks): named, the value never shown
    ({"stages": ["encode"], "encode": {"backends": [{"name": "openai", "args": {"model": "m", "bogus": 1}}]}},
     r"encode\.backends\[0\]: vlm 'openai' takes no argument\(s\) bogus; it accepts: model, base_url"),
    ({"stages": ["memshot"], "memshot": {"vlm": {"name": "openai", "args": {}}}}, r"memshot\.vlm: vlm 'openai' needs argument\(s\) model"),
    ({"stages": ["catalog"], "catalog": {"image_source": {"name": "procedural", "args": {"sise": 3}}}},
     r"catalog\.image_source: image_source 'procedural' takes no argument\(s\) sise"),
    ({"stages": ["replay"], "memory": {"components": {"captioner": "nope"}}}, r"unknown captioner 'nope'"),
]


@pytest.mark.parametrize("over,match", COMPONENT_FIELDS, ids=[m.split(":")[0].replace("\\", "") for _, m in COMPONENT_FIELDS])
def test_every_component_field_is_checked_before_any_work(tmp_path, over, match):
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=match) as err:
        run(_cfg(tmp_path, **over), progress=False)
    assert "\n" not in str(err.value) and err.value.exit_code == 2
    assert not (tmp_path / "runs").exists() and not (tmp_path / "store").exists()
    assert time.monotonic() - t0 < 30  # no rendering, no Ray, no server


def test_cli_bad_component_json_and_names_one_line_exit_2(tmp_path):
    for args, needle in ((["encode", "--backend", "{bad"], "--backend must be a name or a JSON object"),
                         (["memshot", "--vlm", "{\"name\": "], "--vlm must be a JSON object"),
                         (["encode", "--backend", "nope"], "encode.backends[0]: unknown vlm 'nope'"),
                         (["memshot", "--set", "memshot.text_embedder=nope"], "memshot.text_embedder: unknown embedder")):
        r = _cli("run", *args, "--store", f"file://{tmp_path}/store", "--set", f"runs_dir={tmp_path}/runs", cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert needle in _one_line(r.stderr)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("uri,needle", [("local-s3://", "names no bucket"),
                                        ("local-s3://Bad_Bucket", "bucket name 'Bad_Bucket' must be"),
                                        ("s3://ab", "bucket name 'ab' must be"),
                                        ("s3://-bad-", "must start and end with a letter or digit"),
                                        ("file://relative/path", "need an absolute path"),
                                        ("http://x", "scheme must be")])
def test_bad_store_uri_fails_at_load(uri, needle):
    with pytest.raises(StoreError, match=needle):
        load_config(overrides={"store": {"uri": uri}})


def test_cli_local_s3_without_bucket_exit_3_at_once(tmp_path):
    t0 = time.monotonic()
    r = _cli("run", "report", "--store", "local-s3://", "--set", f"runs_dir={tmp_path}/runs", cwd=tmp_path)
    assert r.returncode == 3 and "names no bucket" in _one_line(r.stderr)
    assert time.monotonic() - t0 < 30 and not (tmp_path / "runs").exists()


def test_invalid_yaml_is_one_line_with_line_and_column(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\nmemshot:\n  k: [5\n  x: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    msg = str(err.value)
    assert "\n" not in msg and f"invalid YAML in {bad} line 4, column 4:" in msg and "expected ','" in msg
    r = _cli("run", "--config", str(bad), "--print-config", cwd=tmp_path)
    assert r.returncode == 2 and "line 4, column 4" in _one_line(r.stderr)
    r = _cli("run", "--set", "memshot.k=[5", "--print-config", cwd=tmp_path)
    assert r.returncode == 2 and "--set memshot.k, column 3" in _one_line(r.stderr)


def test_empty_locomo_file_is_a_data_error_naming_it(tmp_path, data_dir):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(data_dir / "dmv-bench", data / "dmv-bench")
    (data / "locomo").mkdir()
    (data / "locomo" / "locomo10.json").write_text("[]")
    cfg = _cfg(tmp_path, stages=["memshot"], data_dir=str(data))
    with pytest.raises(DataError, match=r"locomo10\.json: the LoCoMo file holds no conversations"):
        run(cfg, progress=False)
    missing = _cfg(tmp_path, stages=["memshot"], data_dir=str(data), memshot={"dataset_path": "nope.json"})
    with pytest.raises(DataError, match=r"nope\.json: locomo file not found"):
        run(missing, progress=False)


def _fake_job_server():
    """A Ray job server that knows no job (what `vismem status` meets with a mistyped id)."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    from vismem.serve.openai_server import LocalOpenAIServer

    app = FastAPI()

    @app.get("/api/version")
    def version():
        return {"version": "4", "ray_version": "2.60.0", "ray_commit": "x", "session_name": "s"}

    @app.get("/api/jobs/{job_id}")
    def job(job_id: str):
        return JSONResponse(status_code=404, content=f"Job {job_id} does not exist.")

    @app.get("/api/jobs/{job_id}/logs")
    def logs(job_id: str):
        return JSONResponse(status_code=404, content=f"Job {job_id} does not exist.")

    return LocalOpenAIServer(app=app)


def test_status_and_logs_of_an_unknown_job_are_one_line(tmp_path):
    with _fake_job_server() as srv:
        dash = f"http://127.0.0.1:{srv.port}"
        for cmd in (["status", "nope-123"], ["logs", "nope-123"], ["logs", "nope-123", "--follow"]):
            r = _cli(*cmd, "--dashboard", dash, cwd=tmp_path, timeout=60)
            assert r.returncode == 1, r.stderr
            assert f"no job 'nope-123' at {dash}" in _one_line(r.stderr)


def test_component_errors_never_show_argument_values(tmp_path):
    canary = "AKIA-CANARY-123"
    cfg = _cfg(tmp_path, stages=["encode"], encode={"backends": [{"name": "scripted-shopper", "args": {"api_key": canary}}]})
    with pytest.raises(ConfigError) as err:
        run(cfg, progress=False)
    assert "api_key" in str(err.value) and canary not in str(err.value)
    assert json.dumps(cfg.model_dump(mode="json")).count(canary) == 1  # the config still carries it for the build


def test_a_second_run_on_a_busy_local_s3_store_is_one_line_and_writes_nothing(tmp_path):
    import os

    from vismem.core.s3server import LocalS3Server

    cfg = load_config(overrides={"stages": ["report"], "runs_dir": str(tmp_path / "runs")})
    assert cfg.store.uri.startswith("local-s3://")
    busy = LocalS3Server(data_dir=tmp_path / "runs" / ".s3").start()  # a live run holds the store
    try:
        with pytest.raises(StoreError, match=rf"^another vismem run \(pid {os.getpid()}\) is using .*runs/\.s3;") as err:
            run(cfg, progress=False)
        assert "\n" not in str(err.value) and err.value.exit_code == 3
        assert not (tmp_path / "runs" / cfg.run_id).exists()
    finally:
        busy.stop()


@pytest.mark.parametrize("args", [
    ["--store", "file://bob:pw-canary-41@/tmp/x"],
    ["--store", "file://bob:pw-canary-41@localhost/tmp/x"],
    ["--store", "ftp://bob:pw-canary-41@host/x"],
    ["--store", "s3://vismem-bkt", "--set", "store.endpoint_url=http://bob:pw-canary-41@127.0.0.1:9"],
    ["--store", "s3://vismem-bkt", "--set", "store.endpoint_url=http://bob:pw-canary-41@"],
    ["--store", "s3://vismem-bkt", "--set", "store.endpoint_url=ftp://bob:pw-canary-41@127.0.0.1:9"],
])
def test_passwords_in_store_uris_never_reach_the_terminal(args, tmp_path, capsys, monkeypatch):
    from vismem.pipelines.cli import main

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "vismem-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "vismem-test-secret")
    monkeypatch.chdir(tmp_path)
    assert main(["runs", *args]) == 3
    err = capsys.readouterr().err
    line = _one_line(err)
    assert "pw-canary-41" not in err and "***@" in line, line


def test_a_near_miss_gets_did_you_mean():
    # A mistyped stage, component or field names the closest real one in the same line.
    from vismem.core.errors import ConfigError
    from vismem.pipelines.config import load_config
    from vismem.pipelines.stage import get_stage

    with pytest.raises(ConfigError, match=r"unknown stage 'probe' \(did you mean 'probes'\?\)"):
        get_stage("probe")
    with pytest.raises(ConfigError, match=r"memshot.chunk_size: unknown field; allowed") as e:
        load_config(overrides={"memshot": {"chunk_size": 3}})
    assert "did you mean" not in str(e.value)  # nothing close: no guess
    with pytest.raises(ConfigError, match=r"memshot.variantz: unknown field \(did you mean 'variants'\?\)"):
        load_config(overrides={"memshot": {"variantz": ["memshot"]}})
    from vismem.serve.registry import EMBEDDERS

    with pytest.raises(ConfigError, match=r"unknown embedder 'minlm' \(did you mean 'minilm'\?\)"):
        EMBEDDERS.resolve("minlm")


def test_mistyped_variant_and_dataset_names_get_did_you_mean(capsys):
    # `--variant memsht`, a DMV-Bench variant file, `--dataset locomoo` and `data fetch` names.
    from vismem.memory.agent.variants import load_variant as arch_variant
    from vismem.memory.dialogue.variants import load_variant as unit_variant
    from vismem.pipelines.cli import main
    from vismem.pipelines.config import load_config

    with pytest.raises(ConfigError, match=r"unknown memory variant 'memsht' \(did you mean 'memshot'\?\); available"):
        unit_variant("memsht")
    with pytest.raises(ConfigError, match=r"unknown memory variant 'dualmm' \(did you mean 'dualmem'\?\); available"):
        arch_variant("dualmm")
    with pytest.raises(ConfigError, match=r"unknown dataset 'locomoo' \(did you mean 'locomo'\?\); registered"):
        load_config(overrides={"memshot": {"dataset": "locomoo"}})
    # A variant is checked with the config, so `plan` refuses it too, before any estimate.
    with pytest.raises(ConfigError, match=r"memshot.variants.*unknown memory variant 'h1204' \(did you mean 'h1024'\?\)"):
        load_config(overrides={"memshot": {"variants": ["memshot", "h1204"]}})
    assert main(["plan", "memshot", "--set", "memshot.variants=[memsht]"]) == 2
    assert "unknown memory variant 'memsht' (did you mean 'memshot'?)" in _one_line(capsys.readouterr().err)
    assert main(["data", "fetch", "longmemeval-orcle"]) == 2
    assert "unknown dataset 'longmemeval-orcle' (did you mean 'longmemeval-oracle'?)" in _one_line(
        capsys.readouterr().err)
