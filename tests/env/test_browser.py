"""The browsing environment on real Chromium against the real shop server."""

from __future__ import annotations

import pytest

from vismem.env.actions import click_index, done, navigate
from vismem.env.browser import BrowserEnv


@pytest.fixture(scope="module")
def env(shop_server, chromium_path):
    with BrowserEnv(shop_server.url, chromium_path=chromium_path) as e:
        yield e


def _is_png(b: bytes | None) -> bool:
    return bool(b) and b[:8] == b"\x89PNG\r\n\x1a\n"


def test_episode_through_every_action_product_image_mode(env, catalog):
    env.mode = "product_image"
    obs = env.reset("/")
    assert (obs.url, obs.image, obs.url_hash) == ("/", None, None)
    assert obs.title == "Home | Studio Living" and obs.description

    # click_index on the home page: no /product/ or /collection/ links in <main> -> invalid
    r = env.step("Thought: x\nAction: click_index(0)")
    assert not r.ok and "out of range" in r.error and r.observation.url == "/" and r.step == 1

    r = env.step('Action: navigate("/category/chair")')
    assert r.ok and r.observation.url == "/category/chair" and r.observation.image is None
    assert env.click_targets() == [f"/collection/{c.slug}" for c in catalog.collections_of("chair")]

    r = env.step(click_index(2))
    col = catalog.collections_of("chair")[2]
    assert r.ok and r.observation.url == f"/collection/{col.slug}"
    assert r.observation.title.startswith(col.name)

    r = env.step("Action: click_index(7)")
    v = catalog.variants_of(col.slug)[7]
    assert r.ok and r.observation.url == f"/product/{v.url_hash}" and r.observation.url_hash == v.url_hash
    assert _is_png(r.observation.image)
    assert r.observation.image == env._context.request.get(f"{env.base_url}/images/{v.url_hash}.png").body()
    assert r.observation.description.startswith(v.name)
    # the browser itself loads no images in this mode (block_images); the observation has them
    assert env.page.evaluate("document.querySelector('main .card img').naturalWidth") == 0
    # on a product page the collection crumb comes first (official DOM: crumbs inside <main>),
    # then the nine siblings in price order
    siblings = [f"/product/{s.url_hash}" for s in catalog.variants_of(col.slug) if s != v]
    assert env.click_targets() == [f"/collection/{col.slug}"] + siblings

    before = r.observation.url
    for bad in ("Action: fly to the moon", 'Action: navigate("nowhere")', ""):
        r = env.step(bad)
        assert not r.ok and r.error and r.observation.url == before and not r.terminal
    assert r.step == 7

    r = env.step("Action: click_index(9)")  # the last sibling: in range now
    assert r.ok and r.observation.url == siblings[8]
    r = env.step("Action: click_index(0)")  # back to the product's collection
    assert r.ok and r.observation.url == f"/collection/{col.slug}"
    r = env.step("Action: click_index(7)")
    assert r.ok and r.observation.url == f"/product/{v.url_hash}"
    r = env.step("Action: click_index(1)")  # the first sibling (cheapest other than v)
    assert r.ok and r.observation.url == siblings[0]
    assert r.step == 11

    r = env.step("Action: click 1cbf7447")  # official click-on-hash form
    assert r.ok and r.observation.url == "/product/1cbf7447"

    r = env.step(navigate("/no-such-page"))
    assert r.ok and r.observation.status == 404 and "not found" in r.observation.title.lower()

    r = env.step("Action: add_to_wishlist")  # no button on a 404 page: terminal, failed
    assert r.terminal and not r.ok and r.terminated_by == "add_to_wishlist"
    assert not env.step(navigate("/")).ok  # the episode is over


def test_wishlist_terminal_and_fresh_context_on_reset(env, catalog):
    env.mode = "product_image"
    v = catalog.variants[123]
    env.reset(f"/product/{v.url_hash}")
    r = env.step("Thought: this one\nAction: add_to_wishlist")
    assert r.ok and r.terminal and r.wishlisted == f"/product/{v.url_hash}"
    assert "Wishlist (1)" in env.page.content()
    cookies = env._context.cookies()
    assert any(c["name"] == "shop_sid" for c in cookies)

    env.reset("/wishlist")  # new context: no cookie, empty wishlist, empty recently viewed
    html = env.page.content()
    assert "Wishlist (0)" in html and "Your wishlist is empty" in html and "Recently viewed" not in html
    assert env.steps == 0 and env.finished is None
    r = env.step(done())
    assert r.ok and r.terminal and r.terminated_by == "done" and r.wishlisted is None


def test_screenshot_mode(env, catalog):
    env.mode = "screenshot"
    obs = env.reset("/collection/lamp-japandi")
    assert _is_png(obs.image) and obs.url_hash is None and obs.title.startswith(catalog.collection_by_slug["lamp-japandi"].name)
    from PIL import Image
    import io

    assert Image.open(io.BytesIO(obs.image)).size == (1280, 900)
    assert env.page.evaluate("document.querySelector('main .card img').naturalWidth") > 0
    # cards show the whole square image (a cropped card could cut the cue off)
    w, h = env.page.evaluate("(() => { const r = document.querySelector('main .card img')"
                             ".getBoundingClientRect(); return [r.width, r.height]; })()")
    assert abs(w - h) < 1.0
    r = env.step("Action: click_index(0)")
    assert r.ok and r.observation.url_hash == catalog.variants_of("lamp-japandi")[0].url_hash
    assert _is_png(r.observation.image) and r.observation.image != obs.image
    r2 = env.step("Action: nonsense")
    assert not r2.ok and r2.observation.url == r.observation.url and _is_png(r2.observation.image)
