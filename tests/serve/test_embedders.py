"""Embedders: real MiniLM (packaged weights) and the Qwen3-VL-Embedding / SigLIP-2 code paths on
tiny random checkpoints built offline."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vismem.serve.build import build_embedder
from vismem.serve.embed import Embedder
from vismem.serve.embedders.qwen3vl import (DOCUMENT_INSTRUCTION, QUERY_INSTRUCTION, embedding_conversation,
                                     last_token_pool)
from tests.serve.conftest import png


def _unit_rows(x: np.ndarray, n: int, dim: int) -> None:
    assert x.shape == (n, dim) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def minilm():
    return build_embedder("minilm")


def test_minilm_real_model_semantics(minilm):
    assert isinstance(minilm, Embedder) and minilm.dim == 384
    v = minilm.embed_texts(["A red armchair in a living room.", "A crimson chair in the lounge.",
                            "Quarterly tax filing deadline."])
    _unit_rows(v, 3, 384)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # paraphrase closer than an unrelated sentence
    np.testing.assert_allclose(minilm.embed_texts(["A red armchair in a living room."])[0], v[0], atol=1e-5)
    assert minilm.embed_texts([]).shape == (0, 384)
    with pytest.raises(NotImplementedError):
        minilm.embed_images([png("red")])


def test_last_token_pool_handles_left_and_right_padding():
    hidden = torch.arange(2 * 4 * 1, dtype=torch.float32).reshape(2, 4, 1)
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    assert last_token_pool(hidden, right)[:, 0].tolist() == [1.0, 7.0]
    assert last_token_pool(hidden, left)[:, 0].tolist() == [3.0, 7.0]


@pytest.fixture(scope="module")
def qwen_embedder(tmp_path_factory):
    from vismem.serve.testing import build_tiny_qwen3vl

    path = build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny-q3emb"), embedding=True)
    return build_embedder({"name": "qwen3-vl-embedding", "args": {"path": str(path), "batch_size": 2}})


def test_qwen3vl_embedding_shapes_norms_determinism(qwen_embedder):
    e = qwen_embedder
    assert isinstance(e, Embedder) and e.dim == 64 and e.name.startswith("qwen3-vl-embedding:")
    texts = ["hello", "a red chair is next to the lamp in the image", "hello"]
    docs = e.embed_texts(texts)  # batch_size 2 → two forward passes, with padding
    _unit_rows(docs, 3, 64)
    np.testing.assert_allclose(docs[0], docs[2], atol=1e-5)  # padding never leaks into the pooled token
    np.testing.assert_allclose(e.embed_texts(["hello"])[0], docs[0], atol=1e-5)
    np.testing.assert_allclose(e.embed_texts(texts), docs, atol=1e-6)  # deterministic


def test_qwen3vl_embedding_instructions_and_images(qwen_embedder):
    e = qwen_embedder
    conv = e.inputs.render(embedding_conversation("q", 1, QUERY_INSTRUCTION))
    assert conv.startswith(f"<|im_start|>system\n{QUERY_INSTRUCTION}<|im_end|>\n<|im_start|>user\n<|vision_start|>")
    assert conv.endswith("q<|im_end|>\n<|im_start|>assistant\n")
    q, d = e.embed_queries(["hello"]), e.embed_texts(["hello"])
    assert not np.allclose(q, d)  # query vs document instruction changes the vector
    imgs = e.embed_images([png("red"), png("blue", (64, 48)), png("red")])
    _unit_rows(imgs, 3, 64)
    np.testing.assert_allclose(imgs[0], imgs[2], atol=1e-5)
    assert not np.allclose(imgs[0], imgs[1])
    paired = e.embed_images([png("red")], ["a red square"])
    assert not np.allclose(paired[0], imgs[0])  # the paired text is part of the input
    with pytest.raises(ValueError):
        e.embed_images([png("red")], ["a", "b"])
    assert DOCUMENT_INSTRUCTION == "Represent the user's input."


def test_qwen3vl_embedding_matryoshka_dim(tmp_path):
    from vismem.serve.testing import build_tiny_qwen3vl

    path = build_tiny_qwen3vl(tmp_path / "m", embedding=True)
    full = build_embedder({"name": "qwen3-vl-embedding", "args": {"path": str(path)}})
    short = build_embedder({"name": "qwen3-vl-embedding", "args": {"path": str(path), "dim": 16}})
    a, b = full.embed_texts(["x y z"]), short.embed_texts(["x y z"])
    _unit_rows(b, 1, 16)
    np.testing.assert_allclose(b[0], a[0, :16] / np.linalg.norm(a[0, :16]), atol=1e-5)


def test_siglip2_tiny_model(tmp_path):
    from vismem.serve.testing import build_tiny_siglip2

    e = build_embedder({"name": "siglip2", "args": {"path": str(build_tiny_siglip2(tmp_path / "s"))}})
    assert e.name.startswith("siglip2:") and e.dim == 32
    t = e.embed_texts(["a red chair", "a blue lamp", "a red chair"])
    _unit_rows(t, 3, 32)
    np.testing.assert_allclose(t[0], t[2], atol=1e-5)
    i = e.embed_images([png("red"), png("blue", (64, 64))])
    _unit_rows(i, 2, 32)
    assert not np.allclose(i[0], i[1])


def test_embeddings_over_http_match_in_process(qwen_embedder):
    from vismem.serve.openai_server import LocalOpenAIServer
    from vismem.serve.vlm import VLMError

    with LocalOpenAIServer(embedder=qwen_embedder) as srv:
        client = build_embedder({"name": "openai-embed", "args": {
            "model": srv.model_id, "base_url": srv.base_url, "api_key_env": None, "batch_size": 2}})
        assert client.dim == 64
        texts = ["hello", "a red chair", "third"]
        np.testing.assert_allclose(client.embed_texts(texts), qwen_embedder.embed_texts(texts), atol=1e-5)
        np.testing.assert_allclose(client.embed_queries(["hello"]), qwen_embedder.embed_queries(["hello"]),
                                   atol=1e-5)
        imgs = [png("red"), png("blue", (64, 48))]
        np.testing.assert_allclose(client.embed_images(imgs, ["a", "b"]),
                                   qwen_embedder.embed_images(imgs, ["a", "b"]), atol=1e-5)
        with pytest.raises(VLMError) as ei:  # the server hosts no chat model
            build_embedder({"name": "openai-embed", "args": {"model": "m", "base_url": srv.base_url + "/nope",
                                                             "max_retries": 0}}).embed_texts(["x"])
        assert ei.value.reason == "http_404"
