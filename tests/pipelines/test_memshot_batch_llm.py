"""The in-job vLLM engine of MemShot answers (``batch_llm.engine_processor_config``): the weights and
environment of the served deployment of the same model, in Ray's own ``vLLMEngineProcessorConfig``
(CPU only: nothing is loaded or downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vismem.core.errors import ConfigError
from vismem.pipelines.config import load_config
from vismem.pipelines.memshot.batch_llm import engine_processor_config
from vismem.serve.models import list_models, load_model_spec

VLLM_MODELS = [m for m in list_models() if (load_model_spec(m, env={}).deploy or {}).get("engine") == "vllm"]
#: vLLM 0.29.0's environment variable names (the committed extract of the pinned wheel).
VLLM_ENV_NAMES = set(json.loads((Path(__file__).parents[1] / "serve" / "vllm_api.json").read_text())["env_vars"])


@pytest.mark.parametrize("root, source, offline", [
    ("${VISMEM_MODELS_DIR:-/models}", "/mnt/weights/Qwen3-VL-8B-Instruct", True),  # the cluster's models dir
    ("s3://bucket/models/", "s3://bucket/models/Qwen3-VL-8B-Instruct", True),
    ("hub", "Qwen/Qwen3-VL-8B-Instruct", False),
])
def test_the_in_job_engine_loads_the_synced_weights_batch_invariantly(root, source, offline):
    from ray.data.llm import vLLMEngineProcessorConfig

    cfg = engine_processor_config("qwen3-vl-8b", weights=root, concurrency=2, batch_size=8,
                                  env={"VISMEM_MODELS_DIR": "/mnt/weights"})
    assert isinstance(cfg, vLLMEngineProcessorConfig)  # built and validated by Ray's own model
    assert cfg.model_source == source
    env = cfg.runtime_env["env_vars"]
    assert env["VLLM_BATCH_INVARIANT"] == "1"
    assert {k for k in env if k.startswith("VLLM_")} <= VLLM_ENV_NAMES
    assert (env.get("HF_HUB_OFFLINE") == "1") is offline  # synced weights: nothing fetched from the hub
    assert cfg.prepare_multimodal_stage and cfg.engine_kwargs["mm_processor_kwargs"]["max_pixels"] > 0
    assert cfg.accelerator_type == "H100" and cfg.batch_size == 8 and cfg.should_continue_on_error


def test_the_default_root_is_the_cluster_models_dir_expanded_where_the_job_runs(monkeypatch):
    monkeypatch.setenv("VISMEM_MODELS_DIR", "/srv/vismem-models")
    assert engine_processor_config("qwen2.5-vl-7b").model_source == "/srv/vismem-models/Qwen2.5-VL-7B-Instruct"
    monkeypatch.delenv("VISMEM_MODELS_DIR")
    assert engine_processor_config("qwen2.5-vl-7b").model_source == "/models/Qwen2.5-VL-7B-Instruct"
    with pytest.raises(ConfigError, match="weights root 'models'"):
        engine_processor_config("qwen2.5-vl-7b", weights="models")


@pytest.mark.parametrize("model", VLLM_MODELS)
@pytest.mark.parametrize("root", ["${VISMEM_MODELS_DIR:-/models}", "s3://bucket/models", "hub"])
def test_served_and_in_job_engines_load_the_same_weights_with_the_same_engine_env(model, root, monkeypatch,
                                                                                  tmp_path):
    """What `vismem serve up --weights ROOT` deploys and what a job's own engine loads agree for
    every vLLM model YAML: the same weights (paths expanded on the node as the app builder does)
    and the same environment (batch-invariant on GPU engines; a CPU engine's tiny model is built on
    the node and runs without it)."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    from vismem.serve.apps import node_llm_configs
    from vismem.serve.deploy import llm_config
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered

    monkeypatch.setenv("VISMEM_MODELS_DIR", "/mnt/weights")
    monkeypatch.setenv("VISMEM_TINY_DIR", str(tmp_path))
    d = deployable(model, registered())
    cpu = d.settings.device == "cpu"
    (served,) = node_llm_configs([llm_config(d, root)])
    served = LLMConfig(**served)
    in_job = engine_processor_config(model, weights=root)
    assert in_job.model_source == served.model_loading_config.model_source
    served_env = served.runtime_env["env_vars"]
    assert {k: v for k, v in in_job.runtime_env["env_vars"].items() if k != "HF_HUB_OFFLINE"} == served_env
    assert in_job.engine_kwargs.items() >= served.engine_kwargs.items()
    if cpu:  # a tiny model built on the node, whatever the weights root; no GPU-only kernels
        assert in_job.model_source.startswith(str(tmp_path)) and "VLLM_BATCH_INVARIANT" not in served_env
        return
    assert in_job.model_source.endswith(served.model_loading_config.model_id.split("/")[-1])
    assert served_env.get("VLLM_BATCH_INVARIANT") == "1"
    pg = in_job.placement_group_config  # Ray's validated form of the same dict
    assert (pg and {"strategy": pg["strategy"], "bundle_per_worker": {"GPU": pg["bundle_per_worker"]["GPU"]}}) \
        == served.placement_group_config


