"""The storefront over plain HTTP: the browser environment's contract without a browser.

:class:`HttpEnv` is a fast non-browser path (httpx GETs against the same storefront) with the
browser's contract and the same ``click_index`` semantics, for tests that need many sessions
(policy compliance over 20 seeds) and for quick local runs. :func:`click_targets` is the pure
form of ``click_index``: it mirrors ``env.browser._TARGETS_JS`` (the N-th distinct same-origin
``/product/`` or ``/collection/`` link inside ``<main>``, DOM order); a test checks the two
agree on real pages. Action semantics come from :class:`env.pageenv.BasePageEnv`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

from env.pageenv import PRODUCT_PATH, BasePageEnv, Observation


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

    def __init__(self, base_url: str, *, timeout_s: float = 30.0) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._client: Any = None
        self._url = "/"
        self._html = ""
        self._status: int | None = None

    def reset(self, start_url: str = "/") -> Observation:
        import httpx

        self.close()  # a fresh client: no cookies, no shop session (the context wipe)
        self._client = httpx.Client(base_url=self.base_url, timeout=self.timeout_s, follow_redirects=True)
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

    def observe(self) -> Observation:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(self._html, "html.parser")
        title = soup.title.get_text() if soup.title else ""
        meta = soup.find("meta", attrs={"name": "description"})
        m = PRODUCT_PATH.match(urlsplit(self._url).path)
        image = None
        if m:
            img = soup.select_one("main #product-image")
            if img is not None and img.get("src"):
                r = self._client.get(img["src"])
                image = r.content if r.status_code == 200 else None
        return Observation(url=self._url, title=title, description=(meta.get("content") if meta else "") or "",
                           mode="product_image", image=image, url_hash=m.group(1) if m else None,
                           status=self._status)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def http_env(shop_url: str, *, observation: str = "product_image", step_timeout_s: float = 30.0) -> HttpEnv:
    """An :class:`HttpEnv` on ``shop_url`` (``observation`` must be ``product_image``)."""
    from env.pageenv import make_env

    return make_env("http", shop_url, observation=observation, step_timeout_s=step_timeout_s)
