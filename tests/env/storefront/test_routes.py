"""Every route of the shop through the in-process ASGI client (fast)."""

from __future__ import annotations

import re

import pytest

from vismem.env.storefront.audit import extract_fields


def _title_and_meta(html: str) -> tuple[str, str]:
    t = re.search(r"<title>(.*?)</title>", html, re.S)
    m = re.search(r'<meta name="description" content="([^"]*)"', html)
    assert t and m, "every page has a <title> and a meta description"
    return t.group(1), m.group(1)


def _main(html: str) -> str:
    return html[html.index("<main>"):html.index("</main>")]


def test_home(client, catalog):
    r = client.get("/")
    assert r.status_code == 200 and "shop_sid" in r.cookies
    title, meta = _title_and_meta(r.text)
    assert title.startswith("Home") and meta
    main = _main(r.text)
    assert main.count('class="tile"') == 10
    for c in catalog.categories:  # ten header links + ten tiles
        assert r.text.count(f'href="/category/{c.slug}"') == 2
    assert 'href="/wishlist"' in r.text and 'href="/cart"' in r.text and 'action="/search"' in r.text


def test_category_tiles(client, catalog):
    r = client.get("/category/plant_pot")
    assert r.status_code == 200
    main = _main(r.text)
    cols = catalog.collections_of("plant_pot")
    assert [m for m in re.findall(r'href="(/collection/[^"]+)"', main)] == [f"/collection/{c.slug}" for c in cols]
    assert main.count("10 pieces") == 10
    prices = [v.price for v in catalog.variants_of(cols[0].slug)]
    assert f"${min(prices):,.2f} – ${max(prices):,.2f}" in main
    assert _title_and_meta(r.text)[0].startswith("Plant Pots")


def test_collection_cards(client, catalog):
    r = client.get("/collection/chair-mid_century")
    main = _main(r.text)
    vs = catalog.variants_of("chair-mid_century")
    assert re.findall(r'href="/product/([0-9a-f]{8})"', main) == [v.url_hash for v in vs]
    for v in vs:
        assert f'src="/images/{v.url_hash}.png"' in main and v.name in main and f"${v.price:,.2f}" in main


def test_product_page(client, catalog):
    v = catalog.variants_of("sofa-rustic")[3]
    r = client.get(f"/product/{v.url_hash}")
    assert r.status_code == 200
    html, main = r.text, _main(r.text)
    # the breadcrumb is <main>'s first child, as in the official shop (click_index counts it)
    assert main.startswith('<main>\n<nav class="crumbs" aria-label="Breadcrumb">')
    crumbs = main[main.index('aria-label="Breadcrumb"'):main.index("</nav>")]
    assert re.findall(r'href="([^"]+)"', crumbs) == ["/", "/category/sofa", "/collection/sofa-rustic"]
    assert v.name in crumbs and "Sofas" in crumbs and v.collection in crumbs
    assert f'<span aria-current="page">{v.name}</span>' in crumbs  # the product itself is no link
    assert f'id="product-image" src="/images/{v.url_hash}.png" alt="{v.name}"' in main
    assert f"<h1>{v.name}</h1>" in main and f"${v.price:,.2f}" in main
    assert "<dt>Material</dt><dd>varied</dd>" in main
    assert 'data-dmv-action="add-to-wishlist"' in main and "Customer reviews" in main
    sib = re.findall(r'href="/product/([0-9a-f]{8})"', main)
    assert len(sib) == 9 and v.url_hash not in sib
    assert set(sib) == {s.url_hash for s in catalog.variants_of("sofa-rustic")} - {v.url_hash}


@pytest.mark.parametrize("page", ["home", "category", "collection", "product"])
def test_click_targets_equal_the_official_lists(client, catalog, page):
    """The official F2 target lists (dmv-official.md §5.2): crumbs inside <main> contribute only
    the product page's collection link, which comes first; cards and tiles keep their order."""
    from vismem.env.http_env import click_targets

    v = catalog.variants_of("sofa-rustic")[3]
    path, want = {
        "home": ("/", []),
        "category": ("/category/sofa", [f"/collection/{c.slug}" for c in catalog.collections_of("sofa")]),
        "collection": ("/collection/sofa-rustic", [f"/product/{s.url_hash}" for s in catalog.variants_of("sofa-rustic")]),
        # click_index(0) = back to the collection; N >= 1 = sibling N-1, price ascending
        "product": (f"/product/{v.url_hash}", ["/collection/sofa-rustic"] + sorted(
            (f"/product/{s.url_hash}" for s in catalog.variants_of("sofa-rustic") if s != v),
            key=lambda u: catalog.by_hash[u.rsplit("/", 1)[1]].price)),
    }[page]
    assert click_targets(client.get(path).text, "http://testserver" + path) == want


