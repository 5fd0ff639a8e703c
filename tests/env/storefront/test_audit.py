"""The L2 audit: the real shop crawled over HTTP (0 hits, no dead links) and injected leaks."""

from __future__ import annotations

import copy
import json

import pytest
from fastapi.testclient import TestClient

from vismem.env.storefront.app import create_app
from vismem.env.storefront.audit import audit_catalog_records, check_bijection, crawl_and_audit
from vismem.env.storefront.catalog import load_catalog
from vismem.env.storefront.imagesource import build_image_source
from vismem.env.storefront.leakage import Vocabulary


@pytest.fixture(scope="module")
def seed_doc(data_dir):
    return json.loads((data_dir / "dmv-bench" / "seed_v2.json").read_text())


@pytest.fixture(scope="module")
def real_report(shop_server, catalog, seed_doc):
    """One full crawl of the real shop over real HTTP (every link from / is followed)."""
    return crawl_and_audit(shop_server.url, catalog, seed_doc=seed_doc)


def test_full_crawl_has_no_dead_links(real_report):
    assert real_report.broken_links == []
    assert real_report.pages > 1100  # home, 10 categories, 100 collections, 1,000 products, ...
    assert real_report.products_reached == real_report.products_total == 1000


def test_real_catalogue_has_zero_hits(real_report):
    assert real_report.hits == [] and real_report.catalog_hits == []
    assert real_report.bijection_problems == []
    assert real_report.ok
    # every field kind is represented; many more fields than the paper's 13,140 catalogue fields
    assert {"text", "title", "meta", "attr", "url"} <= set(real_report.fields_by_kind)
    # every page has a <title> and a meta description
    assert real_report.fields_by_kind["title"] == real_report.fields_by_kind["meta"] == real_report.pages
    assert real_report.fields_scanned > 13_140 and real_report.catalog_fields == 14_140


def _leaky_shop(data_dir, seed_doc, mutate):
    doc = copy.deepcopy(seed_doc)
    mutate(doc)
    cat = load_catalog(data_dir, seed=0, seed_doc=doc)
    return cat, doc, TestClient(create_app(cat, build_image_source("placeholder", cat)))


def test_injected_leaks_are_found(data_dir, seed_doc):
    def mutate(doc):
        v = next(x for x in doc["variants"] if x["id"] == "var_chair_modern_03")
        v["displayName"] = "Lumen Chair 04 with Red scarves"            # colour + head noun (plural)
        doc["collections"][1]["displayName"] = "Velvet Chairs"          # fine descriptor
        doc["categories"][0]["description"] = "Browse our chairs and baseball-caps."  # cue phrase
    cat, doc, client = _leaky_shop(data_dir, seed_doc, mutate)
    with client:
        rep = crawl_and_audit("http://testserver", cat, client=client, max_pages=60, seed_doc=doc)
    assert not rep.ok
    found = {(h["class"], h["term"]) for h in rep.hits}
    assert {("colour", "red"), ("head", "scarf"), ("fine", "velvet"),
            ("phrase", "baseball cap"), ("head", "cap")} <= found
    kinds = {h["field"] for h in rep.hits}
    assert {"text", "title", "attr:alt", "meta:description"} <= kinds  # name leaks into every channel
    assert {h["record"] for h in rep.catalog_hits} >= {"categories[0]", "collections[1]"}


def test_leak_in_a_url_is_found_but_style_slugs_are_exempt(catalog):
    from vismem.env.storefront.audit import Field, scan_fields

    vocab = Vocabulary.from_catalog(catalog)
    styles = {c.style for c in catalog.collections}
    ok = [Field("/", "url:href", "/collection/chair-industrial")]
    bad = [Field("/", "url:href", "/collection/chair-industrial?x=brown"),
           Field("/", "url:src", "/images/velvet.png")]
    assert scan_fields(ok, vocab, styles) == []
    assert {h.term for _, h in scan_fields(bad, vocab, styles)} == {"brown", "velvet"}


def test_bijection_check_detects_a_duplicate_cue(catalog):
    import dataclasses

    assert check_bijection(catalog) == []
    vs = list(catalog.variants)
    vs[1] = dataclasses.replace(vs[1], cue_color=vs[0].cue_color)
    broken = dataclasses.replace(catalog, variants=tuple(vs))
    assert check_bijection(broken)


def test_catalogue_record_scan_counts_fields(seed_doc, catalog):
    n, hits = audit_catalog_records(seed_doc, Vocabulary.from_catalog(catalog))
    assert n == 14_140 and hits == []
