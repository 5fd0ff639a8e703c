"""The page-environment contract agents drive, and the base both implementations share.

An agent loop sees a page environment through :class:`PageEnv`: ``reset(start_url)`` (a fresh
context: no cookies, storage or shop session — the context wipe between sessions),
``observe()`` and ``step(action)``. Two implementations share :class:`BasePageEnv`, which owns
the action semantics (what ``navigate``, ``click_index``, ``add_to_wishlist`` and ``done`` do,
and what counts as an error), so the two cannot drift apart:

* :class:`vismem.env.browser.BrowserEnv` — real Chromium through Playwright (the protocol);
* :class:`vismem.env.http_env.HttpEnv` — plain HTTP GETs against the same shop, with the same
  ``click_index`` targets (a fast path: the paper's product-image mode needs no pixels of the
  page itself).

:func:`vismem.env.envs.make_env` builds either by name (``encode.env: browser | http``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from vismem.env.actions import Action, parse_action

ObservationMode = Literal["product_image", "screenshot"]
PRODUCT_PATH = re.compile(r"^/product/([0-9a-f]{8})$")
#: click_index accepts 0..MAX_INDEX (the official action grammar).
MAX_INDEX = 9


@dataclass(frozen=True)
class Observation:
    """The page as the agent sees it."""

    url: str                      # site-relative: "/product/df5b5fde"
    title: str
    description: str              # the page's meta description
    mode: ObservationMode
    image: bytes | None           # PNG: product image (product pages) or screenshot; else None
    url_hash: str | None          # product hash on product pages
    status: int | None = None     # HTTP status of the last navigation

    @property
    def is_product_page(self) -> bool:
        return self.url_hash is not None


@dataclass(frozen=True)
class StepResult:
    """What one ``step`` did. ``ok`` is False for an invalid or failed action (page unchanged)."""

    observation: Observation
    action: Action
    ok: bool
    error: str | None
    terminal: bool
    step: int                     # steps taken so far in this episode (this one included)
    terminated_by: str | None = None
    wishlisted: str | None = None  # product path added to the wishlist (success exit)
    elapsed_ms: float = 0.0
    info: dict = field(default_factory=dict)


@runtime_checkable
class PageEnv(Protocol):
    """The environment as agent loops use it."""

    def reset(self, start_url: str = "/") -> Observation: ...
    def observe(self) -> Observation: ...
    def step(self, action: Action | str) -> StepResult: ...
    def close(self) -> None: ...


class BasePageEnv:
    """Action semantics shared by every page env; subclasses fetch and read pages.

    Subclasses implement ``reset``, ``observe``, ``current_path``, ``click_targets`` and
    ``_goto(path) -> HTTP status``, and may implement ``_wishlist(info) -> error | None``.
    """

    def __init__(self) -> None:
        self.steps = 0
        self.finished: str | None = None

    # -- to implement -------------------------------------------------------------------
    def reset(self, start_url: str = "/") -> Observation:
        raise NotImplementedError

    def observe(self) -> Observation:
        raise NotImplementedError

    def current_path(self) -> str:
        raise NotImplementedError

    def click_targets(self) -> list[str]:
        """The ``click_index`` targets of the current page, in order."""
        raise NotImplementedError

    def _goto(self, path: str) -> int | None:
        raise NotImplementedError

    def _wishlist(self, info: dict) -> str | None:
        return "add_to_wishlist is not executed by this environment"

    def close(self) -> None:
        pass

    def __enter__(self) -> "BasePageEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- shared semantics ---------------------------------------------------------------
    def _begin_episode(self) -> None:
        self.steps, self.finished = 0, None

    def _nav(self, path: str, info: dict) -> str | None:
        try:
            status = self._goto(path)
        except Exception as e:  # noqa: BLE001 - a timeout/network error is the agent's failed step
            return f"navigation to {path} failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        info["status"] = status
        return None

    def step(self, action: Action | str) -> StepResult:
        """Execute one action; every call (valid or not) counts as a step."""
        t0 = time.perf_counter()
        if isinstance(action, str):
            action = parse_action(action)
        self.steps += 1
        error, terminal, by, wished, info = None, False, None, None, {}
        if self.finished is not None:
            error = f"episode already ended by {self.finished}; call reset()"
        elif action.type in ("navigate", "click_product"):
            if not action.url or not action.url.startswith("/") or action.url.startswith("//"):
                error = f"navigate needs a site path starting with '/', got {action.url!r}"
            else:
                error = self._nav(action.url, info)
        elif action.type == "click_index":
            targets = self.click_targets()
            n = action.index
            if n is None or not 0 <= n <= MAX_INDEX or n >= len(targets):
                error = f"click_index({n}) out of range: this page has {len(targets)} clickable items"
            else:
                info["target"] = targets[n]
                error = self._nav(targets[n], info)
        elif action.type == "add_to_wishlist":
            terminal, by = True, "add_to_wishlist"
            if action.url_hash and self.current_path() != f"/product/{action.url_hash}":
                error = self._nav(f"/product/{action.url_hash}", info)
            if error is None:
                error = self._wishlist(info)
                wished = info.get("wishlisted")
        elif action.type == "done":
            terminal, by = True, "done"
        else:
            error = f"invalid action: {action.raw[:200]!r}"
        if terminal:
            self.finished = by
        obs = self.observe()
        return StepResult(observation=obs, action=action, ok=error is None, error=error,
                          terminal=terminal, step=self.steps, terminated_by=by, wishlisted=wished,
                          elapsed_ms=(time.perf_counter() - t0) * 1000, info=info)

