"""Image sources behind the one ImageSource protocol: procedural (default) and official."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from vismem.env.storefront.imagesource import IMAGE_SOURCES, ImageSource, build_image_source
from vismem.core.errors import DataError


def test_registered_by_name():
    assert {"procedural", "official", "store", "placeholder"} <= set(IMAGE_SOURCES.names())


def test_procedural_source(catalog):
    src = build_image_source({"name": "procedural", "args": {"size": 256}}, catalog)
    assert isinstance(src, ImageSource)
    v = catalog.variants[42]
    cued, base = src.get(v.url_hash), src.get(v.url_hash, with_cue=False)
    assert cued != base
    assert Image.open(io.BytesIO(cued)).size == (256, 256)
    assert src.depicted_object(v.url_hash)
    assert src.spec == {"name": "procedural", "args": {"size": 256}}
    with pytest.raises(KeyError):
        src.get("00000000")


def test_seed_changes_colours_not_products(data_dir):
    """Same seed → same bytes; another seed recolours the cues of the same products."""
    from vismem.env.storefront.catalog import load_catalog

    c0, c0b, c1 = (load_catalog(data_dir, seed=s) for s in (0, 0, 1))
    s0, s0b, s1 = (build_image_source("procedural", c) for c in (c0, c0b, c1))
    h = next(v.url_hash for v in c0.variants if v.cue_color != c1.by_hash[v.url_hash].cue_color)
    assert s0.get(h) == s0b.get(h)
    assert s0.get(h) != s1.get(h)
    assert s0.get(h, with_cue=False) == s1.get(h, with_cue=False)


def _fake_official(root, catalog, slug="chair-modern", size=300):
    for v in catalog.variants_of(slug):
        for rel, shade in ((v.image_path, 200), (v.base_image_path, 100)):
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (size, size), (shade, v.image_idx * 20, 50)).save(p)


def test_official_source_reads_published_layout(tmp_path, catalog):
    _fake_official(tmp_path, catalog)
    src = build_image_source({"name": "official", "args": {"root": str(tmp_path)}}, catalog)
    v = catalog.variants_of("chair-modern")[3]
    im = Image.open(io.BytesIO(src.get(v.url_hash)))
    assert im.getpixel((0, 0)) == (200, v.image_idx * 20, 50)  # file NN = the variant's cue colour index
    assert Image.open(io.BytesIO(src.get(v.url_hash, with_cue=False))).getpixel((0, 0))[0] == 100
    assert src.depicted_object(v.url_hash) == v.cue_object


def test_official_source_missing_set_is_a_clear_error(tmp_path, catalog):
    with pytest.raises(DataError, match="with_cue"):
        build_image_source({"name": "official", "args": {"root": str(tmp_path / "nope")}}, catalog)


def test_procedural_source_is_thread_safe(catalog):
    from concurrent.futures import ThreadPoolExecutor

    src = build_image_source({"name": "procedural", "args": {"size": 128, "cache_items": 3}}, catalog)
    hashes = [v.url_hash for v in catalog.variants[:12]] * 3
    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(src.get, hashes))
    assert got[:12] == got[12:24] == got[24:]
