"""`vismem serve up/down --dashboard` on a Serve instance it shares: only vismem's applications are
written (read, merge, write back); a colleague's declarative app and a notebook's imperative one
survive both, and a name or route clash is refused before anything is written."""

from __future__ import annotations

import io
import json
import zipfile
import time
from pathlib import Path

import pytest

from tests.pipelines.serve_dashboard import FakeServeDashboard
from vismem.pipelines.cli import main
from vismem.serve.sharing import OWNER_VAR, is_ours, merged_config

#: A colleague's application, as `serve deploy` wrote it (its runtime_env is theirs).
COLLEAGUE = {"name": "colleague", "route_prefix": "/colleague", "import_path": "their.pkg:app",
             "runtime_env": {"env_vars": {"THEIR_SETTING": "1"}, "pip": ["their-dep==1.0"]},
             "deployments": [{"name": "Theirs", "num_replicas": 2}]}


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "serve" / "state.json"
    monkeypatch.setenv("VISMEM_SERVE_STATE", str(path))
    monkeypatch.delenv("VISMEM_SERVE_URL", raising=False)
    return path


@pytest.fixture
def dash():
    with FakeServeDashboard() as d:
        d.add_app(COLLEAGUE)
        d.add_app({"name": "notebook", "route_prefix": "/nb"}, imperative=True)
        yield d


def test_up_and_down_keep_foreign_apps_as_deployed(state, dash, capsys):
    assert main(["serve", "up", "scripted-shopper", "minilm", "--dashboard", dash.url, "--timeout", "5"]) == 0
    put = dash.puts[-1]
    assert [a["name"] for a in put["applications"]] == ["colleague", "scripted-shopper", "minilm"]
    assert put["applications"][0] == COLLEAGUE  # written back exactly as it was deployed
    assert put["http_options"]["port"] == 8123  # the running proxy's options, not ours
    ours = put["applications"][1:]
    assert all(is_ours(a) for a in ours) and not is_ours(put["applications"][0])
    st = json.loads(state.read_text())
    assert st["serve_url"] == "http://127.0.0.1:8123"  # runs reach the proxy where it listens
    # vismem's apps carry this checkout's code (uploaded through the dashboard) and revision
    rt = ours[0]["runtime_env"]
    (pkg,) = dash.packages
    assert rt["py_modules"] == [f"gcs://{pkg}"] and rt["env_vars"]["VISMEM_GIT_REVISION"]
    names = zipfile.ZipFile(io.BytesIO(dash.packages[pkg])).namelist()
    assert "vismem/serve/deploy.py" in names and "vismem/pipelines/cli.py" in names
    assert not any(n.endswith((".parquet", ".pyc")) or "/.venv/" in n for n in names)
    assert set(dash.apps) == {"colleague", "notebook", "scripted-shopper", "minilm"}

    assert main(["serve", "down", "minilm"]) == 0  # one of ours
    assert set(dash.apps) == {"colleague", "notebook", "scripted-shopper"}
    assert dash.apps["colleague"]["deployed_app_config"] == COLLEAGUE

    assert main(["serve", "down"]) == 0  # all of ours: Serve keeps running for the others
    assert set(dash.apps) == {"colleague", "notebook"} and dash.apps["colleague"]["deployed_app_config"] == COLLEAGUE
    assert ("DELETE", "/api/serve/applications/") not in dash.calls and not state.exists()
    capsys.readouterr()


def test_down_shuts_serve_down_only_when_nothing_else_runs(state, capsys):
    with FakeServeDashboard() as d:
        assert main(["serve", "up", "scripted-shopper", "--dashboard", d.url, "--timeout", "5"]) == 0
        assert main(["serve", "down"]) == 0
        assert ("DELETE", "/api/serve/applications/") in d.calls and d.apps == {}
    capsys.readouterr()


def test_down_without_a_state_file_finds_vismems_apps_on_the_cluster(state, dash, capsys):
    assert main(["serve", "up", "scripted-shopper", "--dashboard", dash.url, "--timeout", "5"]) == 0
    state.unlink()  # another machine: no state file, the cluster's marks say what is vismem's
    assert main(["serve", "down", "--dashboard", dash.url]) == 0
    assert set(dash.apps) == {"colleague", "notebook"}
    capsys.readouterr()


