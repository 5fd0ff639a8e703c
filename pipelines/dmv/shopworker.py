"""What every DMV-Bench shop actor shares (the ``encode`` and ``probes`` workers).

A worker owns a storefront of its own (or uses a running one), makes its page env in the thread
that uses it (Playwright's sync API is bound to the thread that started it, and a Ray actor may
call its UDF from another thread than its constructor's), builds each model client once, runs its
units under one failure rule and closes everything it started.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from vismem.core.failures import UnitFailed

log = logging.getLogger("vismem.shop")


class ShopWorker:
    """Base of the shop actors: storefront, thread-bound page env, model clients, failure rule.

    Subclasses call :meth:`_start` from their constructor and :meth:`_run_one` per unit.
    """

    #: Longest error text kept per failed unit (the results table stores it).
    error_cap = 2000

    def _start(self, *, shop_url: str | None, shop: dict[str, Any], env_factory: Any,
               env_kwargs: dict[str, Any]) -> None:
        """Start the worker's own storefront (``ShopServer.from_data(**shop)``) unless ``shop_url``
        names a running one, and remember how to make the page env."""
        self.shop = None
        if shop_url is None:
            from vismem.env.storefront.server import ShopServer

            self.shop = ShopServer.from_data(**shop).start()
            shop_url = self.shop.url
        self.shop_url = shop_url
        self._factory, self._env_kwargs = env_factory, dict(env_kwargs)
        self._env: Any = None
        self._env_thread: int | None = None
        self._models: dict[int, Any] = {}

    @property
    def env(self) -> Any:
        """The page env, made on first use in the calling thread."""
        me = threading.get_ident()
        if self._env is None or self._env_thread != me:
            self._env = self._factory(self.shop_url, **self._env_kwargs)
            self._env_thread = me
        return self._env

    def _model(self, i: int, build: Callable[[], Any]) -> Any:
        """Model client ``i``, built once per worker."""
        if i not in self._models:
            self._models[i] = build()
        return self._models[i]

    def _run_one(self, run: Callable[[], dict[str, Any]], what: str) -> tuple[dict[str, Any] | None, str | None]:
        """``(summary, None)``, or ``(None, error)`` when the unit failed. Nothing is cached for a
        failed unit (its done marker is never written), so a re-run retries it."""
        try:
            return run(), None
        except UnitFailed as e:  # the model's calls failed; the page env is fine
            log.error("%s failed: %s", what, e)
            return None, str(e)[: self.error_cap]
        except Exception as e:  # noqa: BLE001 - reported per unit
            log.exception("%s failed", what)
            self._recover()
            return None, f"{type(e).__name__}: {e}"[: self.error_cap]

    def _recover(self) -> None:
        # A crashed browser would fail every later unit of this actor: rebuild the env.
        env, self._env = self._env, None
        try:
            if env is not None:
                env.close()
        except Exception:  # noqa: BLE001 - a crashed browser may not close cleanly
            log.exception("closing the page env failed")

    def close(self) -> None:
        """Close the model clients, the page env (in its own thread) and the storefront."""
        for model in self._models.values():
            closer = getattr(model, "close", None)
            if closer:
                closer()
        env, self._env = self._env, None
        if env is not None and self._env_thread == threading.get_ident():
            env.close()
        if self.shop is not None:
            self.shop.stop()
            self.shop = None

    def __del__(self) -> None:  # actors are torn down without an explicit close
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
