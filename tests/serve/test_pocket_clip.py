"""pocket-clip: the shipped weights load, embed deterministically, and retrieve catalogue products
by their cue phrase — from the cue, not from the product (cue-free images do not match)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

N_PRODUCTS = 50


@pytest.fixture(scope="module")
def emb():
    from vismem.serve.build import build_embedder

    return build_embedder({"name": "pocket-clip", "args": {}})


@pytest.fixture(scope="module")
def subset(data_dir):
    """A fixed subset: every 20th catalogue product (all ten categories), with and without cue."""
    from vismem.env.storefront.catalog import load_catalog
    from vismem.env.storefront.images.sources import ProceduralImageSource

    catalog = load_catalog(data_dir, seed=0)
    src = ProceduralImageSource(catalog, cache_items=0)
    picks = catalog.variants[:: len(catalog.variants) // N_PRODUCTS][:N_PRODUCTS]
    pairs = [src.get_pair(v.url_hash) for v in picks]
    phrases = [f"product with {v.cue_color} {src.depicted_object(v.url_hash)}" for v in picks]
    return [p[0] for p in pairs], [p[1] for p in pairs], phrases


def _ranks(q: np.ndarray, items: np.ndarray) -> np.ndarray:
    s = q @ items.T
    return (s > np.diag(s)[:, None]).sum(1)


def test_registered_stand_in_with_small_committed_weights(emb):
    from vismem.serve.embed import Embedder
    from vismem.serve.embedders import pocket
    from vismem.serve.registry import EMBEDDERS

    assert "pocket-clip" in EMBEDDERS.names() and isinstance(emb, Embedder)
    assert emb.stand_in is True and emb.stands_in_for == "siglip2-base-patch16-384"
    assert "stand-in" in emb.name and emb.spec["name"] == "pocket-clip"
    assert pocket.WEIGHTS.is_file() and pocket.WEIGHTS.stat().st_size <= 10 * 2**20
    assert emb.meta["format"] == "pocket-clip/2" and "total_s" in emb.meta["timings"]


def test_vectors_are_unit_float32_and_deterministic(emb, subset):
    cued, _, phrases = subset
    a = emb.embed_images(cued[:6])
    b = emb.embed_images([Image.open(io.BytesIO(x)) for x in cued[:6]])  # PIL input, same vectors
    assert a.dtype == np.float32 and a.shape == (6, emb.dim)
    assert np.array_equal(a, b) and np.array_equal(a, emb.embed_images(cued[:6]))
    t = emb.embed_texts(phrases[:3] + ["a chair", "product with red baseball cap CURRENT: /product/ab12cd34"])
    assert np.allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-5) and np.array_equal(t, emb.embed_texts(
        phrases[:3] + ["a chair", "product with red baseball cap CURRENT: /product/ab12cd34"]))
    assert emb.embed_texts([]).shape == (0, emb.dim) and emb.embed_images([]).shape == (0, emb.dim)
    assert np.allclose(emb.embed_queries(phrases[:2]), t[:2], atol=1e-6)  # batch size: last-bit noise only


def test_cue_phrases_retrieve_their_products(emb, subset):
    cued, _, phrases = subset
    ranks = _ranks(emb.embed_texts(phrases), emb.embed_images(cued))
    assert (ranks < 1).mean() >= 0.9 and (ranks < 5).mean() >= 0.96
    # the probe's URL tail does not break it
    tails = [f"{p} CURRENT: /product/deadbeef" for p in phrases]
    assert (_ranks(emb.embed_queries(tails), emb.embed_images(cued)) < 1).mean() >= 0.85


def test_cue_free_images_do_not_retrieve(emb, subset):
    cued, base, phrases = subset
    q = emb.embed_texts(phrases)
    assert (_ranks(q, emb.embed_images(base)) < 1).mean() <= 0.1  # chance is 1/50
    # the cue is what matches: each product's own photo scores above its cue-free twin
    own_cue = (q * emb.embed_images(cued)).sum(1)
    own_base = (q * emb.embed_images(base)).sum(1)
    assert (own_cue > own_base + 0.05).mean() >= 0.96


def test_pair_mean_and_errors(subset):
    from vismem.serve.embedders.pocket import PocketClipEmbedder

    with pytest.raises(ValueError):
        PocketClipEmbedder(pair="sum")
    with pytest.raises(FileNotFoundError):
        PocketClipEmbedder(weights="/nonexistent/pocket.safetensors")
    e = PocketClipEmbedder(pair="mean")
    cued, _, phrases = subset
    with pytest.raises(ValueError):
        e.embed_images(cued[:2], texts=phrases[:1])
    v = e.embed_images(cued[:2], texts=phrases[:2])
    assert v.shape == (2, e.dim) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
