"""The storefront: a server-rendered FastAPI + Jinja2 shop over a :class:`Catalog`.

Routes (the official shop's layout, minus its dead v1 links):

``/``                          hero + ten category tiles
``/category/<slug>``           ten collection tiles (name, "10 pieces", price range)
``/collection/<cat>-<style>``  ten product cards on one page (image, title, price)
``/product/<hash>``            breadcrumb, image, collection, title, price, description, specs,
                               add to wishlist / cart, reviews, the nine siblings
``/wishlist`` ``/cart`` ``/checkout`` (mock) ``/search?q=``
``/images/<hash>.png``         product image from the :class:`ImageSource` (``/images/base/...``:
                               the cue-free image, used on no page; for tools)

``click_index(N)`` counts the distinct ``/product/`` and ``/collection/`` links inside ``<main>``
in DOM order. As in the official shop, the breadcrumb is ``<main>``'s first child and the header,
the recently-viewed strip and the footer sit outside it. Of the crumbs only the product page's
collection link is a target (``/category/`` links are not), so the target lists equal the
official ones: category page = its ten collections, collection page = its ten cards, home = none,
product page = ``[/collection/<slug>, the nine siblings by price]``: ``click_index(0)`` goes back
to the collection and ``click_index(N)`` for N >= 1 opens sibling N-1.

Every string the shop shows is L2 (see ``env/storefront/audit.py``): product class, collection
name, numbered names, prices. The shop's own copy avoids colour words and cue nouns.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.exceptions import HTTPException as StarletteHTTPException

from vismem.env.storefront.catalog import Catalog, Variant
from vismem.env.storefront.imagesource import CachedImageSource, ImageSource
from vismem.env.storefront.session import COOKIE, SessionStore, ShopSession

TEMPLATES = Path(__file__).parent / "templates"
HASH_RE = re.compile(r"^[0-9a-f]{8}$")
IMAGE_RE = re.compile(r"^([0-9a-f]{8})\.png$")

# Review copy, per collection (never per variant: text must not separate siblings). Kept free of
# colour words, cue objects and fine descriptors; the audit checks it like all other copy.
REVIEW_BODIES = (
    "Sturdy, well made and easy to live with.",
    "Arrived quickly and was simple to assemble.",
    "Good value for the price. Would buy again.",
    "Fits our living room nicely.",
    "Solid build; it feels like it will last.",
    "Exactly what we were looking for.",
    "Comfortable and practical for everyday use.",
    "Delivery was on time and the packaging was careful.",
    "Looks great in person and feels solid.",
    "Nice proportions. Our guests always ask about it.",
)
REVIEW_AUTHORS = ("Jonas K.", "Mira T.", "Priya S.", "Tomas R.", "Hana W.",
                  "Leo M.", "Ines D.", "Ravi P.", "Sofia L.", "Nils B.")
SEARCH_LIMIT = 40


def money(x: float) -> str:
    return f"${x:,.2f}"


class ShopPages:
    """What every route renders with: the catalogue, the templates and the shop sessions."""

    def __init__(self, catalog: Catalog, sessions: SessionStore) -> None:
        self.catalog, self.sessions = catalog, sessions
        self.cats = list(catalog.categories)
        self.env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                               trim_blocks=True, lstrip_blocks=True)
        self.env.globals["money"] = money

    def session_of(self, request: Request) -> tuple[str, ShopSession, bool]:
        """``(session id, session, whether it is new)`` of the request's cookie."""
        return self.sessions.get(request.cookies.get(COOKIE))

    @staticmethod
    def with_session_cookie(resp: Any, sid: str, new: bool) -> Any:
        """Hand a client that arrived without a session its cookie (wishlist/cart/recent state)."""
        if new:
            resp.set_cookie(COOKIE, sid, httponly=True, samesite="lax")
        return resp

    def render(self, request: Request, name: str, *, title: str, description: str,
               status: int = 200, session: tuple | None = None, **ctx: Any) -> HTMLResponse:
        """Template ``name`` with the shop's frame (categories, session, cart count, recent strip)."""
        sid, sess, new = session or self.session_of(request)
        by_hash = self.catalog.by_hash
        recent = [by_hash[h] for h in sess.recent if h in by_hash]
        html = self.env.get_template(name).render(
            title=title, description=description, categories=self.cats, session=sess,
            cart_count=sum(sess.cart.values()), recent=recent, crumbs=ctx.pop("crumbs", None), **ctx)
        resp = HTMLResponse(html, status_code=status)
        return self.with_session_cookie(resp, sid, new)

    def not_found(self, request: Request) -> HTMLResponse:
        """The shop's 404 page (a listing of the categories)."""
        return self.render(request, "listing.html", title="Page not found", status=404,
                           description="This page does not exist in the shop.",
                           heading="Page not found", note="This page does not exist. Try a category:",
                           links=[(c.display, f"/category/{c.slug}") for c in self.cats])

    def product(self, request: Request, v: Variant) -> HTMLResponse:
        """A product page; the product joins the session's recently-viewed strip after rendering."""
        catalog = self.catalog
        sid, sess, new = self.session_of(request)
        col = catalog.collection_by_slug[v.collection_slug]
        c = catalog.category_by_slug[v.cat]
        rng = random.Random(f"reviews.{catalog.seed}.{col.slug}")  # per collection: siblings share them
        reviews = [(rng.choice((4, 5)), body, author) for body, author in
                   zip(rng.sample(REVIEW_BODIES, 3), rng.sample(REVIEW_AUTHORS, 3))]
        rating = f"{sum(r[0] for r in reviews) / 3:.1f}"
        resp = self.render(request, "product.html", title=v.name, v=v, collection=col, category=c,
                           siblings=[s for s in catalog.variants_of(col.slug) if s.url_hash != v.url_hash],
                           reviews=reviews, rating=rating, wished=v.url_hash in sess.wishlist,
                           description=f"{v.name} from the {col.name} collection, {money(v.price)}.",
                           crumbs=[("Home", "/"), (c.display, f"/category/{c.slug}"),
                                   (col.name, f"/collection/{col.slug}"), (v.name, None)],
                           session=(sid, sess, new))
        sess.view(v.url_hash)  # after rendering: the strip shows what came before this page
        return resp

    def cart(self, request: Request, checkout: bool) -> HTMLResponse:
        """The cart page, or the (mock) checkout over the same lines."""
        s = self.session_of(request)
        lines = [(self.catalog.by_hash[h], q) for h, q in s[1].cart.items()]
        total = sum(v.price * q for v, q in lines)
        return self.render(request, "cart.html", title="Checkout" if checkout else "Cart",
                           heading="Checkout" if checkout else "Your cart", lines=lines, total=total,
                           checkout=checkout, link_items=not checkout, session=s,
                           description="Review the pieces in your cart.")


