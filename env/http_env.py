"""The storefront over plain HTTP: the browser environment's contract without a browser.

:class:`HttpEnv` is a fast non-browser path (httpx GETs against the same storefront) with the
browser's contract and the same ``click_index`` semantics, for tests that need many sessions
(policy compliance over 20 seeds) and for quick local runs. :func:`click_targets` is the pure
form of ``click_index``: it mirrors ``env.browser._TARGETS_JS`` (the N-th distinct same-origin
``/product/`` or ``/collection/`` link inside ``<main>``, DOM order); a test checks the two
agree on real pages. Action semantics come from :class:`env.pageenv.BasePageEnv`.
"""

from __future__ import annotations

import html as _html
import re
from collections import OrderedDict
from typing import Any
from urllib.parse import urljoin, urlsplit

from env.pageenv import PRODUCT_PATH, BasePageEnv, Observation

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


class HttpEnv(BasePageEnv):
    """The browser contract over plain HTTP (``product_image`` observations only)."""

    #: Product images kept per env (the shop's images are static; a probe revisits them often).
    IMAGE_CACHE = 256

    def __init__(self, base_url: str, *, timeout_s: float = 30.0) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._client: Any = None
        self._url = "/"
        self._html = ""
        self._status: int | None = None
        self._images: OrderedDict[str, bytes | None] = OrderedDict()

    def reset(self, start_url: str = "/") -> Observation:
        import httpx

        # The context wipe: no cookies, no shop session. One kept-alive client per env (building
        # one costs ~20 ms, mostly loading the TLS trust store), its cookie jar emptied.
        if self._client is None:
            self._client = httpx.Client(base_url=self.base_url, timeout=self.timeout_s, follow_redirects=True)
        self._client.cookies.clear()
        self._url, self._html, self._status = "/", "", None
        self._begin_episode()
        err = self._nav(start_url, {})
        if err:
            raise ConnectionError(err)
        return self.observe()

    def _goto(self, path: str) -> int | None:
        r = self._client.get(path)
        u = urlsplit(str(r.url))
        self._url = u.path + (f"?{u.query}" if u.query else "")
        self._html, self._status = r.text, r.status_code
        return self._status

    def current_path(self) -> str:
        return self._url

    def click_targets(self) -> list[str]:
        return click_targets(self._html, self.base_url + self._url)

    def _image(self, src: str) -> bytes | None:
        if src in self._images:
            self._images.move_to_end(src)
            return self._images[src]
        r = self._client.get(src)
        data = r.content if r.status_code == 200 else None
        if data is not None:  # a failed fetch is retried next time
            self._images[src] = data
            while len(self._images) > self.IMAGE_CACHE:
                self._images.popitem(last=False)
        return data

    def observe(self) -> Observation:
        title, description, src = page_fields(self._html)
        m = PRODUCT_PATH.match(urlsplit(self._url).path)
        image = self._image(src) if (m and src) else None
        return Observation(url=self._url, title=title, description=description, mode="product_image", image=image,
                           url_hash=m.group(1) if m else None, status=self._status)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def http_env(shop_url: str, *, observation: str = "product_image", step_timeout_s: float = 30.0) -> HttpEnv:
    """An :class:`HttpEnv` on ``shop_url`` (``observation`` must be ``product_image``)."""
    from env.pageenv import make_env

    return make_env("http", shop_url, observation=observation, step_timeout_s=step_timeout_s)
