"""The browsing environment: real Chromium (Playwright, sync API) driving the storefront.

    with BrowserEnv(shop.url, observation="screenshot") as env:
        obs = env.reset("/category/chair")
        res = env.step("Thought: ...\\nAction: click_index(2)")

* ``reset(start_url)`` opens a fresh browser context (cookies, storage and shop session wiped;
  the official runner reuses one and leaks ``localStorage`` across sessions) and loads the URL.
* ``observe()`` returns an :class:`Observation` with the real URL, ``<title>`` and meta
  description, plus pixels by mode: ``product_image`` (the official one: the product image
  bytes on product pages, nothing elsewhere) or ``screenshot`` (the rendered viewport PNG).
* ``step(action)`` executes an :class:`vismem.env.actions.Action` (or parses a reply string).
  An invalid action leaves the page unchanged, returns an error message and counts as a step.
  ``add_to_wishlist`` (success exit) and ``done`` (failure exit) end the episode.

In ``product_image`` mode the browser runs with images disabled (``block_images``): the agent
never sees page pixels, so Chromium need not fetch and decode a page's dozen card images.
Change ``mode`` between episodes: the next ``reset`` relaunches Chromium if the flags differ.
Playwright's sync API allows one environment per thread at a time.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from vismem.env.pageenv import PRODUCT_PATH, BasePageEnv, Observation, ObservationMode

CHROMIUM_PATH = "/usr/bin/chromium"
#: Flags for Chromium on a closed network as root (same as tests/conftest.py).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# N-th distinct /product/ or /collection/ link inside <main>, in DOM order (click_index).
_TARGETS_JS = """() => {
  const main = document.querySelector('main');
  if (!main) return [];
  const seen = new Set(), out = [];
  for (const a of main.querySelectorAll('a[href]')) {
    const u = new URL(a.getAttribute('href'), location.href);
    if (u.origin !== location.origin) continue;
    const p = u.pathname;
    if ((p.startsWith('/product/') || p.startsWith('/collection/')) && !seen.has(p)) {
      seen.add(p); out.push(p);
    }
  }
  return out;
}"""
_META_JS = """() => {
  const m = document.querySelector('meta[name="description"]');
  const img = document.querySelector('main #product-image');
  return [document.title, m ? m.getAttribute('content') : '', img ? img.src : null];
}"""


class BrowserEnv(BasePageEnv):
    """One Chromium, one fresh context per episode."""

    def __init__(self, base_url: str, *, observation: ObservationMode = "product_image",
                 viewport: tuple[int, int] = (1280, 900), chromium_path: str = CHROMIUM_PATH,
                 timeout_ms: int = 15_000, block_images: bool = True) -> None:
        super().__init__()
        if observation not in ("product_image", "screenshot"):
            raise ValueError(f"observation must be 'product_image' or 'screenshot', not {observation!r}")
        self.base_url = base_url.rstrip("/")
        self.mode: ObservationMode = observation
        self.viewport = {"width": viewport[0], "height": viewport[1]}
        self.chromium_path, self.timeout_ms = chromium_path, timeout_ms
        self.block_images = block_images  # only in product_image mode
        self._images_on: bool | None = None
        self._pw = self._browser = self._context = self._page = None
        self._client = None
        self._status: int | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def _wants_images(self) -> bool:
        # In product_image mode the agent never sees page pixels: the browser need not fetch or
        # decode the dozen card images of a page (the observation fetches the one it needs).
        return self.mode == "screenshot" or not self.block_images

    def start(self) -> "BrowserEnv":
        from playwright.sync_api import sync_playwright

        if self._browser is not None and self._images_on != self._wants_images():
            self._close_browser()  # the observation mode changed: relaunch with the right flags
        if self._pw is None:
            self._pw = sync_playwright().start()
        if self._browser is None:
            self._images_on = self._wants_images()
            args = CHROMIUM_ARGS + ([] if self._images_on else ["--blink-settings=imagesEnabled=false"])
            self._browser = self._pw.chromium.launch(executable_path=self.chromium_path,
                                                     args=args, headless=True)
        return self

    def _close_browser(self) -> None:
        for obj in (self._context, self._browser):
            try:
                if obj is not None:
                    obj.close()
            except Exception:  # noqa: BLE001 - closing a dead browser must not mask errors
                pass
        self._browser = self._context = self._page = None

    def _http(self):
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=self.timeout_ms / 1000)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._close_browser()
        if self._pw is not None:
            self._pw.stop()
        self._pw = self._browser = self._context = self._page = None

    def __enter__(self) -> "BrowserEnv":
        return self.start()

    @property
    def page(self):
        if self._page is None:
            raise RuntimeError("call reset() first")
        return self._page

    # -- episode --------------------------------------------------------------------------
    def reset(self, start_url: str = "/") -> Observation:
        """Fresh context (no cookies, storage or shop session), then load ``start_url``."""
        self.start()
        if self._context is not None:
            self._context.close()
        self._context = self._browser.new_context(viewport=self.viewport)
        self._context.set_default_timeout(self.timeout_ms)
        self._page = self._context.new_page()
        self._begin_episode()
        self._goto(start_url)
        return self.observe()

    def _goto(self, path: str) -> int | None:
        # Screenshots need the images painted ("load"); the product-image mode fetches the image
        # itself, so the DOM is enough.
        wait = "load" if self.mode == "screenshot" else "domcontentloaded"
        resp = self.page.goto(self.base_url + path, wait_until=wait)
        self._status = resp.status if resp is not None else None
        return self._status

    def current_path(self) -> str:
        u = urlsplit(self.page.url)
        return u.path + (f"?{u.query}" if u.query else "")

    def observe(self) -> Observation:
        """The current page as the agent sees it."""
        page = self.page
        path = self.current_path()
        title, description, img_src = page.evaluate(_META_JS)  # one round trip
        m = PRODUCT_PATH.match(urlsplit(path).path)
        url_hash = m.group(1) if m else None
        image = None
        if self.mode == "screenshot":
            image = page.screenshot(full_page=False, type="png")
        elif url_hash is not None and img_src:
            # The bytes behind the page's own <img src>, fetched directly: one HTTP request on a
            # kept-alive connection instead of a round trip through the browser driver.
            r = self._http().get(img_src)
            image = r.content if r.status_code == 200 else None
        return Observation(url=path, title=title, description=description or "",
                           mode=self.mode, image=image, url_hash=url_hash, status=self._status)

    def click_targets(self) -> list[str]:
        """The click_index targets of the current page, in order."""
        return self.page.evaluate(_TARGETS_JS)

    def _wishlist(self, info: dict) -> str | None:
        btn = self.page.locator("[data-dmv-action='add-to-wishlist']")
        if btn.count() == 0:
            return "add_to_wishlist: there is no wishlist button on this page"
        with self.page.expect_navigation(wait_until="domcontentloaded"):
            btn.first.click()
        info["wishlisted"] = self.current_path()
        return None
