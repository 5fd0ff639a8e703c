"""MemShot's second multimodal retriever (Jina-Embeddings-v4, Fig. 4b): its pooling on hand-made
arrays, and the whole loading path on the tiny random Qwen2.5-VL (the real weights are cluster-only)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vismem.serve.embedders.jina import IMAGE_PROMPT, pool_mean


def test_pool_mean_text_rows_and_vision_span():
    h = np.arange(2 * 5 * 2, dtype=np.float32).reshape(2, 5, 2)
    ids = np.array([[1, 2, 3, 0, 0], [7, 90, 4, 91, 8]])
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    out = pool_mean(h, ids, mask, start_id=90, end_id=91)
    assert np.allclose(out[0], h[0, :3].mean(axis=0))      # text: attended tokens only (padding out)
    assert np.allclose(out[1], h[1, 1:4].mean(axis=0))     # image: <|vision_start|> .. <|vision_end|>


@pytest.mark.filterwarnings("ignore")
def test_tiny_jina_v4_through_the_registry():
    from vismem.serve.build import build_embedder
    from vismem.serve.embed import embed_queries
    from vismem.serve.registry import EMBEDDERS

    spec = EMBEDDERS.resolve({"model": "tiny-jina-embeddings-v4"})
    assert spec["name"] == "jina-embeddings-v4" and EMBEDDERS.is_stand_in(spec)
    real = EMBEDDERS.resolve({"model": "jina-embeddings-v4"})
    assert real["args"]["path"].endswith("jina-embeddings-v4-vllm-retrieval") and not EMBEDDERS.is_stand_in(real)
    emb = build_embedder(spec)
    texts = emb.embed_texts(["Caroline went to a support group.", "Melanie painted a sunrise."])
    queries = embed_queries(emb, ["Caroline went to a support group."])
    buf = io.BytesIO()
    Image.new("RGB", (96, 64), (37, 99, 235)).save(buf, "PNG")
    shots = emb.embed_images([buf.getvalue(), buf.getvalue()])
    for v in (texts, queries, shots):
        assert v.dtype == np.float32 and v.shape[1] == emb.dim and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert np.allclose(shots[0], shots[1], atol=1e-5)  # deterministic
    # the Query:/Passage: prefixes make a query differ from the same text as a document
    assert not np.allclose(texts[0], queries[0], atol=1e-4)
    assert "<|vision_start|><|image_pad|><|vision_end|>" in IMAGE_PROMPT
