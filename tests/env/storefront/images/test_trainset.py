"""Training scenes for pocket-clip: seeded, wider than the cue vocabulary and palette, captioned
with what is drawn, and never a catalogue image."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from vismem.env.storefront.catalog import COLOURS
from vismem.env.storefront.images import trainset as ts
from vismem.env.storefront.images.glyphs import depicted_object, glyph_table, recolor
from vismem.env.storefront.images.scene import ProceduralRenderer
from vismem.env.storefront.images.sources import spec_of


def _hash(img) -> str:
    return hashlib.sha256(np.asarray(img.convert("RGB")).tobytes()).hexdigest()


def test_same_seed_and_index_same_pixels_others_differ():
    a, b = ts.render_sample(3, 17), ts.render_sample(3, 17)
    assert _hash(a.image) == _hash(b.image) and a.caption == b.caption and a.negatives == b.negatives
    others = {_hash(ts.render_sample(s, i).image) for s, i in ((3, 18), (4, 17), (0, 0), (0, 1))}
    assert len(others | {_hash(a.image)}) == 5


def test_vocabulary_and_palette_are_wider_than_the_cues():
    cue_objects = {depicted_object(o) for o in glyph_table()}
    assert len(cue_objects) == 100 and cue_objects < set(ts.VOCAB)
    assert set(COLOURS) < set(ts.PALETTE) and len(ts.PALETTE) >= 15
    assert len(ts.VOCAB) == len(set(ts.VOCAB)) >= 180
    # an extra object must not be a cue glyph under another name, nor carry a colour word
    cue_codepoints = {spec.get("codepoint") for spec in glyph_table().values()}
    assert not cue_codepoints & set(ts.EXTRA_OBJECTS.values())
    words = {w for c in ts.PALETTE for w in c.split()}
    assert not [o for o in ts.VOCAB if words & set(o.split())]


def test_recolouring_matches_the_catalogue_for_cue_colours():
    g = ts.vocab_glyph("baseball cap")
    for colour in ("red", "beige", "black"):
        assert np.array_equal(np.asarray(ts.recolour(g, colour)), np.asarray(recolor(g, colour)))
    assert np.asarray(ts.recolour(g, "teal")).shape == np.asarray(g).shape


def test_every_vocabulary_glyph_draws():
    for name in ts.VOCAB:
        alpha = np.asarray(ts.vocab_glyph(name).getchannel("A"))
        assert (alpha > 128).sum() > 1000, name


def test_captions_name_the_drawn_cue_and_negatives_differ_in_one_factor():
    seen_cue_free = seen_extra = 0
    for i in range(300):
        s = ts.render_sample(1, i, size=128)
        if s.obj < 0:
            seen_cue_free += 1
            assert s.cue_bbox is None and not s.negatives
            continue
        obj, colour = ts.VOCAB[s.obj], ts.PALETTE[s.colour]
        seen_extra += obj in ts.EXTRA_OBJECTS or colour in ts.EXTRA_RAMPS
        assert f"{colour} {obj}" in s.caption
        x0, y0, x1, y1 = s.cue_bbox
        assert 0 <= x0 < x1 <= 128 and 0 <= y0 < y1 <= 128
        same_obj, same_col = s.negatives[:2], s.negatives[2:]
        assert {n.removeprefix("product with ").removesuffix(f" {obj}") for n in same_obj} < set(ts.PALETTE) - {colour}
        assert {n.removeprefix(f"product with {colour} ") for n in same_col} < set(ts.VOCAB) - {obj}
    assert 5 <= seen_cue_free <= 40 and seen_extra >= 50


def test_the_cue_is_in_the_pixels():
    """The sample's cue box holds pixels of the cue colour's ramp, which the scene left out."""
    s = ts.render_sample(0, 5, size=256, cue=("baseball cap", "red"))
    x0, y0, x1, y1 = s.cue_bbox
    patch = np.asarray(s.image, np.int16)[y0:y1, x0:x1].reshape(-1, 3)
    reddish = (patch[:, 0] > 120) & (patch[:, 1] < 90) & (patch[:, 2] < 90)
    assert reddish.mean() > 0.1


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_no_sample_is_a_catalogue_image(catalog, seed):
    """Scenes forced to a catalogue cue, at catalogue size, never equal that product's images."""
    renderer = ProceduralRenderer(512)
    for i in range(3):
        v = catalog.variants[(seed * 131 + i * 337) % len(catalog.variants)]
        cue = (depicted_object(v.cue_object), v.cue_color)
        sample = ts.render_sample(seed, i, size=512, cue=cue)
        out = renderer.render(spec_of(v))
        assert _hash(sample.image) not in {_hash(out.with_cue), _hash(out.base)}
        # and not merely a re-encode: the scenes differ in many pixels
        diff = np.abs(np.asarray(sample.image, np.int16) - np.asarray(out.with_cue, np.int16)).sum(2) > 24
        assert diff.mean() > 0.2
