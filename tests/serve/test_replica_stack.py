"""The serving replicas' stack read on their own nodes (for the ray.serve.llm gateway, which reports
none): what one node task reports, which Serve replicas serve a model, the runtime_env the task
starts in, and the unknown answers. The real path on a local Ray Serve is covered in
tests/pipelines/test_manifest_serving.py."""

from __future__ import annotations

import subprocess
import sys

from vismem.serve.replica_stack import (common_versions, find_replicas, gpu_names, llm_deployment_name, node_stack,
                                        replica_stack)


def test_node_stack_reports_this_environment_without_touching_cuda(monkeypatch):
    import torch

    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    got = node_stack()
    assert got["torch"] == torch.__version__ and got["cuda"] == torch.version.cuda
    assert got["vllm"] is None  # not installed on the CPU side
    assert got["cuda_available"] is torch.cuda.is_available() and got["VLLM_BATCH_INVARIANT"] == "1"
    assert got["python"] == "%d.%d.%d" % sys.version_info[:3] and got["ray"]
    import os

    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in os.environ  # the worker's environment is left as found


def test_node_stack_ships_by_value_to_an_environment_without_vismem(tmp_path):
    """The task runs in the replica's environment: it must not need vismem there."""
    import ray.cloudpickle

    from vismem.serve import replica_stack as rs

    task = rs._shipped_by_value()  # noqa: SLF001 - the remote function as Ray ships it
    blob = tmp_path / "fn.pkl"
    blob.write_bytes(ray.cloudpickle.dumps(task._function))  # noqa: SLF001
    code = ("import sys; sys.modules['vismem'] = None\n"  # any import of vismem now fails
            "import ray.cloudpickle as c, torch\n"
            f"fn = c.loads(open({str(blob)!r}, 'rb').read())\n"
            "out = fn(); assert out['torch'] == torch.__version__, out; print('ok')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


def test_the_gpu_is_named_by_nvidia_smi_else_nvml(tmp_path, monkeypatch):
    import os
    import types

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n[ \"$1 $2\" = '--query-gpu=name --format=csv,noheader' ] && printf 'NVIDIA H200\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    got = node_stack()
    assert (got["gpu"], got["gpus"]) == ("NVIDIA H200", 1)
    smi.unlink()
    nvml = types.SimpleNamespace(nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 2,
                                 nvmlDeviceGetHandleByIndex=lambda i: i,
                                 nvmlDeviceGetName=lambda h: [b"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"][h])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert gpu_names() == ["NVIDIA H100 80GB HBM3"] * 2
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML either: no GPU named
    assert gpu_names() == []


def _details() -> dict:
    rep = lambda node, state="RUNNING": {"node_id": node, "node_ip": f"10.0.0.{node[-1]}", "state": state}  # noqa: E731
    return {"applications": {
        "vllm": {"deployed_app_config": {"runtime_env": {
                     "py_modules": ["s3://b/vismem-code-1.zip"],
                     "env_vars": {"VISMEM_OWNER": "vismem", "VLLM_BATCH_INVARIANT": "0"}}},
                 "deployments": {
                     "OpenAiIngress": {"replicas": [rep("n1")]},
                     "LLMServer:Qwen--Qwen2_5-VL-7B-Instruct": {
                         "deployment_config": {"ray_actor_options": {
                             "runtime_env": {"env_vars": {"VLLM_BATCH_INVARIANT": "1"}}}},
                         "replicas": [rep("n1"), rep("n2"), rep("n3", "STARTING")]},
                     "LLMServer:Qwen--Qwen3-VL-8B-Instruct": {"replicas": [rep("n2")]}}},
        "minilm": {"deployed_app_config": None, "deployments": {"OpenAIModelServer": {"replicas": [rep("n1")]}}},
    }}


def test_find_replicas_names_the_models_running_replicas_with_their_runtime_env():
    assert llm_deployment_name("Qwen/Qwen2.5-VL-7B-Instruct") == "Qwen--Qwen2_5-VL-7B-Instruct"
    got = find_replicas(_details(), "Qwen/Qwen2.5-VL-7B-Instruct")
    env = {"py_modules": ["s3://b/vismem-code-1.zip"],
           "env_vars": {"VISMEM_OWNER": "vismem", "VLLM_BATCH_INVARIANT": "1"}}
    assert got == [{"app": "vllm", "deployment": "LLMServer:Qwen--Qwen2_5-VL-7B-Instruct", "node_id": n,
                    "node_ip": f"10.0.0.{n[-1]}", "runtime_env": env} for n in ("n1", "n2")]
    assert [r["node_id"] for r in find_replicas(_details(), "Qwen/Qwen3-VL-8B-Instruct")] == ["n2"]
    assert find_replicas(_details(), "minilm") == [] and find_replicas({}, "x") == []


def test_common_versions_only_when_the_answering_nodes_agree():
    a = {"vllm": "0.29.0", "torch": "2.13.0", "transformers": "5.24.0", "ray": "2.60.0", "cuda": "12.9"}
    assert common_versions([{"node_id": "n1", **a, "gpu": "NVIDIA H100"}, {"node_id": "n2", "unknown": "late"}]) == a
    assert list(common_versions([a])) == ["vllm", "torch", "transformers", "ray", "cuda"]
    assert common_versions([a, {**a, "torch": "2.12.0"}]) is None
    assert common_versions([{"unknown": "late"}]) is None and common_versions([]) is None


def test_unknown_when_this_process_has_no_ray(monkeypatch):
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    got = replica_stack("Qwen/Qwen2.5-VL-7B-Instruct")
    assert list(got) == ["unknown"] and "not connected to a Ray cluster" in got["unknown"]


def test_deployment_names_follow_the_installed_ray_serve_llm_builder():
    """ray.serve.llm names a model's deployment ``<ServerClass>:<name>``: run the installed Ray's own
    naming function (read from its source: importing it needs vLLM) against ours."""
    import ast
    import importlib.util
    import types
    from pathlib import Path

    ray_dir = Path(importlib.util.find_spec("ray").origin).parent
    src = (ray_dir / "llm/_internal/serve/core/server/builder.py").read_text()
    tree = ast.parse(src)
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_get_deployment_name"]
    fn.returns, fn.args.args[0].annotation = None, None
    scope: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "builder.py", "exec"), scope)
    for model in ("Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen3-VL-8B-Instruct", "org/m.v1.2"):
        assert scope["_get_deployment_name"](types.SimpleNamespace(model_id=model)) == llm_deployment_name(model)
    assert 'name_prefix = name_prefix or f"{deployment_cls.__name__}:"' in src  # matched as ":<name>"


