"""Model variants as data: every YAML validates and names a registered backend; local ones build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from vismem.serve.build import build_model
from vismem.serve.models import expand_env, list_models, load_model_spec
from vismem.serve.registry import EMBEDDERS, VLMS
from vismem.serve.vlm import Message

PAPER_MODELS = {"qwen3-vl-2b", "qwen3-vl-8b", "qwen3-vl-32b", "qwen2.5-vl-7b", "gemini-2.5-flash", "glm-5",
                "qwen3-vl-embedding-8b", "minilm", "siglip2-base", "clip-vit-b32"}


def test_every_spec_validates_and_names_a_registered_backend():
    names = list_models()
    assert PAPER_MODELS | {"tiny-qwen2.5-vl", "tiny-qwen3-vl", "tiny-qwen3-vl-embedding", "gpt-4o"} <= set(names)
    for n in names:
        spec = load_model_spec(n)
        registry = VLMS if spec.kind == "vlm" else EMBEDDERS
        assert spec.name in registry, f"{n}: backend {spec.name!r} is not registered"
        json.dumps(spec.spec)  # manifest-serialisable
    assert set(list_models("vlm")).isdisjoint(list_models("embedder"))
    with pytest.raises(KeyError, match="unknown model"):
        load_model_spec("no-such-model")


def test_env_expansion_points_a_spec_at_another_endpoint():
    spec = load_model_spec("qwen2.5-vl-7b", env={"VISMEM_VLM_BASE_URL": "http://head:8000/v1"})
    assert spec.args["base_url"] == "http://head:8000/v1"
    assert load_model_spec("qwen2.5-vl-7b", env={}).args["base_url"] == "http://127.0.0.1:8000/v1"
    with pytest.raises(KeyError, match="NOPE"):
        expand_env("${NOPE}", {})
    client = build_model(spec)  # an HTTP client: builds without a server
    assert client.name == "openai:qwen2.5-vl-7b" and client.model == "Qwen/Qwen2.5-VL-7B-Instruct"


def test_local_specs_build_and_run(tmp_path, monkeypatch):
    monkeypatch.setenv("VISMEM_TINY_DIR", str(tmp_path / "tiny"))
    vlm = build_model("tiny-qwen2.5-vl")
    assert vlm.name == "transformers:tiny-qwen2.5-vl"
    assert isinstance(vlm.chat([Message("user", "hi")], max_tokens=2).text, str)
    emb = build_model("tiny-qwen3-vl-embedding")
    assert emb.dim == 64 and emb.embed_texts(["a"]).shape == (1, 64)
    again = build_model("tiny-qwen3-vl-embedding")  # cached checkpoint, same weights
    np.testing.assert_allclose(again.embed_texts(["a"]), emb.embed_texts(["a"]), atol=1e-6)
    assert build_model("scripted-echo").chat([Message("user", "ping")]).text == "ping"


def test_openai_server_module_serves_a_model_spec():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "vismem.serve.openai_server", "--model-spec", "scripted-echo"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving scripted:echo on http://127.0.0.1:"), line + proc.stderr.read()
        base_url = line.split(" on ")[1].strip()
        r = httpx.post(base_url + "/chat/completions", timeout=10,
                       json={"model": "x", "messages": [{"role": "user", "content": "over HTTP"}]})
        assert r.json()["choices"][0]["message"]["content"] == "over HTTP"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run([sys.executable, "-m", "vismem.serve.openai_server", "--backend", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown vlm 'nope'" in bad.stderr
