"""The procedural product photos: deterministic, variant-specific, and the cue stays beside the
product (fully visible, clearly sized, never over it)."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest
from PIL import Image

from vismem.env.storefront.images.scene import CUE_BOX, ProceduralRenderer, encode
from vismem.env.storefront.images.sources import spec_of

SIZE = 512


@pytest.fixture(scope="module")
def renderer():
    return ProceduralRenderer(SIZE)


@pytest.fixture(scope="module")
def one_per_collection(catalog, renderer):
    """One rendered variant per collection (100: every category x style)."""
    picks = [catalog.variants_of(c.slug)[i % 10] for i, c in enumerate(catalog.collections)]
    return [(v, renderer.render(spec_of(v))) for v in picks]


def test_same_inputs_same_bytes(catalog):
    v = catalog.variants[123]
    out = ProceduralRenderer(SIZE).render(spec_of(v))
    a = encode(out.with_cue)
    b = encode(ProceduralRenderer(SIZE).render(spec_of(v)).with_cue)
    assert a == b
    im = Image.open(io.BytesIO(a))
    assert im.size == (SIZE, SIZE) and im.format == "PNG"
    # the fast PNG writer is lossless: standard decoders read back the exact pixels
    assert np.array_equal(np.asarray(im.convert("RGB")), np.asarray(out.with_cue))


def test_variants_of_a_collection_all_differ(catalog, renderer):
    for slug in ("chair-modern", "rug-bohemian", "wall_art-japandi"):
        vs = catalog.variants_of(slug)
        outs = [renderer.render(spec_of(v)) for v in vs]
        bases = {hashlib.sha256(o.base.tobytes()).hexdigest() for o in outs}
        cued = {hashlib.sha256(o.with_cue.tobytes()).hexdigest() for o in outs}
        assert len(bases) == 10, f"{slug}: two cue-free variants are identical"
        assert len(cued) == 10
        assert {o.depicted for o in outs} == {outs[0].depicted}  # one object per collection


def test_cue_free_image_has_no_cue_and_cued_one_does(one_per_collection):
    for v, out in one_per_collection:
        base, cued = np.asarray(out.base, np.int16), np.asarray(out.with_cue, np.int16)
        changed = np.abs(base - cued).sum(axis=2) > 24
        x0, y0, x1, y1 = out.cue_bbox
        outside = changed.copy()
        outside[max(0, y0 - 4):y1 + 30, max(0, x0 - 12):x1 + 12] = False  # the cue + its contact shadow below
        assert not outside.any(), f"{v.url_hash}: the cue changed pixels away from the cue"
        assert changed[y0:y1, x0:x1].mean() > 0.2, f"{v.url_hash}: cue barely visible"


def test_cue_beside_product_fully_visible_and_clearly_sized(one_per_collection):
    for v, out in one_per_collection:
        x0, y0, x1, y1 = out.cue_bbox
        assert 0 <= x0 < x1 <= SIZE and 0 <= y0 < y1 <= SIZE, f"{v.url_hash}: cue leaves the frame"
        assert max(x1 - x0, y1 - y0) >= 0.8 * CUE_BOX * SIZE, f"{v.url_hash}: cue too small"
        assert max(x1 - x0, y1 - y0) <= 1.1 * CUE_BOX * SIZE
        product = np.asarray(out.product_mask) > 0
        cue = np.asarray(out.cue_mask) > 0
        assert product.sum() > 0.03 * SIZE * SIZE, f"{v.url_hash}: product too small"
        assert not (product & cue).any(), f"{v.url_hash}: cue overlaps the product"
        assert not product[y0:y1, x0:x1].any(), f"{v.url_hash}: product inside the cue's box"


def test_cue_pixels_carry_the_cue_colour(one_per_collection):
    from vismem.env.storefront.images.colors import CUE_COLORS, CUE_RAMPS, delta_e, srgb_to_lab

    nominal = {c: srgb_to_lab(np.array(CUE_RAMPS[c][1])) for c in CUE_COLORS}
    for v, out in one_per_collection:
        cue = np.asarray(out.cue_mask) > 0
        px = np.asarray(out.with_cue)[cue].astype(float)
        lab = srgb_to_lab(px.mean(axis=0))
        nearest = min(CUE_COLORS, key=lambda c: float(delta_e(lab, nominal[c])))
        assert nearest == v.cue_color, f"{v.url_hash}: {v.cue_color} cue reads as {nearest}"


@pytest.mark.slow
def test_all_thousand_products_place_their_cue_and_are_distinct(catalog, renderer):
    """Every variant renders, keeps its cue off the product, and no two photos are the same."""
    seen: set[str] = set()
    for v in catalog.variants:
        out = renderer.render(spec_of(v))
        product, cue = np.asarray(out.product_mask) > 0, np.asarray(out.cue_mask) > 0
        assert not (product & cue).any(), v.url_hash
        x0, y0, x1, y1 = out.cue_bbox
        assert 0 <= x0 < x1 <= SIZE and 0 <= y0 < y1 <= SIZE, v.url_hash
        seen.add(hashlib.sha256(out.with_cue.tobytes()).hexdigest())
    assert len(seen) == len(catalog.variants)