def test_serving_record_asks_the_replicas_only_when_the_server_reports_no_versions():
    from vismem.serve.versions import serving_record

    spec = {"name": "openai", "args": {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "label": "qwen2.5-vl-7b",
                                       "base_url": "http://gw:8000/v1", "api_key_env": "VISMEM_VLM_API_KEY"}}
    listed = lambda base: {"data": [{"id": "Qwen/Qwen2.5-VL-7B-Instruct"}]}  # noqa: E731 - the gateway: no versions
    asked: list = []
    v = {"vllm": "0.29.0", "torch": "2.13.0", "transformers": "5.24.0", "ray": "2.60.0", "cuda": "12.9"}
    found = {"source": "replica-node task", "deployments": ["vllm/LLMServer:Qwen--Qwen2_5-VL-7B-Instruct"],
             "nodes": [{"node_id": "n1", **v, "gpu": "NVIDIA H100 80GB HBM3"}], "versions": v}
    rec = serving_record(spec, listed, lambda base, m: asked.append((base, m)) or found)
    assert asked == [("http://gw:8000/v1", "Qwen/Qwen2.5-VL-7B-Instruct")]
    assert rec["versions"] == v and rec["versions_source"] == "replica-node task" and rec["batch_invariant"] is True
    assert rec["replicas"] == {"deployments": found["deployments"], "nodes": found["nodes"]}

    def broken(base, m):
        raise RuntimeError("boom")

    rec = serving_record(spec, listed, broken)  # never raises into the run
    assert rec["versions"] is None and rec["versions_source"] == "unknown: RuntimeError: boom" and "replicas" not in rec
    reported = lambda base: {"data": [{"id": "Qwen/Qwen2.5-VL-7B-Instruct", "vismem": {"versions": v}}]}  # noqa: E731
    assert serving_record(spec, reported, broken)["versions"] == v  # a replica that reports is not asked