def create_app(catalog: Catalog, images: ImageSource, *, image_cache: int = 512) -> FastAPI:
    """Build the shop app. ``images`` serves ``/images/<hash>.png`` (behind an LRU of
    ``image_cache`` images; 0 disables it)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    if image_cache > 0:
        images = CachedImageSource(images, max_items=image_cache)
    sessions = SessionStore()
    app.state.catalog, app.state.images, app.state.sessions = catalog, images, sessions
    pages = ShopPages(catalog, sessions)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):  # noqa: ANN202
        if exc.status_code == 404:
            return pages.not_found(request)
        return HTMLResponse(f"<!doctype html><title>Error {exc.status_code}</title>",
                            status_code=exc.status_code)

    _catalogue_routes(app, pages)
    _session_routes(app, pages)
    _search_and_image_routes(app, pages, images)
    return app


def _catalogue_routes(app: FastAPI, pages: ShopPages) -> None:
    """``/``, ``/category/<slug>``, ``/collection/<slug>`` and ``/product/<hash>``."""
    catalog = pages.catalog

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request):
        return pages.render(request, "home.html", title="Home",
                            description="Furniture and home accents in ten categories.")

    @app.get("/category/{slug}", response_class=HTMLResponse)
    def category(request: Request, slug: str):
        c = catalog.category_by_slug.get(slug)
        if c is None:
            return pages.not_found(request)
        tiles = []
        for col in catalog.collections_of(slug):
            prices = [v.price for v in catalog.variants_of(col.slug)]
            tiles.append((col, min(prices), max(prices)))
        return pages.render(request, "category.html", title=c.display, category=c, tiles=tiles,
                            description=f"{c.display}: ten collections of ten pieces each.",
                            crumbs=[("Home", "/"), (c.display, None)])

    @app.get("/collection/{slug}", response_class=HTMLResponse)
    def collection(request: Request, slug: str):
        col = catalog.collection_by_slug.get(slug)
        if col is None:
            return pages.not_found(request)
        c = catalog.category_by_slug[col.cat]
        return pages.render(request, "collection.html", title=col.name, collection=col, category=c,
                            variants=catalog.variants_of(slug),
                            description=f"{col.name}: ten pieces in the {c.display} category.",
                            crumbs=[("Home", "/"), (c.display, f"/category/{c.slug}"), (col.name, None)])

    @app.get("/product/{url_hash}", response_class=HTMLResponse)
    def product(request: Request, url_hash: str):
        v = catalog.by_hash.get(url_hash)
        return pages.not_found(request) if v is None else pages.product(request, v)


def _session_routes(app: FastAPI, pages: ShopPages) -> None:
    """The session's pages: wishlist and cart (add, show) and the mock checkout."""
    catalog = pages.catalog

    @app.post("/wishlist/add/{url_hash}")
    def wishlist_add(request: Request, url_hash: str):
        sid, sess, new = pages.session_of(request)
        if url_hash not in catalog.by_hash:
            return pages.not_found(request)
        sess.wish(url_hash)
        resp = RedirectResponse(f"/product/{url_hash}", status_code=303)
        return pages.with_session_cookie(resp, sid, new)

    @app.post("/cart/add/{url_hash}")
    def cart_add(request: Request, url_hash: str):
        sid, sess, new = pages.session_of(request)
        if url_hash not in catalog.by_hash:
            return pages.not_found(request)
        sess.add_to_cart(url_hash)
        resp = RedirectResponse("/cart", status_code=303)
        return pages.with_session_cookie(resp, sid, new)

    @app.get("/wishlist", response_class=HTMLResponse)
    def wishlist(request: Request):
        s = pages.session_of(request)
        items = [catalog.by_hash[h] for h in s[1].wishlist]
        return pages.render(request, "listing.html", title="Wishlist", heading="Your wishlist",
                            description="Pieces you saved for later.", items=items, session=s,
                            note=None if items else "Your wishlist is empty.")

    @app.get("/cart", response_class=HTMLResponse)
    def cart(request: Request):
        return pages.cart(request, checkout=False)

    @app.get("/checkout", response_class=HTMLResponse)
    def checkout(request: Request):
        return pages.cart(request, checkout=True)


