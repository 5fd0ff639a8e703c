"""The HTTP page env's fast page reading against an HTML parser, its image cache, and the
context wipe between episodes (real shop on loopback)."""

from __future__ import annotations

import pytest

from vismem.env.http_env import HttpEnv, PageCache, page_fields


@pytest.fixture(scope="module")
def shop(data_dir):
    from vismem.env.storefront.server import ShopServer

    with ShopServer.from_data(data_dir, seed=0) as srv:
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
    assert env.cache.images.keys() == [f"/images/{v.url_hash}.png"]
    again = env.reset(f"/product/{v.url_hash}")
    assert again.image == obs.image and len(env.cache.images) == 1
    # /cart is a session page, never served from the page cache: each reset asks the shop again.
    env.reset("/cart")
    first = dict(env._client.cookies)
    env.step(env_action("/cart"))
    assert dict(env._client.cookies) == first    # one session within an episode
    env.reset("/cart")
    assert first and dict(env._client.cookies) != first  # a new episode never carries the old session
    env.close()


def env_action(url):
    from vismem.env.actions import parse_action

    return parse_action(f'Action: navigate("{url}")')


def _obs_tuple(env, obs):
    return (obs.url, obs.title, obs.description, obs.image, obs.url_hash, obs.status, env.click_targets())


def test_page_cache_serves_what_the_shop_would_and_fetches_each_page_once(shop, catalog):
    """The page cache (observations depend on the path alone) changes no observation: a cached env
    and one that fetches every page see the same thing on every step of two episodes; the second
    episode sends no page request; session pages and server errors are never cached."""
    from vismem.env.actions import parse_action

    v = catalog.variants[42]
    steps = [f'navigate("/product/{v.url_hash}")', "click_index(0)", "click_index(3)", "click_index(0)",
             f'navigate("/category/{v.cat}")', "click_index(1)", 'navigate("/nope")', 'navigate("/search?q=chair")',
             'navigate("/wishlist")', 'navigate("/cart")']
    nothing = PageCache()
    nothing.pages.size = 0  # keeps nothing: every step is fetched
    cached, plain = HttpEnv(shop.url), HttpEnv(shop.url, cache=nothing)
    try:
        for episode in range(2):
            before = cached.fetches
            a, b = cached.reset("/"), plain.reset("/")
            assert _obs_tuple(cached, a) == _obs_tuple(plain, b)
            for s in steps:
                ra, rb = cached.step(parse_action(f"Action: {s}")), plain.step(parse_action(f"Action: {s}"))
                assert (ra.ok, ra.error, ra.info) == (rb.ok, rb.error, rb.info), s
                assert _obs_tuple(cached, ra.observation) == _obs_tuple(plain, rb.observation), s
            if episode == 1:
                assert cached.fetches - before == 2  # only /wishlist and /cart
        assert plain.fetches == 2 * (len(steps) + 1) and not len(plain.cache.pages)
        assert "/wishlist" not in cached.cache.pages and "/cart" not in cached.cache.pages
    finally:
        cached.close()
        plain.close()


def test_envs_sharing_a_page_cache_fetch_each_page_once_and_see_the_same_pages(shop, catalog):
    """A shop actor's envs (one per episode thread) share one page cache: a page one env read is
    never fetched again by another, and what the second env observes is what a fresh env sees."""
    import threading

    from vismem.env.actions import parse_action

    v = catalog.variants[7]
    steps = ["click_index(0)", "click_index(2)", f'navigate("/product/{v.url_hash}")', f'navigate("/category/{v.cat}")']
    first, fresh = HttpEnv(shop.url), HttpEnv(shop.url)
    second = HttpEnv(shop.url, cache=first.cache)
    try:
        first.reset(f"/category/{v.cat}")
        for s in steps:
            first.step(parse_action(f"Action: {s}"))
        assert first.fetches >= 4
        seen = []

        def walk(env):  # another thread, as an episode thread of the actor
            out = [_obs_tuple(env, env.reset(f"/category/{v.cat}"))]
            out += [_obs_tuple(env, env.step(parse_action(f"Action: {s}")).observation) for s in steps]
            seen.append(out)

        for env in (second, fresh):
            t = threading.Thread(target=walk, args=(env,))
            t.start()
            t.join()
        assert second.fetches == 0 and fresh.fetches == first.fetches
        assert seen[0] == seen[1]
    finally:
        for env in (first, second, fresh):
            env.close()
