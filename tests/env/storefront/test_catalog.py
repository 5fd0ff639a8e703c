"""Catalogue loading: hash formula, cue bijection, seeded colour order, malformed data."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from vismem.env.storefront.catalog import COLOURS, load_catalog, url_hash
from vismem.core.errors import DataError


@pytest.fixture(scope="module")
def docs(data_dir):
    d = data_dir / "dmv-bench"
    return json.loads((d / "seed_v2.json").read_text()), json.loads((d / "cue_registry.json").read_text())


def test_hash_formula_known_value():
    assert url_hash("chair", "modern", 0) == "df5b5fde"


def test_official_order_reproduces_released_data(data_dir, docs):
    cat = load_catalog(data_dir, colour_order="official")
    assert len(cat.categories) == 10 and len(cat.collections) == 100 and len(cat.variants) == 1000
    seed = {v["urlHash"]: v for v in docs[0]["variants"]}
    for v in cat.variants:
        s = seed[v.url_hash]
        assert (v.cue_object, v.cue_color, v.name, v.price) == (s["_cue_object"], s["_cue_color"], s["displayName"], s["price"])
        assert v.image_idx == v.idx  # the flaw: card position == colour index
        assert v.cue_color == COLOURS[v.idx]
    v = cat.by_hash["df5b5fde"]
    assert (v.name, v.collection, v.image_path) == ("Lumen Chair 01", "Lumen Chairs", "with_cue/chair/modern/00.png")


def test_seeded_order_breaks_position_colour_link_and_keeps_bijection(data_dir):
    a = load_catalog(data_dir, seed=0)
    b = load_catalog(data_dir, seed=0)
    c = load_catalog(data_dir, seed=1)
    assert a == b  # deterministic
    assert [v.cue_color for v in a.variants] != [v.cue_color for v in c.variants]
    cues = {(v.cue_object, v.cue_color) for v in a.variants}
    assert len(cues) == 1000 and len({v.cue_object for v in a.variants}) == 100
    # position no longer predicts colour: card 0 takes many colours across collections
    first = Counter(v.cue_color for v in a.variants if v.idx == 0)
    assert len(first) >= 8 and max(first.values()) < 30
    # each variant's image file is the official one depicting its cue
    for v in a.variants:
        assert v.image_path.endswith(f"/{COLOURS.index(v.cue_color):02d}.png")
        assert a.by_cue(v.cue_object, v.cue_color) is v
    df = a.to_polars()
    assert df.height == 1000 and df["url_hash"].n_unique() == 1000


def _mutated(docs, fn):
    s, c = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    fn(s, c)
    return s, c


@pytest.mark.parametrize("mutate,needle", [
    (lambda s, c: s["variants"][5].__setitem__("urlHash", "deadbeef"), "variants[5]"),
    (lambda s, c: s["variants"][7].pop("price"), "'price'"),
    (lambda s, c: s["variants"][3].__setitem__("price", "cheap"), "variants[3]"),
    (lambda s, c: s["variants"][1].__setitem__("_cue_color", "red"), "cue_registry.json"),
    (lambda s, c: (s["variants"][1].__setitem__("_cue_color", "red"),
                   c["rows"][1].__setitem__("cue_color", "red")), "not injective"),
    (lambda s, c: (s["variants"][2].__setitem__("_cue_color", "teal"),
                   c["rows"][2].__setitem__("cue_color", "teal")), "teal"),
    (lambda s, c: c["rows"].pop(), "no row for url_hash 9d1cfd45"),
    (lambda s, c: s["variants"].pop(0), "cue_registry.json"),
    (lambda s, c: s.pop("categories"), "'categories'"),
])
def test_malformed_record_is_a_data_error(data_dir, docs, mutate, needle):
    s, c = _mutated(docs, mutate)
    with pytest.raises(DataError) as e:
        load_catalog(data_dir, seed_doc=s, cue_doc=c)
    assert needle in str(e.value)
    assert "json" in str(e.value)  # names the file


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_catalog(tmp_path)
    (tmp_path / "seed_v2.json").write_text("{not json")
    with pytest.raises(DataError, match="seed_v2.json: not valid JSON"):
        load_catalog(tmp_path)


def test_config_drives_seed_and_colour_order(data_dir):
    from vismem.pipelines.context import catalog_from_config
    from vismem.pipelines.config import load_config
    from vismem.core.errors import ConfigError

    cfg = load_config(None, overrides={"seed": 5, "data_dir": str(data_dir),
                                       "catalog": {"colour_order": "official"}})
    cat = catalog_from_config(cfg)
    assert cat.seed == 5 and cat.colour_order == "official" and cat.variants[0].cue_color == "red"
    with pytest.raises(ConfigError):
        load_catalog(data_dir, colour_order="sorted")
