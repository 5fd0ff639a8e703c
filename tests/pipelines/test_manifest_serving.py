"""The manifest records the serving side: per served component its endpoint, the vLLM / torch /
CUDA versions its replica reports and whether vLLM's batch-invariant decoding is configured;
a run on local (or hosted) back-ends records that no served model is used."""

from __future__ import annotations

from vismem.pipelines.config import load_config
from vismem.pipelines.manifest import Manifest


def _manifest(store, run_id: str) -> Manifest:
    m = Manifest(store, run_id)
    cfg = load_config(preset="local")
    m.data = {"stages": {}}
    m.begin(cfg, seeds={"root": 0})
    return m


def test_a_local_run_records_that_no_served_model_is_used(file_store, monkeypatch):
    import vismem.serve.versions as versions

    monkeypatch.setattr(versions, "probe_models", lambda base: (_ for _ in ()).throw(AssertionError(base)))
    m = _manifest(file_store, "local-1")
    m.component("encode.backend", {"name": "scripted-shopper", "args": {}})
    m.component("memshot.judge", {"name": "openai", "args": {"model": "glm-5", "base_url": "https://api.z.ai/v4",
                                                              "api_key_env": "GLM_API_KEY"}})  # hosted: not served
    saved = file_store.get_json("runs/local-1/manifest.json")
    assert saved["serving"] == {"used": False, "endpoints": {}}


def _replica_server():
    """A vismem Serve replica (OpenAIModelServer) behind a loopback HTTP server."""
    from vismem.serve.apps import OpenAIModelServer
    from vismem.serve.openai_server import LocalOpenAIServer

    replica = OpenAIModelServer(embedder_spec={"name": "minilm", "args": {}}, model_id="minilm")

    async def asgi(scope, receive, send):
        from starlette.requests import Request

        if scope["type"] == "http":
            response = await replica(Request(scope, receive))
            await response(scope, receive, send)

    return LocalOpenAIServer(app=asgi).start()


def test_served_components_record_the_replicas_stack_and_batch_invariance(file_store):
    from vismem.serve.build import build_vlm
    from vismem.serve.openai_server import LocalOpenAIServer
    from vismem.serve.versions import stack_versions

    replica = _replica_server()
    # a vLLM gateway stand-in: lists the model, reports no versions (as ray.serve.llm's router)
    gateway = LocalOpenAIServer(build_vlm({"name": "scripted-shopper", "args": {}}),
                                model_id="Qwen/Qwen2.5-VL-7B-Instruct").start()
    try:
        m = _manifest(file_store, "served-1")
        m.component("memory.textonly", {"spec": {"name": "openai-embed", "args": {
            "model": "minilm", "base_url": f"http://{replica.host}:{replica.port}/v1", "api_key_env": None}}})
        m.component("encode.backend", {"name": "openai", "cache_slug": "x", "args": {
            "model": "Qwen/Qwen2.5-VL-7B-Instruct", "label": "qwen2.5-vl-7b", "api_key_env": "VISMEM_VLM_API_KEY",
            "base_url": f"http://{gateway.host}:{gateway.port}/v1"}})
        m.component("probes.recaller[0]", {"name": "openai", "args": {
            "model": "Qwen/Qwen3-VL-8B-Instruct", "api_key_env": "VISMEM_VLM_API_KEY",
            "base_url": "http://127.0.0.1:9/v1"}})  # down: recorded with why
    finally:
        replica.stop()
        gateway.stop()
    serving = file_store.get_json("runs/served-1/manifest.json")["serving"]
    assert serving["used"] is True
    emb = serving["endpoints"]["memory.textonly"]
    assert emb["model"] == "minilm" and emb["versions"] == stack_versions()
    assert {"vllm", "torch", "cuda"} <= set(emb["versions"]) and "batch_invariant" not in emb
    enc = serving["endpoints"]["encode.backend"]
    assert enc["versions"] is None and enc["batch_invariant"] is True and "gateway" in enc["versions_source"]
    down = serving["endpoints"]["probes.recaller[0]"]
    assert down["versions"] is None and down["error"] and down["batch_invariant"] is True