def test_recently_viewed_is_per_client_and_outside_main(shop_app, catalog):
    from fastapi.testclient import TestClient

    a, b = catalog.variants[0], catalog.variants[1]
    with TestClient(shop_app) as c1, TestClient(shop_app) as c2:
        c1.get(f"/product/{a.url_hash}")
        html = c1.get(f"/product/{b.url_hash}").text
        strip = html[html.index("</main>"):]
        assert 'aria-label="Recently viewed"' in strip and f'href="/product/{a.url_hash}"' in strip
        assert 'aria-label="Recently viewed"' not in c2.get("/").text  # other client: nothing


def test_wishlist_cart_checkout_flow(client, catalog):
    v = catalog.variants[42]
    assert "Wishlist (0)" in client.get("/").text
    r = client.post(f"/wishlist/add/{v.url_hash}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/product/{v.url_hash}"
    client.post(f"/wishlist/add/{v.url_hash}")  # idempotent
    assert "Wishlist (1)" in client.get("/").text
    assert f'href="/product/{v.url_hash}"' in _main(client.get("/wishlist").text)
    client.post(f"/cart/add/{v.url_hash}")
    client.post(f"/cart/add/{v.url_hash}")
    cart = client.get("/cart").text
    assert "Cart (2)" in cart and f"${2 * v.price:,.2f}" in cart and 'href="/checkout"' in cart
    assert "Place order" in client.get("/checkout").text
    assert client.post("/wishlist/add/00000000").status_code == 404


def test_search(client, catalog):
    main = _main(client.get("/search", params={"q": "lumen chair"}).text)
    hashes = re.findall(r'href="/product/([0-9a-f]{8})"', main)
    assert hashes == [v.url_hash for v in catalog.variants_of("chair-modern")]
    assert "No results" in client.get("/search", params={"q": "zzzz"}).text
    assert client.get("/search").status_code == 200


def test_images(client, catalog):
    h = catalog.variants[5].url_hash
    r = client.get(f"/images/{h}.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content[:4] == b"\x89PNG"
    assert client.get(f"/images/base/{h}.png").status_code == 200


@pytest.mark.parametrize("path", [
    "/nope", "/category/nope", "/collection/chair-gothic", "/product/00000000", "/product/DF5B5FDE",
    "/images/00000000.png", "/images/df5b5fde.jpg", "/images/df5b5fde", "/category/chair/extra",
])
def test_unknown_urls_are_404_pages(client, path):
    r = client.get(path)
    assert r.status_code == 404 and "Page not found" in r.text
    _title_and_meta(r.text)


@pytest.mark.parametrize("raw", [
    "/images/../../etc/passwd", "/images/..%2F..%2Fetc%2Fpasswd", "/images/%2e%2e/%2e%2e/etc/passwd",
    "/images/..%252F..%252Fetc%252Fpasswd", "/images/base/../../../etc/passwd",
    "/images/%2e%2e%2f%2e%2e%2fpyproject.toml", "/images/....//....//etc/passwd", "/images/%00df5b5fde.png",
])
def test_path_traversal_is_refused(shop_server, raw):
    """Raw, unnormalised request paths against the real server (httpx would normalise them)."""
    import socket

    with socket.create_connection((shop_server.host, shop_server.port), timeout=5) as s:
        s.sendall(f"GET {raw} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    assert status in (400, 404) and b"root:" not in data and b"[project]" not in data


def test_product_page_fields_have_no_style_or_cue_words(client, catalog):
    """Spot check of one page (the full crawl is in test_audit)."""
    v = catalog.by_hash["df5b5fde"]
    fields, _ = extract_fields(client.get(f"/product/{v.url_hash}").text, "/p")
    text = " ".join(f.value for f in fields if not f.kind.startswith("url")).lower()
    assert v.cue_color not in text.split() and "scarf" not in text
