"""The caption cue-verbalisation rate (paper §5: 16.5 % of with-cue captions name colour and object)."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.analysis.captions import cue_verbalisation, names_cue
from vismem.core.errors import DataError


@pytest.mark.parametrize("caption, colour, obj, want", [
    ("A modern chair. A red wool scarf is draped over its back.", "red", "wool scarf", (True, True)),
    ("A red scarf lies on the seat.", "red", "wool scarf", (True, True)),       # the head noun names it
    ("A reddish scarf lies on the seat.", "red", "wool scarf", (False, True)),  # whole words only
    ("A sleek modern chair in oak.", "red", "wool scarf", (False, False)),
    ("Two Black leather Gloves rest on it", "black", "leather gloves", (True, True)),
    ("a small blue calendar on the wall", "blue", "wall calendar (small)", (True, True)),
    (None, "red", "wool scarf", (False, False)),
])
def test_names_cue(caption, colour, obj, want):
    assert names_cue(caption, colour, obj) == want


def test_phrase_matching_is_stricter():
    assert names_cue("A red scarf.", "red", "wool scarf", object_match="phrase") == (True, False)
    assert names_cue("Red wool scarves!", "red", "wool scarf", object_match="phrase") == (True, True)


def test_rate_per_captioner_counts_colour_object_and_both():
    df = pl.DataFrame({
        "captioner": ["gemini"] * 4 + ["catalogue"] * 2,
        "caption": ["a red wool scarf on a chair", "a chair with a scarf", "a red chair", None,
                    "a modern chair", "a modern chair"],
        "cue_color": ["red"] * 6, "cue_object": ["wool scarf"] * 6})
    out = cue_verbalisation(df)
    assert out.rows() == [("catalogue", 2, 0, 0, 0, 0.0), ("gemini", 4, 2, 2, 1, 0.25)]
    with pytest.raises(DataError, match="cue_object"):
        cue_verbalisation(df.drop("cue_object"))
    assert cue_verbalisation(df.head(0)).height == 0
