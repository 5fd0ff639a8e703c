"""Environments the encoding loop can drive.

- :func:`browser_env`: the real one, :class:`env.browser.BrowserEnv` (Playwright + Chromium).
- :func:`http_env`: :class:`env.http_env.HttpEnv`, the same contract over plain HTTP (fast tests,
  quick local runs).
"""

from __future__ import annotations

from typing import Any

from env.http_env import HttpEnv, click_targets, http_env  # noqa: F401 (the encode worker's factories)


def browser_env(shop_url: str, *, observation: str = "product_image", step_timeout_s: float = 30.0) -> Any:
    """A started :class:`env.browser.BrowserEnv` on ``shop_url``."""
    from env.browser import BrowserEnv

    return BrowserEnv(shop_url, observation=observation, timeout_ms=int(step_timeout_s * 1000)).start()
