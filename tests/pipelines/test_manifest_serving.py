"""The manifest records the serving side: per served component its endpoint, the vLLM / torch /
CUDA versions its replica reports and whether vLLM's batch-invariant decoding is configured;
for the ray.serve.llm gateway (no versions reported) what a task on each replica's node reports,
or why that is unknown; a run on local (or hosted) back-ends records that no served model is used."""

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
    assert enc["versions"] is None and enc["batch_invariant"] is True
    # no Serve of this model on a Ray this process reaches: the replicas' nodes cannot be asked
    assert enc["versions_source"].startswith("unknown: ") and "Ray" in enc["versions_source"]
    down = serving["endpoints"]["probes.recaller[0]"]
    assert down["versions"] is None and down["error"] and down["batch_invariant"] is True
    assert down["versions_source"].startswith("unknown: ")


def test_gateway_models_record_the_stack_read_on_their_replicas_nodes_once_per_endpoint(
        file_store, ray_local, monkeypatch):
    """A real local Ray Serve: a stand-in replica named as ray.serve.llm names a model's deployment
    (with the model's batch-invariant env), behind a gateway that lists the model without versions.
    The manifest records what a task on the replica's node, in the replica's runtime_env, reports."""
    import torch
    from ray import serve

    import vismem.serve.replica_stack as rs
    from vismem.core.ports import free_ports
    from vismem.serve.apps import OpenAIModelServer
    from vismem.serve.build import build_vlm
    from vismem.serve.openai_server import LocalOpenAIServer

    model = "Qwen/Qwen2.5-VL-7B-Instruct"
    calls: list[str] = []
    real = rs.replica_stack
    # a generous timeout: a loaded 2-core machine starts the task's worker slowly
    monkeypatch.setattr(rs, "replica_stack", lambda m: calls.append(m) or real(m, 60.0))
    stand_in = serve.deployment(OpenAIModelServer, name=f"LLMServer:{rs.llm_deployment_name(model)}",
                                ray_actor_options={"num_cpus": 0.1,
                                                   "runtime_env": {"env_vars": {"VLLM_BATCH_INVARIANT": "1"}}})
    serve.start(http_options={"host": "127.0.0.1", "port": free_ports(1)[0]})
    gateway = LocalOpenAIServer(build_vlm({"name": "scripted-shopper", "args": {}}), model_id=model).start()
    try:
        serve.run(stand_in.bind({"name": "scripted-shopper", "args": {}}, None, model), name="vllm",
                  route_prefix="/", blocking=False)
        base = f"http://{gateway.host}:{gateway.port}/v1"
        m = _manifest(file_store, "gateway-1")
        for role in ("encode.backend", "probes.recaller[0]"):  # one endpoint, asked once
            m.component(role, {"name": "openai", "args": {"model": model, "label": "qwen2.5-vl-7b", "base_url": base,
                                                          "api_key_env": "VISMEM_VLM_API_KEY"}})
        m.component("probes.recaller[1]", {"name": "openai", "args": {  # not served on this cluster
            "model": "Qwen/Qwen3-VL-8B-Instruct", "api_key_env": "VISMEM_VLM_API_KEY", "base_url": base}})
    finally:
        gateway.stop()
        serve.shutdown()
    serving = file_store.get_json("runs/gateway-1/manifest.json")["serving"]
    enc = serving["endpoints"]["encode.backend"]
    assert enc["versions_source"] == "replica-node task" and enc["batch_invariant"] is True
    assert enc["versions"]["torch"] == torch.__version__ and enc["versions"]["vllm"] is None
    assert enc["versions"]["cuda"] == torch.version.cuda
    assert enc["replicas"]["deployments"] == [f"vllm/LLMServer:{rs.llm_deployment_name(model)}"]
    (node,) = enc["replicas"]["nodes"]
    assert node["VLLM_BATCH_INVARIANT"] == "1" and node["torch"] == torch.__version__ and node["node_id"]
    assert serving["endpoints"]["probes.recaller[0]"] == enc
    other = serving["endpoints"]["probes.recaller[1]"]
    assert other["versions"] is None and other["versions_source"].startswith("unknown: no running replica")
    assert calls == [model, "Qwen/Qwen3-VL-8B-Instruct"]


def test_a_node_task_that_cannot_run_is_reported_unknown_not_raised(ray_local, monkeypatch):
    import time

    import vismem.serve.replica_stack as rs
    from vismem.serve.versions import serving_record

    gone = {"node_id": "ab" * 28, "node_ip": "10.9.9.9", "runtime_env": {}}  # no such node
    bad = {"node_id": "f" * 56, "node_ip": "10.9.9.8", "runtime_env": {}}  # an id Ray refuses (nil)
    t0 = time.monotonic()
    nodes = rs._run_on_nodes([gone, bad], time.monotonic() + 3.0)  # noqa: SLF001 - the node tasks alone
    assert time.monotonic() - t0 < 30 and [n["node_id"] for n in nodes] == [gone["node_id"], bad["node_id"]]
    assert all(set(n) == {"node_id", "node_ip", "unknown"} for n in nodes)
    assert "could not be started" in nodes[1]["unknown"]
    assert rs.common_versions(nodes) is None
    # through the manifest's record: the deployment found, its node unreachable, the run goes on
    details = {"applications": {"vllm": {"deployments": {"LLMServer:org--m": {"replicas": [
        {"node_id": gone["node_id"], "node_ip": gone["node_ip"], "state": "RUNNING"}]}}}}}
    monkeypatch.setattr(rs, "_serve_details", lambda timeout_s: details)
    spec = {"name": "openai", "args": {"model": "org/m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}}
    rec = serving_record(spec, lambda base: {"data": [{"id": "org/m"}]}, lambda base, m: rs.replica_stack(m, 3.0))
    assert rec["versions"] is None and rec["versions_source"].startswith("unknown: no replica node answered (")
    assert rec["replicas"]["deployments"] == ["vllm/LLMServer:org--m"]
    assert [n["node_id"] for n in rec["replicas"]["nodes"]] == [gone["node_id"]]
