"""Encoding-protocol parity settings (issue 11): the message layout is part of a back-end's spec
and of the trajectory cache key, the protocol version moved with the page DOM, and the paper
preset reproduces the official cue colours while new studies stay seeded."""

from __future__ import annotations

from vismem.agents.session import SessionOptions
from vismem.pipelines.config import load_config
from vismem.core.identity import TRANSPORT_ARGS
from vismem.pipelines.dmv.protocol import cache_slug, protocol_settings, resolve_spec
from vismem.pipelines.dmv.trajectories import PROTOCOL_VERSION

PROTO = protocol_settings(SessionOptions(), observation="product_image", images="placeholder",
                          colour_order="official", catalog_seed=0)


def test_layout_is_a_model_arg_in_the_cache_slug():
    assert "layout" not in TRANSPORT_ARGS and "extra_body" not in TRANSPORT_ARGS
    base = {"name": "openai", "args": {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "label": "qwen2.5-vl-7b"}}
    slugs = {layout: cache_slug({"name": "openai", "args": {**base["args"], "layout": layout}}, PROTO)
             for layout in ("chat", "merged-user", "parts")}
    assert len(set(slugs.values())) == 3
    assert all(s.startswith("openai-qwen2.5-vl-7b--") for s in slugs.values())
    # the named variant carries its layout into the slug (its endpoint does not)
    spec = resolve_spec("qwen2.5-vl-7b", 0)
    assert spec["args"]["layout"] == "merged-user"
    moved = {**spec, "args": {**spec["args"], "base_url": "http://elsewhere:8000/v1"}}
    assert cache_slug(moved, PROTO) == cache_slug(spec, PROTO)
    assert cache_slug(spec, PROTO) != cache_slug({**spec, "args": {**spec["args"], "layout": "chat"}}, PROTO)


def test_paper_backends_use_the_official_layouts():
    qwen, gemini = (resolve_spec(n, 0)["args"] for n in ("qwen2.5-vl-7b", "gemini-2.5-flash"))
    assert qwen["layout"] == "merged-user" and "extra_body" not in qwen
    assert gemini["layout"] == "parts" and gemini["extra_body"] == {"reasoning_effort": "none"}
    # the MemShot answerers keep vismem's chat layout (the default)
    assert "layout" not in resolve_spec("qwen3-vl-8b", 0)["args"]


def test_protocol_version_moved_with_the_page_dom():
    assert PROTOCOL_VERSION == "dmv-f2-encode.v2"


def test_paper_preset_pins_table10_to_dualmem_vs_m2a_lite():
    assert load_config(preset="paper").report.compare == ("dualmem", "m2a-lite")
    assert load_config(preset="local").report.compare is None  # the two best of the run


def test_paper_preset_reproduces_official_cues_and_local_stays_seeded():
    assert load_config(preset="paper").catalog.colour_order == "official"
    assert load_config(preset="local").catalog.colour_order == "seeded"
    assert load_config().catalog.colour_order == "seeded"  # the default for new studies