@pytest.mark.parametrize("foreign, message", [
    ({"name": "scripted-shopper", "route_prefix": "/x", "import_path": "a:b"}, "'scripted-shopper' on the cluster is not vismem's"),
    ({"name": "other", "route_prefix": "/scripted-shopper", "import_path": "a:b"}, "route '/scripted-shopper' is taken by Serve app 'other'"),
])
def test_a_clash_with_a_foreign_app_is_refused_before_writing(state, capsys, foreign, message):
    with FakeServeDashboard() as d:
        d.add_app(foreign)
        assert main(["serve", "up", "scripted-shopper", "--dashboard", d.url, "--timeout", "5"]) == 2
        assert message in capsys.readouterr().err
        assert d.puts == [] and not state.exists()


def test_merge_keeps_foreign_and_replaces_ours():
    ours_old = {"name": "minilm", "route_prefix": "/minilm", "import_path": "vismem.serve.apps:model_app",
                "runtime_env": {"env_vars": {OWNER_VAR: "vismem"}}}
    details = {"controller_info": {"node_id": "n"}, "proxy_location": "HeadOnly",
               "http_options": {"host": "127.0.0.1", "port": 9}, "target_capacity": 50,
               "applications": {"colleague": {"source": "declarative", "deployed_app_config": COLLEAGUE},
                                "minilm": {"source": "declarative", "deployed_app_config": ours_old}}}
    new = {"name": "scripted-recall", "route_prefix": "/scripted-recall", "import_path": "vismem.serve.apps:model_app"}
    out = merged_config(details, {"proxy_location": "EveryNode", "applications": [new]})
    assert [a["name"] for a in out["applications"]] == ["colleague", "scripted-recall"]  # old minilm of ours gone
    assert out["proxy_location"] == "HeadOnly" and out["target_capacity"] == 50
    assert out["applications"][1]["runtime_env"]["env_vars"][OWNER_VAR] == "vismem"
    assert "runtime_env" not in new  # the caller's config is not changed
    redacted = {**COLLEAGUE, "runtime_env": {"env_vars": {"THEIR_SETTING": "<redacted>"}}}
    details["applications"]["colleague"]["deployed_app_config"] = redacted
    from vismem.core.errors import ConfigError

    with pytest.raises(ConfigError, match="redacted its runtime_env"):
        merged_config(details, {"applications": [new]})


@pytest.mark.slow
def test_a_foreign_app_on_a_real_loopback_cluster_survives_up_and_down(state, capsys):
    """Real Ray Serve: a colleague's app deployed first (declaratively), then vismem's up and down."""
    from ray.dashboard.modules.serve.sdk import ServeSubmissionClient

    from vismem.core.ports import free_ports
    from vismem.pipelines.localcluster import LocalRayCluster

    with LocalRayCluster(head_cpus=2, workers=0) as cluster:
        client = ServeSubmissionClient(cluster.dashboard_url)
        from vismem.pipelines.commands.jobs import cluster_is_here

        assert cluster_is_here(cluster.dashboard_url)  # Ray's own node list: every node on this machine
        port = free_ports(1)[0]
        theirs = {"name": "colleague", "route_prefix": "/colleague", "import_path": "vismem.serve.apps:model_app",
                  "args": {"vlm_spec": {"name": "scripted-recall", "args": {}}, "model_id": "colleague"},
                  "deployments": [{"name": "OpenAIModelServer", "num_replicas": 1,
                                   "ray_actor_options": {"num_cpus": 0.25}}]}
        client.deploy_applications({"http_options": {"host": "127.0.0.1", "port": port}, "applications": [theirs]})

        def status() -> dict[str, str]:
            return {n: a["status"] for n, a in client.get_serve_details()["applications"].items()}

        deadline = time.monotonic() + 240
        while status().get("colleague") != "RUNNING" and time.monotonic() < deadline:
            time.sleep(1)
        assert main(["serve", "up", "scripted-shopper", "--dashboard", cluster.dashboard_url, "--timeout", "240"]) == 0
        assert status() == {"colleague": "RUNNING", "scripted-shopper": "RUNNING"}
        assert json.loads(state.read_text())["serve_url"] == f"http://127.0.0.1:{port}"
        assert main(["serve", "down"]) == 0
        deadline = time.monotonic() + 120  # Serve deletes asynchronously (DELETING, then gone)
        while "scripted-shopper" in status() and time.monotonic() < deadline:
            time.sleep(1)
        apps = client.get_serve_details()["applications"]
        assert list(apps) == ["colleague"] and apps["colleague"]["status"] == "RUNNING"
        assert apps["colleague"]["deployed_app_config"]["args"] == theirs["args"]
    capsys.readouterr()


