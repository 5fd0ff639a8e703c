"""The project's vLLM pooling embedders on the real CPU engine: Qwen3-VL-Embedding (last-token
``embed``) and Jina-Embeddings-v4 (``token_embed`` + the model card's mean pooling), texts, queries
and images, built from their model YAMLs; each gives the vectors its transformers runner gives on the
same tiny checkpoint, so what the CPU tests measure on the transformers runner is what the cluster
computes on vLLM."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vismem.serve.build import build_embedder
from tests.engine.conftest import png

TEXTS = ["a red baseball cap on a walnut side table", "Caroline went to the LGBTQ support group."]


@pytest.mark.parametrize("variant", ["tiny-qwen3-vl-embedding-vllm", "tiny-jina-embeddings-v4-vllm"])
def test_pooling_embedder_on_vllm_gives_the_transformers_runners_vectors(variant, tiny_dir):
    from vismem.serve.models import load_model_spec

    engine = build_embedder(variant)
    assert engine.runner == "vllm" and engine.stand_in
    images = [Image.open(io.BytesIO(png(c, (64 + 32 * i, 64)))) for i, c in enumerate(("red", "blue"))]
    got = {"texts": engine.embed_texts(TEXTS), "queries": engine.embed_queries(TEXTS[:1]),
           "images": engine.embed_images(images)}
    for name, v in got.items():
        assert v.dtype == np.float32 and v.shape[1] == engine.dim and np.isfinite(v).all(), name
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4), name
    assert not np.allclose(got["texts"][0], got["texts"][1])  # inputs are told apart

    spec = load_model_spec(variant).spec
    ref = build_embedder({**spec, "args": {**spec["args"], "runner": "transformers", "dtype": "float32"}})
    want = {"texts": ref.embed_texts(TEXTS), "queries": ref.embed_queries(TEXTS[:1]), "images": ref.embed_images(images)}
    for name in got:
        cos = (got[name] * want[name]).sum(axis=1)
        assert (cos > 0.999).all(), f"{variant} {name}: vLLM vs transformers cosine {cos}"
