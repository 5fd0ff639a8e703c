"""One encoding worker: its own storefront, its own browser, the VLM backends, the cache.

Used as the Ray Data actor of the ``encode`` stage (one per worker process), by the benchmark
and by tests in-process. Each session runs in a fresh browser context (the context wipe).
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from vismem.agents.chains import session_spec
from vismem.agents.session import SessionOptions, run_session
from vismem.core.failures import UnitFailed, check_failed_calls
from vismem.pipelines.dmv.protocol import default_env_factory
from vismem.pipelines.dmv.shopworker import ShopWorker
from vismem.pipelines.dmv.trajectories import TrajectoryCache
from vismem.serve.build import build_vlm

if TYPE_CHECKING:
    from vismem.core.store import Store

log = logging.getLogger("vismem.encode")


class EncodeWorker(ShopWorker):
    """Runs sessions for ``(backend index, seed, j)`` keys and writes them to the cache.

    Args:
        store: the run's store (picklable).
        backends: resolved VLM specs; ``slugs`` their cache slugs (same order).
        data_dir: folder with ``dmv-bench/``; ``catalog_seed``/``colour_order``/``images`` build
            the storefront exactly as the catalogue stage does.
        options: session protocol; ``observation``: ``product_image`` or ``screenshot``.
        shop_url: use a running storefront instead of starting one.
        max_failed_calls: largest share of a session's model calls that may fail for it to be cached
            (``encode.max_failed_calls``); past it the key fails and nothing is committed.
        session_retries: times a session with a failed call (under the threshold) is browsed again
            until every call has a model answer (``encode.session_retries``); past them the key fails.
        episodes: sessions browsed at once (each in its own thread with its own page env).
    """

    def __init__(self, store: "Store", backends: list[dict[str, Any]], slugs: list[str], *, data_dir: str,
                 catalog_seed: int = 0, colour_order: str = "seeded", images: Any = "placeholder",
                 options: SessionOptions = SessionOptions(), observation: str = "product_image",
                 step_timeout_s: float = 30.0, shop_url: str | None = None, env_factory: Any = None,
                 max_failed_calls: float = 0.5, session_retries: int = 3, episodes: int = 1) -> None:
        self.store = store
        self.max_failed_calls = float(max_failed_calls)
        self.session_retries = int(session_retries)
        self.backends, self.slugs = list(backends), list(slugs)
        self.options = options
        self.caches = [TrajectoryCache(store, s) for s in self.slugs]
        self._start(shop_url=shop_url, shop={"data_dir": data_dir, "seed": catalog_seed, "colour_order": colour_order,
                                             "images": images},
                    env_factory=env_factory or default_env_factory,
                    env_kwargs={"observation": observation, "step_timeout_s": step_timeout_s}, episodes=episodes)

    def vlm(self, i: int) -> Any:
        """The browsing VLM of back-end ``i`` (results never pass a stand-in off as a model)."""
        return self._model(i, lambda: _named(build_vlm(self.backends[i])))

    def run_key(self, backend: int, seed: int, j: int) -> dict[str, Any]:
        """Run and cache one session (skipped when already done); returns its summary."""
        cache = self.caches[backend]
        if cache.is_done(seed, j):
            return {**cache.read_summary(seed, j), "cached": True}
        t0 = time.perf_counter()
        def browse() -> tuple[Any, list[str | None]]:
            res = run_session(session_spec(seed, j), vlm=self.vlm(backend), env=self.env,
                              backend=self.slugs[backend], options=self.options, blob_sink=cache.put_blob)
            return res, [st.error for st in res.steps if st.status == "failed"]

        result, failed = browse()
        # An outage is not a trajectory: past the threshold the session is not committed, and
        # under it the session is browsed again (a failed call would otherwise be a forced
        # navigation the model never chose) until every call has a model answer.
        check_failed_calls(len(failed), len(result.steps), failed, limit=self.max_failed_calls,
                           field="encode.max_failed_calls")
        retried = 0
        while failed and retried < self.session_retries:
            retried += 1
            result, failed = browse()
        if failed:
            raise UnitFailed(f"{len(failed)} model calls still failed after {retried} re-runs of the session "
                             f"(encode.session_retries); first: {str(failed[0])[:200]}")
        summary = cache.write(result)
        log.info("session %s seed=%d j=%d: %d distinct products, %d styles, %.1fs", self.slugs[backend], seed, j,
                 summary["distinct_products"], summary["styles"], time.perf_counter() - t0)
        return {**summary, "cached": False}

    # Ray Data actor entry point: one output row per input row, in input order.
    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        keys = [(int(b), int(s), int(j)) for b, s, j in zip(batch["backend"], batch["seed"], batch["j"])]
        done = self._map(lambda k: self._run_one(lambda: self.run_key(*k),
                                                 f"session {self.slugs[k[0]]} seed={k[1]} j={k[2]}"), keys)
        out: dict[str, list[Any]] = {"backend": [], "seed": [], "j": [], "ok": [], "error": [], "summary": []}
        for (b, s, j), (summary, err) in zip(keys, done):
            out["backend"].append(self.slugs[b])
            out["seed"].append(s)
            out["j"].append(j)
            out["ok"].append(err is None)
            out["error"].append(err)
            out["summary"].append(json.dumps(summary, default=str) if summary else None)
        return out


def _named(vlm: Any) -> Any:
    """A stand-in VLM keeps a display name saying so."""
    if getattr(vlm, "stand_in", False) and not getattr(vlm, "display_name", None):
        try:
            vlm.display_name = f"{vlm.name} (stand-in)"
        except AttributeError:
            pass
    return vlm



