"""Page envs by name: the ``env`` registry (``encode.env: browser | http``) and :func:`make_env`.

The contract (:class:`vismem.env.pageenv.PageEnv`) knows nothing of its implementations; this
module sits above both and registers them:

* ``browser`` — :class:`vismem.env.browser.BrowserEnv`, real Chromium through Playwright;
* ``http`` — :class:`vismem.env.http_env.HttpEnv`, plain HTTP GETs (``product_image`` only).

Every factory takes ``(shop_url, *, observation, step_timeout_s)`` and returns a started env.
"""

from __future__ import annotations

from vismem.core.registry import Registry
from vismem.env.browser import BrowserEnv
from vismem.env.http_env import HttpEnv
from vismem.env.pageenv import ObservationMode, PageEnv

#: Page envs by name (``vismem list envs``).
ENVS: Registry[PageEnv] = Registry("env")


@ENVS.register("browser")
def browser_env(shop_url: str, *, observation: ObservationMode = "product_image",
                step_timeout_s: float = 30.0) -> BrowserEnv:
    """Real Chromium through Playwright (``product_image`` or ``screenshot`` observations)."""
    return BrowserEnv(shop_url, observation=observation, timeout_ms=int(step_timeout_s * 1000)).start()


@ENVS.register("http")
def http_env(shop_url: str, *, observation: ObservationMode = "product_image",
             step_timeout_s: float = 30.0) -> HttpEnv:
    """Plain HTTP GETs against the shop, same click targets (``product_image`` observations only)."""
    if observation != "product_image":
        raise ValueError("the HTTP env only supports product_image observations")
    return HttpEnv(shop_url, timeout_s=step_timeout_s)


def make_env(kind: str, shop_url: str, *, observation: ObservationMode = "product_image",
             step_timeout_s: float = 30.0) -> PageEnv:
    """A started page env of a registered ``kind`` (``browser`` or ``http``) on ``shop_url``."""
    if kind not in ENVS:
        raise ValueError(f"unknown env {kind!r}; allowed: {', '.join(ENVS.names())}")
    return ENVS.build({"name": kind, "args": {"shop_url": shop_url, "observation": observation,
                                              "step_timeout_s": step_timeout_s}})