def test_the_run_config_names_the_in_job_weights_root_outside_the_run_id():
    base = load_config(preset="paper")
    assert base.memshot.engine_weights == "${VISMEM_MODELS_DIR:-/models}"
    s3 = load_config(preset="paper", overrides={"memshot": {"engine_weights": "s3://bucket/models/"}})
    assert s3.memshot.engine_weights == "s3://bucket/models" and s3.run_id == base.run_id
    cfg = engine_processor_config("qwen3-vl-8b", weights=s3.memshot.engine_weights)
    assert cfg.model_source == "s3://bucket/models/Qwen3-VL-8B-Instruct"
    with pytest.raises(ConfigError, match=r"memshot\.engine_weights: weights root 'bucket/models'"):
        load_config(preset="paper", overrides={"memshot": {"engine_weights": "bucket/models"}})


def test_with_an_s3_root_the_cpu_tokenizer_stages_fetch_the_synced_tokenizer_files_only(s3_server, tmp_path,
                                                                                        monkeypatch):
    """Ray's tokenize stage, built as the processor builds it from the in-job engine's config, over
    weights `vismem weights sync` put on the local S3 server: it copies only the tokenizer files
    (what the chat-template and detokenize stages fetch too) into the node's HF cache, with the
    engine's environment (HF hub offline), and tokenizes with them."""
    import asyncio
    import shutil

    import huggingface_hub.constants as hf
    from ray.llm._internal.batch.stages.tokenize_stage import TokenizeUDF
    from ray.llm._internal.common.utils.download_utils import NodeModelDownloadable, download_model_files
    from transformers import AutoTokenizer

    from vismem.pipelines.commands import weights as W
    from vismem.serve.testing import tiny_model_path

    # The tiny Qwen3-VL checkpoint stands in for Qwen3-VL-8B's synced folder (tokenizer, chat
    # template, processor and model configs, and weights).
    for k, v in s3_server.env().items():  # the node's own credentials and endpoint
        monkeypatch.setenv(k, v)
    (w,) = [w for w in W.needed_weights(load_config(preset="paper")) if w.variant == "qwen3-vl-8b"]
    shutil.copytree(tiny_model_path("qwen3-vl"), tmp_path / "src" / w.folder)
    root = f"s3://vismem-test/engine-weights-{tmp_path.name}"
    W.sync([w], root, source=tmp_path / "src", log=lambda _l: None)

    cfg = engine_processor_config("qwen3-vl-8b", weights=root)
    for k, v in {**cfg.runtime_env["env_vars"], "HOME": str(tmp_path / "home"),
                 "TORCH_HOME": str(tmp_path / "torch")}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(hf, "HF_HUB_CACHE", str(tmp_path / "hf"))  # the node's HF cache
    (tmp_path / "home").mkdir()

    stage = TokenizeUDF(data_column="__data", expected_input_keys=["prompt"], model=cfg.model_source)

    async def tokenize(prompts):
        return [r async for r in stage.udf([{stage.IDX_IN_BATCH_COLUMN: i, "prompt": p}
                                           for i, p in enumerate(prompts)])]

    local = tiny_model_path("qwen3-vl")
    expected = AutoTokenizer.from_pretrained(str(local))("which shop sold the red kettle?")["input_ids"]
    (row,) = asyncio.run(tokenize(["which shop sold the red kettle?"]))
    assert row["tokenized_prompt"] == expected
    # What the chat-template stage reads (the same download): the tokenizer files, no weights.
    path = download_model_files(model_id=cfg.model_source, mirror_config=None,
                                download_model=NodeModelDownloadable.TOKENIZER_ONLY, download_extra_files=False)
    got = {p.name for p in Path(path).iterdir()}
    assert Path(path).is_relative_to(tmp_path / "hf")
    assert {"tokenizer.json", "tokenizer_config.json", "config.json", "preprocessor_config.json",
            "chat_template.jinja"} <= got and not any(n.endswith(".safetensors") for n in got)
    prompt = AutoTokenizer.from_pretrained(path).apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert prompt == AutoTokenizer.from_pretrained(str(local)).apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
