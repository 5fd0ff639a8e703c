"""The storefront over plain HTTP: the browser environment's contract without a browser.

:class:`HttpEnv` is a fast non-browser path (httpx GETs against the same storefront) with the
browser's contract and the same ``click_index`` semantics, for tests that need many sessions
(policy compliance over 20 seeds) and for quick local runs. :func:`click_targets` is the pure
form of ``click_index``: it mirrors ``vismem.env.browser._TARGETS_JS`` (the N-th distinct same-origin
``/product/`` or ``/collection/`` link inside ``<main>``, DOM order); a test checks the two
agree on real pages. Action semantics come from :class:`vismem.env.pageenv.BasePageEnv`.

Speed: one kept-alive client per env, product images cached, and pages cached by path. The
HTTP env never POSTs (``add_to_wishlist`` is not executed), so a page's observation -- final URL,
status, title, description, product image and click targets, all read inside ``<main>`` or the
head -- is a function of its path alone: the shop's session state (the recently-viewed strip and
cart count outside ``<main>``) never reaches it. A probe worker asks for ``/`` and the same few
product pages thousands of times; each fetch costs the shop a template render (~5 ms on 2 busy
cores), so pages are fetched once per cache. The session pages (wishlist, cart, checkout) list
session state and are always fetched. Envs on the same shop may share one :class:`PageCache`
(``env.cache = other.cache``): a shop actor running 32 episodes at once has 32 envs, and
fetching and parsing every page once per env was most of its page work.
"""

from __future__ import annotations

import html as _html
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from vismem.env.pageenv import PRODUCT_PATH, BasePageEnv, Observation

_TITLE_RE = re.compile(r"<title>(.*?)</title>", re.S | re.I)
_META_RE = re.compile(r"<meta\s+name=\"description\"\s+content=\"([^\"]*)\"", re.I)
_IMG_RE = re.compile(r"<img\b[^>]*\bid=\"product-image\"[^>]*>", re.I)
_SRC_RE = re.compile(r"\bsrc=\"([^\"]*)\"")


def page_fields(html: str) -> tuple[str, str, str | None]:
    """``(title, meta description, product-image src inside <main>)`` of a shop page.

    Regular expressions over the shop's own templates, entities decoded: what the browser's
    ``document.title`` / meta / ``main #product-image`` give (a test checks them against an HTML
    parser on every page kind); about 50x faster than building a soup per observation.
    """
    t = _TITLE_RE.search(html)
    m = _META_RE.search(html)
    main = html.find("<main")
    img = _IMG_RE.search(html, main) if main >= 0 else None
    src = _SRC_RE.search(img.group(0)) if img else None
    return (_html.unescape(t.group(1)) if t else "", _html.unescape(m.group(1)) if m else "",
            _html.unescape(src.group(1)) if src else None)


def click_targets(html: str, page_url: str) -> list[str]:
    """``click_index`` targets of a page: distinct same-origin product/collection paths in <main>."""
    from bs4 import BeautifulSoup

    main = BeautifulSoup(html, "html.parser").find("main")
    if main is None:
        return []
    origin = urlsplit(page_url)[:2]
    seen: dict[str, None] = {}
    for a in main.find_all("a", href=True):
        u = urlsplit(urljoin(page_url, a["href"]))
        if u[:2] != origin:
            continue
        if (u.path.startswith("/product/") or u.path.startswith("/collection/")) and u.path not in seen:
            seen[u.path] = None
    return list(seen)


#: Paths whose page shows the shop session's state: never served from the page cache.
_SESSION_PAGES = ("/wishlist", "/cart", "/checkout")


@dataclass
class _Page:
    """One fetched page as the env reads it (what the page cache keeps)."""

    url: str                        # site-relative final URL (redirects followed)
    status: int | None
    html: str
    fields: tuple[str, str, str | None]  # page_fields(html)
    targets: list[str] | None = None      # click_targets, computed on first use


class _LRU:
    """A bounded mapping, least recently used out first; thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def keys(self) -> list[str]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._d)

    def get(self, key: str) -> Any:
        with self._lock:
            value = self._d.get(key)
            if value is not None:
                self._d.move_to_end(key)
            return value

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)


class PageCache:
    """Pages by path and product images by src of one shop (see the module doc); shared by
    the envs of one shop actor's threads."""

    #: Product images kept (the shop's images are static; a probe revisits them often).
    IMAGE_CACHE = 256
    #: Pages kept (the whole shop is ~1,100 pages; a probe unit reads a few dozen).
    PAGE_CACHE = 1024

    def __init__(self) -> None:
        self.pages = _LRU(self.PAGE_CACHE)
        self.images = _LRU(self.IMAGE_CACHE)


class HttpEnv(BasePageEnv):
    """The browser contract over plain HTTP (``product_image`` observations only)."""

    def __init__(self, base_url: str, *, timeout_s: float = 30.0, cache: PageCache | None = None) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._client: Any = None
        self._page = _Page("/", None, "", ("", "", None))
        #: Pages and images of this shop already read (assign another env's to share it).
        self.cache = cache or PageCache()
        #: Page requests actually sent (the rest came from the page cache).
        self.fetches = 0

    def reset(self, start_url: str = "/") -> Observation:
        import httpx

        # The context wipe: no cookies, no shop session. One kept-alive client per env (building
        # one costs ~20 ms, mostly loading the TLS trust store), its cookie jar emptied.
        if self._client is None:
            self._client = httpx.Client(base_url=self.base_url, timeout=self.timeout_s, follow_redirects=True)
        self._client.cookies.clear()
        self._page = _Page("/", None, "", ("", "", None))
        self._begin_episode()
        err = self._nav(start_url, {})
        if err:
            raise ConnectionError(err)
        return self.observe()

    def _goto(self, path: str) -> int | None:
        page = self.cache.pages.get(path)
        if page is None:
            r = self._client.get(path)
            self.fetches += 1
            u = urlsplit(str(r.url))
            url = u.path + (f"?{u.query}" if u.query else "")
            page = _Page(url, r.status_code, r.text, page_fields(r.text))
            if r.status_code < 500 and _cacheable(path) and _cacheable(url):  # a server error is retried
                self.cache.pages.put(path, page)
        self._page = page
        return page.status

    def current_path(self) -> str:
        return self._page.url

    def click_targets(self) -> list[str]:
        page = self._page
        if page.targets is None:
            page.targets = click_targets(page.html, self.base_url + page.url)
        return list(page.targets)

    def _image(self, src: str) -> bytes | None:
        data = self.cache.images.get(src)
        if data is not None:
            return data
        r = self._client.get(src)
        data = r.content if r.status_code == 200 else None
        if data is not None:  # a failed fetch is retried next time
            self.cache.images.put(src, data)
        return data

    def observe(self) -> Observation:
        page = self._page
        title, description, src = page.fields
        m = PRODUCT_PATH.match(urlsplit(page.url).path)
        image = self._image(src) if (m and src) else None
        return Observation(url=page.url, title=title, description=description, mode="product_image", image=image,
                           url_hash=m.group(1) if m else None, status=page.status)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _cacheable(path: str) -> bool:
    """Whether a page's observation depends on its path alone (not on the shop session)."""
    p = urlsplit(path).path
    return not any(p == s or p.startswith(s + "/") for s in _SESSION_PAGES)