def _search_and_image_routes(app: FastAPI, pages: ShopPages, images: ImageSource) -> None:
    """``/search?q=`` and the product images (``/images/<hash>.png``, ``/images/base/<hash>.png``)."""
    catalog = pages.catalog

    @app.get("/search", response_class=HTMLResponse)
    def search(request: Request, q: str = ""):
        items = search_catalog(catalog, q)[:SEARCH_LIMIT]
        q_short = q.strip()[:80]
        note = (f"{len(items)} results." if items else
                "No results. Try a category name or a collection name.") if q_short else \
            "Type a category, collection or product name into the search field."
        return pages.render(request, "listing.html", title="Search", heading="Search", query=q_short,
                            description="Search the shop by category, collection or product name.",
                            items=items, note=note)

    def image_response(request: Request, name: str, with_cue: bool) -> Response:
        # The file name is only ever a key into the catalogue, never a path.
        m = IMAGE_RE.match(name)
        if m is None or m.group(1) not in catalog.by_hash:
            return pages.not_found(request)
        try:
            data = images.get(m.group(1), with_cue=with_cue)
        except (KeyError, FileNotFoundError):
            return pages.not_found(request)
        return Response(data, media_type="image/png",
                        headers={"Cache-Control": "public, max-age=3600"})

    @app.get("/images/{name}")
    def image(request: Request, name: str):
        return image_response(request, name, with_cue=True)

    @app.get("/images/base/{name}")
    def image_base(request: Request, name: str):
        return image_response(request, name, with_cue=False)


def search_catalog(catalog: Catalog, q: str) -> list[Variant]:
    """Variants whose name, collection or category display matches every query word."""
    words = [w for w in re.findall(r"\w+", q.lower()) if w]
    if not words:
        return []
    out = []
    for v in catalog.variants:
        hay = f"{v.name} {v.collection} {catalog.category_by_slug[v.cat].display}".lower()
        if all(w in hay for w in words):
            out.append(v)
    return out
