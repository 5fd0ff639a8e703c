"""The leakage vocabulary and matcher (pure)."""

from __future__ import annotations

import pytest

from vismem.env.storefront.leakage import Vocabulary, head_noun, load_fine_descriptors, strip_style_slug


@pytest.fixture(scope="module")
def vocab(catalog):
    return Vocabulary.from_catalog(catalog)


def test_fine_list_is_the_official_82():
    words = load_fine_descriptors()
    assert len(words) == 82 == len(set(words))
    assert {"charcoal", "velvet", "mid-century", "boho"} <= set(words)


def test_vocabulary_sizes(vocab):
    assert len(vocab.colours) == 10 and len(vocab.phrases) == 100
    assert {"cap", "scarf", "clock", "candle", "lily", "ship", "set", "note"} <= set(vocab.heads)


@pytest.mark.parametrize("obj,head", [
    ("baseball cap", "cap"), ("wool scarf", "scarf"), ("pendulum clock (small)", "clock"),
    ("candle in holder", "candle"), ("lily-of-the-valley", "lily"), ("ship-in-bottle", "ship"),
    ("baby's-breath cluster", "cluster"), ("eyeglasses", "eyeglasses"),
])
def test_head_noun(obj, head):
    assert head_noun(obj) == head


@pytest.mark.parametrize("text,expected", [
    ("A RED chair", {("colour", "red")}),
    ("two baseball-caps", {("phrase", "baseball cap"), ("head", "cap")}),
    ("scarves everywhere", {("head", "scarf")}),
    ("teddies", {("head", "teddy")}),
    ("one sock", {("head", "socks")}),
    ("/collection/x-wool_scarf", {("phrase", "wool scarf"), ("head", "scarf")}),
    ("woolscarf", {("phrase", "wool scarf")}),
    ("Mid Century look", {("fine", "mid-century")}),
    ("Bouclé", {("fine", "bouclé")}),
    ("Orange", {("colour", "orange")}),
    # no false positives on word parts
    ("Bookshelves, free shipping, reduced, capital, notebooks", {("head", "notebook")}),
    ("Studio Living: furniture for every room", set()),
    ("Lumen Chair 01 $280.99", set()),
])
def test_scan(vocab, text, expected):
    assert {(h.cls, h.term) for h in vocab.scan(text)} == expected


def test_style_slug_exception_only_in_collection_urls():
    styles = {"rustic", "mid_century"}
    assert strip_style_slug("/collection/chair-rustic", styles) == "/collection/chair-"
    assert strip_style_slug("/collection/chair-mid_century", styles) == "/collection/chair-"
    assert strip_style_slug("/search?q=rustic", styles) == "/search?q=rustic"
