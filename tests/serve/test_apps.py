"""Ray Serve hosting a registered backend behind the OpenAI-compatible API, with the openai client."""

from __future__ import annotations

import pytest

from vismem.core.ports import free_ports
from vismem.serve.apps import OpenAIModelServer, model_app
from vismem.serve.build import build_vlm
from vismem.serve.deploy import llm_config
from vismem.serve.hosting import deployable
from vismem.serve.registry import registered
from vismem.serve.versions import serving_versions, stack_versions
from vismem.serve.vlm import Message, VLMError


def test_llm_config_from_model_spec():
    cfg = llm_config(deployable("qwen2.5-vl-7b", registered(), env={}))
    # the weights `vismem weights sync` put in the cluster's models dir, expanded on the cluster
    assert cfg["model_loading_config"] == {"model_id": "Qwen/Qwen2.5-VL-7B-Instruct",
                                           "model_source": "${VISMEM_MODELS_DIR:-/models}/Qwen2.5-VL-7B-Instruct"}
    assert "placement_group_config" not in cfg  # one GPU: Ray's default bundle
    assert cfg["engine_kwargs"]["limit_mm_per_prompt"] == {"image": 8}
    assert cfg["deployment_config"]["autoscaling_config"] == {"min_replicas": 1, "max_replicas": 4,
                                                              "target_ongoing_requests": 256.0}
    assert cfg["accelerator_type"] == "H100"
    assert deployable("minilm", registered()).settings.engine == "vismem"


def test_llm_config_is_a_valid_ray_llm_config():
    """Ray's own LLMConfig accepts it (importable without vLLM; the engine is only on the cluster)."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    for model in ("qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-32b"):
        conf = LLMConfig(**llm_config(deployable(model, registered(), env={})))
        assert conf.accelerator_type == "H100" and conf.deployment_config["autoscaling_config"]["max_replicas"] >= 1


@pytest.mark.parametrize("root, source", [
    ("s3://bucket/models/", "s3://bucket/models/Qwen2.5-VL-7B-Instruct"),
    ("/mnt/weights", "/mnt/weights/Qwen2.5-VL-7B-Instruct"),
    ("hub", "Qwen/Qwen2.5-VL-7B-Instruct"),
])
def test_vllm_models_load_where_weights_sync_put_them(root, source, tmp_path):
    """model_source is the sync target's folder for the variant (one rule: serve.weights), and
    Ray's own models take it: an s3:// root as a bucket mirror, a path or hub id as vLLM's model."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    from vismem.pipelines.commands.weights import needed_weights
    from vismem.pipelines.config import load_config
    from vismem.serve.deploy import serve_config

    cfg = serve_config(["qwen2.5-vl-7b", "qwen3-vl-8b"], env={}, weights=root)
    (app,) = cfg["applications"]
    assert app["import_path"] == "vismem.serve.apps:llm_app"
    confs = [LLMConfig(**c) for c in app["args"]["llm_configs"]]
    assert confs[0].model_loading_config.model_source == source
    # the same folders `vismem weights sync --preset paper` fills
    synced = {w.folder for w in needed_weights(load_config(preset="paper"))}
    assert {c.model_loading_config.model_source.rsplit("/", 1)[-1] for c in confs} <= synced | {"Qwen2.5-VL-7B-Instruct"}
    if root.startswith("s3://"):
        from ray.llm._internal.common.utils.cloud_utils import CloudMirrorConfig, is_remote_path

        assert is_remote_path(source) and CloudMirrorConfig(bucket_uri=source).storage_type == "s3"


def test_a_bad_weights_root_is_one_config_error():
    from vismem.core.errors import ConfigError
    from vismem.serve.deploy import serve_config

    with pytest.raises(ConfigError, match="weights root 'models': give s3://"):
        serve_config(["qwen2.5-vl-7b"], env={}, weights="models")


def test_tensor_parallel_engines_pack_their_gpus_on_one_node():
    """Qwen3-VL-32B at TP=2: STRICT_PACK with one GPU bundle per shard, as Ray 2.60 spells it."""
    from ray.llm._internal.common.placement import PlacementGroupConfig
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    from vismem.serve.deploy import gpus_per_node, serve_config

    raw = llm_config(deployable("qwen3-vl-32b", registered(), env={}))
    assert raw["engine_kwargs"]["tensor_parallel_size"] == 2
    conf = LLMConfig(**raw)
    assert conf.placement_group_config == {"bundle_per_worker": {"GPU": 1}, "strategy": "STRICT_PACK"}
    pg = PlacementGroupConfig(**conf.placement_group_config)
    assert pg.strategy == "STRICT_PACK" and pg.bundle_per_worker.GPU == 1
    assert "placement_group_strategy" not in conf.deployment_config  # Ray refuses it there
    assert gpus_per_node(serve_config(["qwen3-vl-32b", "minilm"], env={})) == 2
    assert gpus_per_node(serve_config(["qwen2.5-vl-7b"], env={})) == 1


