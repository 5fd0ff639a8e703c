"""The storefront over plain HTTP: the browser environment's contract without a browser.

:class:`HttpEnv` is a fast non-browser path (httpx GETs against the same storefront) with the
browser's contract and the same ``click_index`` semantics, for tests that need many sessions
(policy compliance over 20 seeds) and for quick local runs. :func:`click_targets` is the pure
form of ``click_index``: it mirrors ``env.browser._TARGETS_JS`` (the N-th distinct same-origin
``/product/`` or ``/collection/`` link inside ``<main>``, DOM order); a test checks the two
agree on real pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

PRODUCT_PATH = re.compile(r"^/product/([0-9a-f]{8})$")
MAX_INDEX = 9


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


@dataclass(frozen=True)
class HttpObservation:
    url: str
    title: str
    description: str
    image: bytes | None
    url_hash: str | None
    status: int | None


@dataclass(frozen=True)
class HttpStepResult:
    observation: HttpObservation
    ok: bool
    error: str | None


class HttpEnv:
    """The browser contract over plain HTTP (``product_image`` observations only)."""

    def __init__(self, base_url: str, *, timeout_s: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._client: Any = None
        self._url = "/"
        self._html = ""
        self._status: int | None = None

    def reset(self, start_url: str = "/") -> HttpObservation:
        import httpx

        self.close()  # a fresh client: no cookies, no shop session (the context wipe)
        self._client = httpx.Client(base_url=self.base_url, timeout=self.timeout_s, follow_redirects=True)
        self._url, self._html, self._status = "/", "", None
        err = self._goto(start_url)
        if err:
            raise ConnectionError(err)
        return self.observe()

    def _goto(self, path: str) -> str | None:
        try:
            r = self._client.get(path)
        except Exception as e:  # noqa: BLE001 - the step records it
            return f"navigation to {path} failed: {type(e).__name__}: {e}"
        u = urlsplit(str(r.url))
        self._url = u.path + (f"?{u.query}" if u.query else "")
        self._html, self._status = r.text, r.status_code
        return None

    def observe(self) -> HttpObservation:
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
        return HttpObservation(url=self._url, title=title, description=(meta.get("content") if meta else "") or "",
                               image=image, url_hash=m.group(1) if m else None, status=self._status)

    def step(self, action: Any) -> HttpStepResult:
        error = None
        if action.type in ("navigate", "click_product"):
            if not action.url or not action.url.startswith("/") or action.url.startswith("//"):
                error = f"navigate needs a site path starting with '/', got {action.url!r}"
            else:
                error = self._goto(action.url)
        elif action.type == "click_index":
            targets = click_targets(self._html, self.base_url + self._url)
            n = action.index
            if n is None or not 0 <= n <= MAX_INDEX or n >= len(targets):
                error = f"click_index({n}) out of range: this page has {len(targets)} clickable items"
            else:
                error = self._goto(targets[n])
        else:
            error = f"{action.type} is not executed by the HTTP env"
        return HttpStepResult(observation=self.observe(), ok=error is None, error=error)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "HttpEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def http_env(shop_url: str, *, observation: str = "product_image", step_timeout_s: float = 30.0) -> HttpEnv:
    """Env factory for :class:`EncodeWorker` (``observation`` must be ``product_image``)."""
    if observation != "product_image":
        raise ValueError("the HTTP env only supports product_image observations")
    return HttpEnv(shop_url, timeout_s=step_timeout_s)