def test_apps_that_scale_to_zero_do_not_ship_code_through_the_dashboard(state, dash, capsys):
    """Ray deletes a dashboard-uploaded package once no replica holds it: refused before writing."""
    argv = ["serve", "up", "scripted-shopper", "--dashboard", dash.url, "--min-replicas", "0", "--timeout", "5"]
    assert main(argv) == 2
    assert "scripted-shopper can scale to zero" in capsys.readouterr().err and dash.puts == []
    assert main([*argv, "--code", "image"]) == 0  # the image's code: nothing shipped
    assert "py_modules" not in dash.puts[-1]["applications"][-1]["runtime_env"] and dash.packages == {}
    capsys.readouterr()


def test_code_in_object_storage_survives_scale_to_zero_and_unpacks_as_ray_does(state, dash, tmp_path, capsys):
    from ray._private.runtime_env.packaging import unzip_package

    prefix = f"file://{tmp_path}/code"
    argv = ["serve", "up", "scripted-shopper", "--dashboard", dash.url, "--min-replicas", "0",
            "--code", prefix, "--timeout", "5"]
    assert main(argv) == 0
    (uri,) = dash.puts[-1]["applications"][-1]["runtime_env"]["py_modules"]
    assert uri.startswith(f"{prefix}/vismem-code-") and uri.endswith(".zip") and dash.packages == {}
    zpath = Path(uri.removeprefix("file://"))
    first = zpath.read_bytes()
    assert main(argv) == 0  # unchanged code: the same content-named zip, not rewritten
    assert dash.puts[-1]["applications"][-1]["runtime_env"]["py_modules"] == [uri] and zpath.read_bytes() == first
    out = tmp_path / "unpacked"
    unzip_package(package_path=str(zpath), target_dir=str(out), remove_top_level_directory=True,
                  unlink_zip=False)  # what a node does with a remote py_modules zip
    assert (out / "vismem" / "serve" / "deploy.py").is_file() and (out / "vismem" / "__init__.py").is_file()
    assert not list(out.rglob("*.pyc")) and not list(out.rglob("__pycache__"))
    capsys.readouterr()


def test_the_paper_models_on_a_shared_cluster(state, dash, capsys):
    """The paper's served models: the vLLM gateway through vismem's builder, its engines keeping
    the app's env vars beside their own (Ray lays a model's runtime_env over the app's key by key)."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    assert main(["serve", "up", "--preset", "paper", "--dashboard", dash.url, "--timeout", "5"]) == 0
    apps = {a["name"]: a for a in dash.puts[-1]["applications"]}
    assert set(apps) == {"colleague", "vllm", "qwen3-vl-embedding-8b"}
    llm = apps["vllm"]
    assert llm["import_path"] == "vismem.serve.apps:llm_app" and is_ours(llm)
    for conf in llm["args"]["llm_configs"]:
        env = LLMConfig(**conf).runtime_env["env_vars"]
        assert env["VLLM_BATCH_INVARIANT"] == "1" and env["VISMEM_GIT_REVISION"] == llm["runtime_env"]["env_vars"]["VISMEM_GIT_REVISION"]
        assert conf["model_loading_config"]["model_source"].startswith("${VISMEM_MODELS_DIR:-/models}/")
    capsys.readouterr()
