"""The CPU engine profile (``deploy.device: cpu``) as configs, without vLLM: what the engine tier
(tests/engine, the real vLLM CPU build) runs, checked here by Ray's own validators on every run of the
default suite."""

from __future__ import annotations

import pytest

from vismem.core.errors import ConfigError
from vismem.serve.deploy import engine_env, llm_config, serve_config
from vismem.serve.hosting import DeploySettings, deployable
from vismem.serve.registry import registered
from vismem.serve.vllm_cpu import CPU_ENGINE_ENV, GPU_ONLY_ENV, cpu_env

CPU_VLMS = ("tiny-qwen2.5-vl-vllm", "tiny-qwen3-vl-vllm")


@pytest.mark.parametrize("name", CPU_VLMS)
def test_a_cpu_variant_asks_ray_for_no_gpu_and_its_engine_gets_the_cpu_builds_env(name):
    d = deployable(name, registered())
    assert d.settings.device == "cpu" and d.settings.accelerator_type is None
    conf = llm_config(d)
    assert conf["accelerator_config"] == {"kind": "cpu"} and "accelerator_type" not in conf
    assert conf["deployment_config"]["ray_actor_options"] == {"num_cpus": d.settings.num_cpus}
    assert conf["model_loading_config"]["model_source"].startswith("tiny:")  # built on the node, not synced
    env = conf["runtime_env"]["env_vars"]
    assert env["VLLM_MLA_DISABLE"] == "1" and env["VLLM_HOST_IP"] == "127.0.0.1"
    cfg = serve_config([name], host="127.0.0.1", port=8000)  # Ray Serve's own schema validates it
    [app] = cfg["applications"]
    assert app["args"]["ingress_deployment_config"] == {"ray_actor_options": {"num_cpus": 0.25}}


def test_gpu_variants_keep_their_env_and_gateway_while_cpu_drops_gpu_only_flags():
    gpu = deployable("qwen2.5-vl-7b", registered(), env={})
    assert engine_env(gpu) == {"VLLM_BATCH_INVARIANT": "1"} and "accelerator_config" not in llm_config(gpu)
    assert "ingress_deployment_config" not in serve_config(["qwen2.5-vl-7b"], env={})["applications"][0]["args"]
    assert cpu_env({"VLLM_BATCH_INVARIANT": "1", "X": "y"}) == {"X": "y", **CPU_ENGINE_ENV}
    assert set(GPU_ONLY_ENV).isdisjoint(cpu_env({k: "1" for k in GPU_ONLY_ENV}))
    with pytest.raises(ConfigError, match="device cpu with accelerator_type 'H100'"):
        deployable("tiny-qwen2.5-vl-vllm", registered(), overrides={"accelerator_type": "H100"})
    with pytest.raises(ValueError):
        DeploySettings(device="tpu")


def test_the_in_job_cpu_engine_processor_passes_rays_validator_with_small_stages(tmp_path, monkeypatch):
    from vismem.pipelines.memshot.processors import (CPU_ENGINE_BUNDLES, CPU_STAGE_CPUS, cpu_map_kwargs,
                                                     engine_processor_config)

    monkeypatch.setenv("VISMEM_TINY_DIR", str(tmp_path))  # the tiny source is built where the job runs
    cfg = engine_processor_config("tiny-qwen3-vl-vllm", env={})
    assert cfg.accelerator_type is None and cfg.model_source.startswith(str(tmp_path))
    assert [{k: v for k, v in b.items() if v} for b in cfg.placement_group_config["bundles"]] == \
        CPU_ENGINE_BUNDLES["bundles"]  # one CPU, no GPU
    for stage in ("chat_template_stage", "tokenize_stage", "detokenize_stage", "prepare_multimodal_stage"):
        got = getattr(cfg, stage)
        got = got if isinstance(got, dict) else got.model_dump()
        assert got["num_cpus"] == CPU_STAGE_CPUS, stage
    assert "VLLM_BATCH_INVARIANT" not in cfg.runtime_env["env_vars"]
    assert cpu_map_kwargs("tiny-qwen3-vl-vllm")["preprocess_map_kwargs"] == {"num_cpus": CPU_STAGE_CPUS}
    assert cpu_map_kwargs("qwen3-vl-8b") == {}  # a GPU engine keeps Ray's defaults
    gpu = engine_processor_config("qwen3-vl-8b", env={})
    assert gpu.accelerator_type == "H100" and gpu.runtime_env["env_vars"]["VLLM_BATCH_INVARIANT"] == "1"


def test_tiny_sources_are_built_on_the_node_and_never_reach_gpu_manifests(tmp_path, monkeypatch):
    from vismem.pipelines.kuberay import served_models
    from vismem.serve.weights import node_model_source, weights_of

    assert weights_of("tiny-qwen2.5-vl-vllm") is None  # nothing to `weights sync`
    monkeypatch.setenv("VISMEM_TINY_DIR", str(tmp_path))
    path = node_model_source("tiny:qwen2.5-vl")
    assert path.startswith(str(tmp_path)) and (tmp_path / path.rsplit("/", 1)[-1] / "config.json").is_file()
    assert node_model_source("${VISMEM_NOPE:-/models}/x", env={}) == "/models/x"
    served = served_models()
    assert "qwen2.5-vl-7b" in served and not [m for m in served if m.startswith("tiny-")]