def test_builders_expand_paths_with_the_clusters_environment(monkeypatch, tmp_path):
    """A Serve config carries ${VAR} and ~ as written; the builders expand them on the node."""
    from vismem.serve import apps
    from vismem.serve.deploy import serve_config

    monkeypatch.setenv("VISMEM_MODELS_DIR", "/client/models")  # the client's own setting ...
    cfg = serve_config(["qwen2.5-vl-7b", "clip-vit-b32"], env={})
    text = repr(cfg)
    assert "/client/models" not in text  # ... never reaches the config
    (llm,) = [a for a in cfg["applications"] if a["name"] == "vllm"]
    (clip,) = [a for a in cfg["applications"] if a["name"] == "clip-vit-b32"]
    assert clip["args"]["embedder_spec"]["args"]["path"] == "${VISMEM_MODELS_DIR:-/models}/clip-vit-base-patch32"

    monkeypatch.setenv("VISMEM_MODELS_DIR", "/node/models")  # what the replica's node has
    monkeypatch.setenv("HOME", str(tmp_path))
    (conf,) = apps.node_llm_configs(llm["args"]["llm_configs"][:1])
    assert conf["model_loading_config"]["model_source"] == "/node/models/Qwen2.5-VL-7B-Instruct"
    (home,) = apps.node_llm_configs([{"model_loading_config": {"model_id": "m", "model_source": "~/w/m"}}])
    assert home["model_loading_config"]["model_source"] == f"{tmp_path}/w/m"
    seen = {}
    monkeypatch.setattr(apps, "build_model_app", lambda vlm, emb, **kw: seen.update(vlm=vlm, emb=emb))
    apps.model_app(clip["args"])
    assert seen["emb"]["args"]["path"] == "/node/models/clip-vit-base-patch32" and seen["vlm"] is None


def test_model_app_builder_rejects_unknown_args():
    with pytest.raises(ValueError, match="unknown args"):
        model_app({"vlm_spec": {"name": "scripted"}, "replicas": 2})


def test_models_route_says_what_is_hosted():
    server = OpenAIModelServer(embedder_spec={"name": "minilm", "args": {}}, model_id="minilm")
    entry = server.models()["data"][0]
    versions = entry["vismem"].pop("versions")
    assert entry["id"] == "minilm" and entry["vismem"] == {"kind": "embedder", "stand_in": False, "dim": 384}
    assert versions == stack_versions() and versions["torch"] and "vllm" in versions and "cuda" in versions
    assert serving_versions(server.models()) == {"minilm": versions}
    shopper = OpenAIModelServer({"name": "scripted-shopper", "args": {}}, model_id="s")
    assert {k: v for k, v in shopper.models()["data"][0]["vismem"].items() if k != "versions"} == {
        "kind": "vlm", "stand_in": True}


def test_build_llm_app_needs_vllm_locally():
    pytest.importorskip("ray")
    try:
        import vllm  # noqa: F401
    except ImportError:
        from vismem.serve.apps import build_llm_app

        with pytest.raises(ImportError, match="needs vLLM"):
            build_llm_app(["qwen2.5-vl-7b"])
    else:  # pragma: no cover - cluster image
        pytest.skip("vllm present: the app is exercised on the cluster")


def test_deployment_class_requires_a_backend():
    with pytest.raises(ValueError):
        OpenAIModelServer()


def test_deployment_class_serves_openai_api_without_ray():
    """The deployment's request handling, driven in-process through ASGI (Ray adds only hosting)."""
    import asyncio

    import httpx
    from starlette.requests import Request

    server = OpenAIModelServer({"name": "scripted", "args": {"fn": "echo"}}, model_id="echo-model")

    async def asgi(scope, receive, send):
        response = await server(Request(scope, receive))
        await response(scope, receive, send)

    async def go():
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://test/prefix") as c:
            ok = await c.post("/prefix/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
            models = await c.get("/prefix/v1/models")
            no_embedder = await c.post("/prefix/v1/embeddings", json={"input": ["x"]})
            bad = await c.post("/prefix/v1/chat/completions", content=b"not json")
            missing = await c.get("/prefix/elsewhere")
        return ok, models, no_embedder, bad, missing

    ok, models, no_embedder, bad, missing = asyncio.run(go())
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "hi"
    assert models.json()["data"][0]["id"] == "echo-model"
    assert no_embedder.status_code == 404 and bad.status_code == 400 and missing.status_code == 404


@pytest.mark.slow  # starting Ray + Serve's controller and proxy takes 30-60 s on 2 shared cores
def test_ray_serve_hosts_scripted_vlm_for_openai_client(ray_local):
    from ray import serve

    from vismem.serve.apps import build_model_app, run_app

    app = build_model_app({"name": "scripted", "args": {"fn": "describe", "fail_first": 1}},
                          name="scripted-test", num_cpus=0.1, model_id="scripted-test")
    base_url = run_app(app, name="scripted-test", route_prefix="/scripted", port=free_ports(1)[0])
    try:
        client = build_vlm({"name": "openai", "args": {"model": "scripted-test", "base_url": base_url,
                                                       "api_key_env": None, "backoff_s": 0.05, "max_retries": 3}})
        # The first call hits the injected HTTP 500 through Ray Serve's proxy and is retried.
        res = client.chat([Message("user", "through ray", images=(b"\x89PNG\r\n\x1a\nfake",))])
        assert res.text == "images=1 bytes=[12] last_user='through ray'"
        bad = build_vlm({"name": "openai", "args": {"model": "m", "base_url": base_url.replace("/v1", "/v2"),
                                                    "max_retries": 0}})
        with pytest.raises(VLMError) as ei:
            bad.chat([Message("user", "x")])
        assert ei.value.reason == "http_404"
    finally:
        serve.shutdown()


def test_stack_and_serving_versions_are_pure_over_their_lookups():
    fake = {"vllm": "0.29.0", "torch": "2.13.0"}
    got = stack_versions(version_of=fake.get, cuda=lambda: "12.9")
    assert got == {"vllm": "0.29.0", "torch": "2.13.0", "transformers": None, "ray": None, "cuda": "12.9"}
    body = {"data": [{"id": "a", "vismem": {"versions": got}}, {"id": "Qwen/Qwen3-VL-8B-Instruct"}, "junk"]}
    assert serving_versions(body) == {"a": got, "Qwen/Qwen3-VL-8B-Instruct": None}
    assert serving_versions(None) == {} and serving_versions({"data": 3}) == {}
