"""`vismem serve up/status/down/config` and `deployed:NAME` specs: Serve config files from the model
YAMLs, name resolution against a running app, and the whole path on a real local Ray Serve
(stand-ins deployed, an encode run and the probes reaching them by name, nothing left after down)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from vismem.core.errors import ConfigError
from vismem.pipelines.cli import main


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    """A private deployment state file (never the checkout's)."""
    path = tmp_path / "serve" / "state.json"
    monkeypatch.setenv("VISMEM_SERVE_STATE", str(path))
    monkeypatch.delenv("VISMEM_SERVE_URL", raising=False)
    return path


def test_serve_is_a_cli_command_with_its_actions(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert all(a in out for a in ("up", "status", "down", "config"))


def test_config_has_autoscaling_accelerators_and_one_vllm_gateway(capsys, tmp_path):
    import yaml

    out = tmp_path / "serve.yaml"
    assert main(["serve", "config", "qwen2.5-vl-7b", "qwen3-vl-8b", "minilm", "--max-replicas", "3",
                 "--accelerator-type", "A100", "-o", str(out)]) == 0
    cfg = yaml.safe_load(out.read_text())
    assert [a["name"] for a in cfg["applications"]] == ["vllm", "minilm"]
    llm, mini = cfg["applications"]
    assert llm["route_prefix"] == "/" and llm["import_path"] == "vismem.serve.apps:llm_app"
    ids = [c["model_loading_config"]["model_id"] for c in llm["args"]["llm_configs"]]
    assert ids == ["Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen3-VL-8B-Instruct"]
    first = llm["args"]["llm_configs"][0]
    assert first["accelerator_type"] == "A100" and first["engine_kwargs"]["limit_mm_per_prompt"] == {"image": 8}
    assert first["deployment_config"]["autoscaling_config"] == {"min_replicas": 1, "max_replicas": 3,
                                                                "target_ongoing_requests": 256.0}
    assert mini["route_prefix"] == "/minilm" and mini["import_path"] == "vismem.serve.apps:model_app"
    dep = mini["deployments"][0]
    assert dep["name"] == "OpenAIModelServer" and dep["ray_actor_options"]["accelerator_type"] == "A100"
    assert dep["autoscaling_config"]["max_replicas"] == 3 and dep["ray_actor_options"]["num_cpus"] == 0.25
    assert mini["args"] == {"embedder_spec": {"name": "minilm", "args": {}}, "model_id": "minilm"}


def test_yaml_deploy_blocks_are_valid_and_env_expanded():
    from vismem.serve.hosting import deployable
    from vismem.serve.models import list_models, load_model_spec
    from vismem.serve.registry import registered

    for name in list_models():
        if load_model_spec(name).deploy:
            deployable(name, registered())  # every deploy: block passes DeploySettings
    d = deployable("qwen2.5-vl-7b", registered(), env={"VISMEM_ACCELERATOR": "L40S"})
    assert d.settings.accelerator_type == "L40S" and d.settings.max_replicas > d.settings.min_replicas
    assert deployable("qwen2.5-vl-7b", registered(), env={}).settings.accelerator_type == "H100"


@pytest.mark.parametrize("argv, message", [
    (["nope"], "unknown model 'nope' to deploy"),
    (["gpt-4o"], "hosted API"),
    (["minilm", "--min-replicas", "3", "--max-replicas", "2"], "min_replicas 3 > max_replicas 2"),
    (["minilm", "--preset", "local"], "not both"),
])
def test_bad_deployments_exit_2_before_anything_starts(state, capsys, argv, message):
    assert main(["serve", "up", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not state.exists()


def test_deployed_names_need_a_deployment(state, tmp_path, capsys):
    from vismem.serve.registry import VLMS

    with pytest.raises(ConfigError, match="no model deployment is up.*vismem serve up scripted-shopper"):
        VLMS.resolve("deployed:scripted-shopper")
    # A run naming a deployment that is not up stops at the config check: nothing written.
    store = tmp_path / "store"
    rc = main(["run", "encode", "--store", f"file://{store}", "--backend", "deployed:scripted-shopper",
               "--set", f"runs_dir={tmp_path / 'runs'}"])
    assert rc == 2 and "deployed:scripted-shopper" in capsys.readouterr().err and not store.exists()


def _fake_serve(monkeypatch):
    """A Serve-like proxy on loopback: OpenAIModelServer answers under any route prefix."""
    from vismem.serve.apps import OpenAIModelServer
    from vismem.serve.openai_server import LocalOpenAIServer

    shopper = OpenAIModelServer({"name": "scripted-shopper", "args": {}}, model_id="scripted-shopper")

    async def asgi(scope, receive, send):
        from starlette.requests import Request

        if scope["type"] != "http":
            return
        response = await shopper(Request(scope, receive))
        await response(scope, receive, send)

    srv = LocalOpenAIServer(app=asgi).start()
    monkeypatch.setenv("VISMEM_SERVE_URL", f"http://{srv.host}:{srv.port}")
    return srv


def test_deployed_spec_is_an_openai_client_that_knows_it_reaches_a_stand_in(monkeypatch):
    import vismem.serve.deployed as deployed
    from vismem.serve.build import build_vlm
    from vismem.serve.registry import VLMS
    from vismem.serve.vlm import Message

    monkeypatch.setattr(deployed, "_PROBED", {})
    srv = _fake_serve(monkeypatch)
    try:
        spec = VLMS.resolve({"model": "deployed:scripted-shopper", "args": {"timeout_s": 5}})
        assert spec["name"] == "openai" and spec["args"]["stand_in"] is True and spec["args"]["timeout_s"] == 5
        assert spec["args"]["base_url"] == f"http://{srv.host}:{srv.port}/scripted-shopper/v1"
        vlm = build_vlm(spec)
        assert vlm.stand_in and VLMS.is_stand_in(spec)
        assert "Action:" in vlm.chat([Message("user", "hello")]).text
        with pytest.raises(ConfigError, match="does not serve model 'scripted-recall'"):
            VLMS.resolve("deployed:scripted-recall")  # the proxy answers, but with another model
        with pytest.raises(ConfigError, match="'minilm' is an embedder, not a VLM"):
            VLMS.resolve("deployed:minilm")
    finally:
        srv.stop()
    monkeypatch.setattr(deployed, "_PROBED", {})
    with pytest.raises(ConfigError, match="deployed:scripted-shopper: not up at"):
        VLMS.resolve("deployed:scripted-shopper")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _held(port: int, wait_s: float = 30.0) -> list[tuple[int, str]]:
    """``(pid, command line)`` of every process listening on ``port`` once ``wait_s`` passed
    without the port being released (the kernel's listen table, not a connect: a connect to a
    free ephemeral port can meet itself)."""
    import time

    from vismem.pipelines.localcluster import port_holders

    deadline = time.monotonic() + wait_s
    while (found := port_holders([port])) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def test_serve_up_then_encode_and_probes_reach_deployed_models_then_down(state, tmp_path, capsys):
    """Real Ray Serve on loopback: the stand-ins deployed by `vismem serve up`, reached by name."""
    import polars as pl

    from vismem.core.store import Store
    from vismem.core.lifeline import descendants
    from vismem.pipelines.commands.serve import _local_cluster, _running
    from vismem.pipelines.localcluster import is_loopback, listening_sockets

    models = ["scripted-shopper", "scripted-recall", "minilm"]
    try:
        assert main(["serve", "up", *models, "--ray-cpus", "2", "--timeout", "240"]) == 0
        st = json.loads(state.read_text())
        port = st["http"]["port"]
        assert st["models"] == models and st["serve_url"] == f"http://127.0.0.1:{port}" and _listening(port)
        up_out = capsys.readouterr().out
        assert f"http://127.0.0.1:{port}/scripted-recall/v1" in up_out and "RUNNING" in up_out
        assert main(["serve", "status"]) == 0 and capsys.readouterr().out.count("RUNNING") == 3

        store = tmp_path / "store"
        argv = ["run", "encode", "replay", "probes", "--store", f"file://{store}", "--no-progress",
                "--backend", "deployed:scripted-shopper", "--chains", "1", "--J", "2",
                "--set", "encode.env=http", "--set", 'probes.backends=["deployed:scripted-recall"]',
                "--set", 'memory.architectures=["textonly"]',
                "--set", 'memory.components={"text_encoder": "deployed:minilm"}',
                "--set", "probes.workers=1", "--set", f"runs_dir={tmp_path / 'runs'}",
                "--set", "ray.actor_cpus=0.25", "--set", "ray.num_cpus=2", "--set", "ray.object_store_mb=300", "--json"]
        assert main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        enc, probes = out["encode"], out["probes"]
        assert enc["status"] == "done" and enc["ran"] == 2 and enc["failed"] == []
        assert enc["table3"][0]["backend_name"] == "openai:scripted-shopper (stand-in)"
        assert enc["table3"][0]["failed_calls"] == 0 and enc["table3"][0]["mean_steps"] > 5
        assert out["replay"]["features"]["computed"] == {"text_embedding": 2}
        assert probes["status"] == "done" and probes["ran"] == 1 and probes["vlm_calls_per_probe"] >= 1
        df = Store.open(f"file://{store}").read_table(f"runs/{out['_run_id']}/results/probes.parquet")
        assert df.height == probes["probes"] > 0 and df["backend"].str.contains("scripted-recall").all()
        assert df.filter(pl.col("correct")).height >= 1  # the deployed recall policy opened recalled products

        tree = [p for p in descendants(_local_cluster(st).pids()) if p != os.getpid()]
        assert len(tree) > 3  # gcs, raylet, dashboard, Serve's controller, proxy and replicas
        # Every listener of the deployment on loopback, the replicas' own gRPC servers included
        # (Ray binds those to all interfaces; serve/loopback.py's hook rebinds them).
        listeners = listening_sockets(tree)
        assert len(listeners) >= 6 and not [x for x in listeners if not is_loopback(x[1])], listeners
    finally:
        rc = main(["serve", "down"])
    assert rc == 0 and not state.exists()
    for p in (port, st["local_ray"]["dashboard_port"], st["local_ray"]["gcs_port"]):
        held = _held(p)
        assert not held, f"port {p} still listened on by {held}"
    assert [p for p in tree if _running(p)] == []
    capsys.readouterr()
    assert main(["serve", "status"]) == 1 and "nothing deployed" in capsys.readouterr().out
