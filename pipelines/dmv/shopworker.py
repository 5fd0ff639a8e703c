"""What every DMV-Bench shop actor shares (the ``encode`` and ``probes`` workers).

A worker owns a storefront of its own (or uses a running one), runs up to ``episodes`` units at
once (threads: an episode spends nearly all its time waiting for a model, so one actor keeps
many requests in flight), gives each thread its own page env (Playwright's sync API is bound to
the thread that started it, and a Ray actor may call its UDF from another thread than its
constructor's; HTTP envs share one page cache), builds each model client once (clients are shared by the threads and cap their
own in-flight requests), runs its units under one failure rule and closes what it started.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, TypeVar

from vismem.core.errors import NoSpace, StoreUnreachable
from vismem.core.failures import UnitFailed

log = logging.getLogger("vismem.shop")

T = TypeVar("T")
R = TypeVar("R")


class ShopWorker:
    """Base of the shop actors: storefront, thread-bound page env, model clients, failure rule.

    Subclasses call :meth:`_start` from their constructor and :meth:`_run_one` per unit.
    """

    #: Longest error text kept per failed unit (the results table stores it).
    error_cap = 2000

    def _start(self, *, shop_url: str | None, shop: dict[str, Any], env_factory: Any,
               env_kwargs: dict[str, Any], episodes: int = 1) -> None:
        """Start the worker's own storefront (``ShopServer.from_data(**shop)``) unless ``shop_url``
        names a running one, and remember how to make the page env; ``episodes``: units run at
        once (1: one after another in the calling thread)."""
        self.shop = None
        if shop_url is None:
            from vismem.env.storefront.server import ShopServer

            self.shop = ShopServer.from_data(**shop).start()
            shop_url = self.shop.url
        self.shop_url = shop_url
        self._factory, self._env_kwargs = env_factory, dict(env_kwargs)
        self._local = threading.local()
        self._envs: list[tuple[int, Any]] = []  # (owner thread, env) for close()
        self._envs_lock = threading.Lock()
        self._env_cache: Any = None  # the page cache the worker's envs share, when they have one
        self._models: dict[int, Any] = {}
        self._models_lock = threading.Lock()
        self.episodes = max(1, int(episodes))
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._pools_lock = threading.Lock()

    @property
    def env(self) -> Any:
        """The calling thread's page env, made on first use in that thread."""
        env = getattr(self._local, "env", None)
        if env is None:
            env = self._local.env = self._factory(self.shop_url, **self._env_kwargs)
            with self._envs_lock:
                self._envs.append((threading.get_ident(), env))
                # An env that caches the shop's pages (the HTTP env) shares one cache with the
                # worker's other envs: the pages are the same shop's, read once per actor.
                if getattr(env, "cache", None) is not None:
                    if self._env_cache is None:
                        self._env_cache = env.cache
                    env.cache = self._env_cache
        return env

    def _map(self, fn: Callable[[T], R], items: Iterable[T], *, inner: bool = False) -> list[R]:
        """``fn`` over ``items``, up to ``episodes`` at once; results in input order.

        ``inner``: on the second pool, for the episodes of a unit that the first pool runs (a
        probe unit's probes): a unit waiting on its episodes never holds a thread they need.
        """
        items = list(items)
        if self.episodes == 1 or len(items) < 2:
            return [fn(x) for x in items]
        name = "inner" if inner else "episode"
        with self._pools_lock:
            pool = self._pools.get(name)
            if pool is None:
                pool = self._pools[name] = ThreadPoolExecutor(self.episodes, thread_name_prefix=name)
        return list(pool.map(fn, items))

    def _model(self, i: int, build: Callable[[], Any]) -> Any:
        """Model client ``i``, built once per worker (shared by its threads)."""
        with self._models_lock:
            if i not in self._models:
                self._models[i] = build()
            return self._models[i]

    def _run_one(self, run: Callable[[], dict[str, Any]], what: str) -> tuple[dict[str, Any] | None, str | None]:
        """``(summary, None)``, or ``(None, error)`` when the unit failed. Nothing is cached for a
        failed unit (its done marker is never written), so a re-run retries it."""
        try:
            return run(), None
        except (NoSpace, StoreUnreachable):  # the store failed, not this unit: the stage stops
            raise
        except UnitFailed as e:  # the model's calls failed; the page env is fine
            log.error("%s failed: %s", what, e)
            return None, str(e)[: self.error_cap]
        except Exception as e:  # noqa: BLE001 - reported per unit
            log.exception("%s failed", what)
            self._recover()
            return None, f"{type(e).__name__}: {e}"[: self.error_cap]

    def _recover(self) -> None:
        # A crashed browser would fail every later unit of this thread: rebuild its env.
        env, self._local.env = getattr(self._local, "env", None), None
        with self._envs_lock:
            self._envs = [(t, e) for t, e in self._envs if e is not env]
        try:
            if env is not None:
                env.close()
        except Exception:  # noqa: BLE001 - a crashed browser may not close cleanly
            log.exception("closing the page env failed")

    def close(self) -> None:
        """Close the model clients, the page envs and the storefront.

        Each thread's env is closed in that thread (the episode pool's threads close their own).
        """
        for model in self._models.values():
            closer = getattr(model, "close", None)
            if closer:
                closer()
        with self._pools_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            # One task per pool thread (the barrier holds each until all have one), so every
            # thread closes the env it made.
            barrier = threading.Barrier(self.episodes)

            def close_here(_i: int, barrier: threading.Barrier = barrier) -> None:
                try:
                    barrier.wait(timeout=10)
                except threading.BrokenBarrierError:
                    pass
                self._close_own_env()

            for _ in pool.map(close_here, range(self.episodes)):
                pass
            pool.shutdown(wait=True)
        self._close_own_env()
        with self._envs_lock:
            left, self._envs = self._envs, []
        if left:  # made by threads that are gone (a Ray actor's call threads): the process ends them
            log.debug("%d page env(s) left to the actor's exit", len(left))
        if self.shop is not None:
            self.shop.stop()
            self.shop = None

    def _close_own_env(self) -> None:
        env = getattr(self._local, "env", None)
        if env is None:
            return
        self._local.env = None
        with self._envs_lock:
            self._envs = [(t, e) for t, e in self._envs if e is not env]
        env.close()

    def __del__(self) -> None:  # actors are torn down without an explicit close
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
