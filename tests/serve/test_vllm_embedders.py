"""The embedders' vLLM runner against a stand-in engine (vLLM is not installed here): the 0.29 API
(pooler config, ``pooling_task``), the same image bounds as the transformers runner, and one
engine call at a time however many Serve request threads call in."""

from __future__ import annotations

import sys
import threading
import time
import types

import numpy as np
import pytest
from PIL import Image

from vismem.serve.build import build_embedder
from vismem.serve.embedders.qwen3vl import DOCUMENT_INSTRUCTION, QUERY_INSTRUCTION
from tests.serve.conftest import png

HIDDEN = 64


class FakeEngine:
    """Records what an embedder asks of ``vllm.LLM`` and whether two threads were inside at once."""

    def __init__(self) -> None:
        self.init: dict = {}
        self.prompts: list = []
        self.calls: list = []
        self.inside = 0
        self.overlapped = False
        self._count = threading.Lock()

    def _enter(self) -> None:
        with self._count:
            self.inside += 1
            self.overlapped |= self.inside > 1
        time.sleep(0.02)  # wide enough for an unserialised caller to be caught inside

    def _leave(self) -> None:
        with self._count:
            self.inside -= 1

    def llm_class(self):
        engine = self

        class LLM:
            def __init__(self, model, **kw):
                engine.init = {"model": model, **kw}

            def embed(self, prompts, *, use_tqdm=True, **kw):
                engine._enter()
                try:
                    engine.calls.append(("embed", kw))
                    engine.prompts.extend(prompts)
                    out = types.SimpleNamespace
                    return [out(outputs=out(embedding=[3.0, 4.0] + [0.0] * (HIDDEN - 2))) for _ in prompts]
                finally:
                    engine._leave()

            def encode(self, prompts, pooling_params=None, *, use_tqdm=True, pooling_task=None, **kw):
                if pooling_task is None:  # vLLM 0.29 refuses it too
                    raise ValueError("pooling_task required for `LLM.encode`")
                engine._enter()
                try:
                    engine.calls.append(("encode", {"pooling_task": pooling_task, **kw}))
                    engine.prompts.extend(prompts)
                    out = types.SimpleNamespace
                    hidden = np.eye(3, HIDDEN, dtype=np.float32) * 2.0  # 3 tokens, no vision span
                    return [out(prompt_token_ids=[11, 12, 13], outputs=out(data=hidden)) for _ in prompts]
                finally:
                    engine._leave()

        return LLM


class PoolerConfig:
    """vLLM 0.29's pooler config takes keywords only and refuses the removed ``normalize``."""

    def __init__(self, **kw):
        if "normalize" in kw:
            raise ValueError("Parameter `normalize` was removed; use `use_activation` instead.")
        self.kw = kw


@pytest.fixture
def engine(monkeypatch) -> FakeEngine:
    fake = FakeEngine()
    vllm = types.ModuleType("vllm")
    vllm.LLM = fake.llm_class()
    config = types.ModuleType("vllm.config")
    config.PoolerConfig = PoolerConfig
    vllm.config = config
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.config", config)
    return fake


def _processor_bounds(embedder) -> tuple[int, int]:
    size = embedder.inputs.image_processor.size
    return int(size.shortest_edge), int(size.longest_edge)


def test_qwen3vl_vllm_runner_prompts_with_a_stand_in_engine(tmp_path, engine):
    """Chat-template prompts with one ``<|image_pad|>`` per image (vLLM expands them), PIL images
    in ``multi_modal_data``, the pooling runner with a last-token pooler, re-normalised output."""
    from vismem.serve.testing import build_tiny_qwen3vl

    path = build_tiny_qwen3vl(tmp_path / "v", embedding=True)
    e = build_embedder({"name": "qwen3-vl-embedding", "args": {"path": str(path), "runner": "vllm",
                                                               "max_pixels": 32 * 32 * 9,
                                                               "vllm_kwargs": {"max_model_len": 4096}}})
    init = engine.init
    assert init["runner"] == "pooling" and init["max_model_len"] == 4096
    assert init["pooler_config"].kw == {"task": "embed", "pooling_type": "LAST"}
    # the vLLM processor gets exactly the bounds the transformers processor uses
    assert init["mm_processor_kwargs"] == {"min_pixels": 4 * 32 * 32, "max_pixels": 32 * 32 * 9}
    assert tuple(init["mm_processor_kwargs"].values()) == _processor_bounds(e)
    assert e.dim == 64
    v = e.embed_images([png("red")], ["caption"])
    np.testing.assert_allclose(v[0, :2], [0.6, 0.8], atol=1e-6)
    (p,) = engine.prompts
    assert p["prompt"].count("<|image_pad|>") == 1 and DOCUMENT_INSTRUCTION in p["prompt"]
    assert "<|vision_end|>caption<|im_end|>" in p["prompt"]
    assert isinstance(p["multi_modal_data"]["image"][0], Image.Image)
    e.embed_queries(["where?"])
    assert QUERY_INSTRUCTION in engine.prompts[-1]["prompt"] and "multi_modal_data" not in engine.prompts[-1]


def test_jina_vllm_runner_uses_the_029_pooling_api(engine):
    """Every token's hidden state (``token_embed`` task, ``ALL`` pooling, no activation) from
    ``encode(..., pooling_task=...)``, mean-pooled here; images bounded as on transformers."""
    e = build_embedder({"name": "jina-embeddings-v4", "args": {"path": "tiny:qwen2.5-vl", "runner": "vllm",
                                                               "min_pixels": 28 * 28 * 2}})
    init = engine.init
    assert init["pooler_config"].kw == {"task": "token_embed", "pooling_type": "ALL", "use_activation": False}
    assert init["mm_processor_kwargs"] == {"min_pixels": 28 * 28 * 2, "max_pixels": 602_112}
    assert tuple(init["mm_processor_kwargs"].values()) == _processor_bounds(e)
    v = e.embed_texts(["a shelf"])
    assert engine.calls == [("encode", {"pooling_task": "token_embed"})]
    np.testing.assert_allclose(v[0, :4], [3 ** -0.5] * 3 + [0.0], atol=1e-6)  # mean of 3 tokens, normalised
    assert engine.prompts[0] == {"prompt": "Passage: a shelf"}
    e.embed_images([png("blue")])
    assert isinstance(engine.prompts[-1]["multi_modal_data"]["image"], Image.Image)


@pytest.mark.parametrize("spec", [
    {"name": "qwen3-vl-embedding", "args": {"path": "tiny:qwen3-vl-embedding", "runner": "vllm", "batch_size": 1}},
    {"name": "jina-embeddings-v4", "args": {"path": "tiny:qwen2.5-vl", "runner": "vllm", "batch_size": 1}},
])
def test_vllm_runner_serialises_concurrent_requests(engine, spec):
    """Serve runs a replica's requests in threads; the offline engine sees one call at a time."""
    e = build_embedder(spec)
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            e.embed_texts([f"text {i}", f"more {i}"])
        except BaseException as err:  # noqa: BLE001 - surfaced below
            errors.append(err)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(engine.calls) == 12
    assert not engine.overlapped, "two request threads were inside vllm.LLM at once"
