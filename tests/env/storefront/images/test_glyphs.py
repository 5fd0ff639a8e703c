"""Cue glyphs: the table covers every registry object with a drawable glyph, and the ten colours
stay distinguishable on every object (CIELAB distances of the cue's own pixels)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from vismem.env.storefront.images.colors import CUE_COLORS, CUE_RAMPS, delta_e, srgb_to_lab
from vismem.env.storefront.images.glyphs import base_glyph, cue_sprite, depicted_object, glyph_table

MIN_DELTA_E = 15.0  # CIE76; ~6x a just-noticeable difference


@pytest.fixture(scope="module")
def registry_objects(data_dir):
    rows = json.loads((data_dir / "dmv-bench" / "cue_registry.json").read_text())["rows"]
    return sorted({r["cue_object"] for r in rows}), sorted({r["cue_color"] for r in rows})


def test_table_covers_exactly_the_registry(registry_objects):
    objects, colours = registry_objects
    assert len(objects) == 100
    assert sorted(glyph_table()) == objects
    assert sorted(CUE_COLORS) == colours


def test_every_object_draws_a_substantial_glyph():
    for obj, spec in glyph_table().items():
        g = base_glyph(obj)
        alpha = np.asarray(g.getchannel("A"))
        assert (alpha > 128).sum() > 1500, f"{obj!r} ({spec['kind']}) drew almost nothing"
        assert max(g.size) >= 60


def test_substitutions_are_recorded_and_depicted_names_unique():
    table = glyph_table()
    kinds = {spec["kind"] for spec in table.values()}
    assert kinds <= {"emoji", "substitute", "procedural"}
    for obj, spec in table.items():
        if spec["kind"] == "substitute":
            assert depicted_object(obj) == spec["depicted"] != obj
            assert spec.get("why")
        else:
            assert depicted_object(obj) == obj
    depicted = [depicted_object(o) for o in table]
    assert len(set(depicted)) == 100, "two cue objects would look like the same thing"
    codepoints = [s["codepoint"] for s in table.values() if "codepoint" in s]
    assert len(set(codepoints)) == len(codepoints)


def _mean_lab(obj: str, colour: str) -> np.ndarray:
    a = np.asarray(cue_sprite(obj, colour, 96))
    solid = a[..., 3] > 128
    return srgb_to_lab(a[..., :3][solid].mean(axis=0))


def test_ten_colours_distinct_on_every_object():
    nominal = {c: srgb_to_lab(np.array(CUE_RAMPS[c][1])) for c in CUE_COLORS}
    worst = (1e9, None)
    for obj in glyph_table():
        labs = {c: _mean_lab(obj, c) for c in CUE_COLORS}
        for c1, c2 in itertools.combinations(CUE_COLORS, 2):
            d = float(delta_e(labs[c1], labs[c2]))
            worst = min(worst, (d, (obj, c1, c2)), key=lambda t: t[0])
        for c, lab in labs.items():  # and each reads as its own colour, not a neighbour
            nearest = min(CUE_COLORS, key=lambda k: float(delta_e(lab, nominal[k])))
            assert nearest == c, f"{obj!r} in {c} looks {nearest}"
    assert worst[0] > MIN_DELTA_E, f"colours too close: {worst}"


def test_risky_pairs_separate():
    for obj in ("tennis ball", "wool scarf", "sticky note", "eyeglasses"):
        assert float(delta_e(_mean_lab(obj, "white"), _mean_lab(obj, "beige"))) > MIN_DELTA_E
        assert float(delta_e(_mean_lab(obj, "brown"), _mean_lab(obj, "orange"))) > 2 * MIN_DELTA_E
