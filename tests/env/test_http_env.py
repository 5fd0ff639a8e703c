"""The HTTP page env's fast page reading against an HTML parser, its image cache, and the
context wipe between episodes (real shop on loopback)."""

from __future__ import annotations

import pytest

from env.http_env import HttpEnv, page_fields


@pytest.fixture(scope="module")
def shop(shared_dir):
    from env.storefront.server import ShopServer

    with ShopServer.from_data(shared_dir / "data", seed=0) as srv:
        yield srv


def _soup_fields(html):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    meta = soup.find("meta", attrs={"name": "description"})
    img = soup.select_one("main #product-image")
    return (soup.title.get_text() if soup.title else "", (meta.get("content") if meta else "") or "",
            img.get("src") if img is not None else None)


def test_page_fields_equal_an_html_parser_on_every_page_kind(shop, catalog):
    import httpx

    v = catalog.variants[123]
    pages = ["/", f"/category/{v.cat}", f"/collection/{v.collection_slug}", f"/product/{v.url_hash}",
             "/wishlist", "/cart", "/product/ffffffff", "/nope"]
    with httpx.Client(base_url=shop.url) as c:
        for p in pages:
            html = c.get(p).text
            assert page_fields(html) == _soup_fields(html), p
    assert page_fields("<html><title>a &amp; b</title></html>") == ("a & b", "", None)
    # an image outside <main> is not the product image
    assert page_fields('<img id="product-image" src="/x.png"><main></main>')[2] is None


def test_images_are_fetched_once_and_every_reset_wipes_the_session(shop, catalog):
    env = HttpEnv(shop.url)
    v = catalog.variants[5]
    obs = env.reset(f"/product/{v.url_hash}")
    assert obs.image[:4] == b"\x89PNG" and obs.url_hash == v.url_hash
    assert list(env._images) == [f"/images/{v.url_hash}.png"]
    again = env.reset(f"/product/{v.url_hash}")
    assert again.image == obs.image and len(env._images) == 1
    env.reset("/")
    first = dict(env._client.cookies)
    env.step(env_action(f"/product/{v.url_hash}"))
    assert dict(env._client.cookies) == first    # one session within an episode
    env.reset("/")
    assert first and dict(env._client.cookies) != first  # a new episode never carries the old session
    env.close()


def env_action(url):
    from env.actions import parse_action

    return parse_action(f'Action: navigate("{url}")')
