"""One encoding worker: its own storefront, its own browser, the VLM backends, the cache.

Used as the Ray Data actor of the ``encode`` stage (one per worker process), by the benchmark
and by tests in-process. Each session runs in a fresh browser context (the context wipe).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from vismem.core.failures import UnitFailed, check_failed_calls
from vismem.core.secrets import drop_secrets
from vismem.pipelines.trajectories import PROTOCOL_VERSION, TrajectoryCache, slugify
from vismem.agents.chains import session_spec
from vismem.agents.session import SessionOptions, run_session

log = logging.getLogger("vismem.encode")

#: Spec args that say how to reach a model, not which model: they do not change trajectories.
TRANSPORT_ARGS = frozenset({"base_url", "api_key_env", "timeout_s", "connect_timeout_s", "max_retries",
                            "backoff_s", "backoff_max_s", "max_concurrency", "sleep_s", "label", "device"})


def resolve_spec(spec: Any, run_seed: int, *, field: str = "encode.backends") -> dict[str, Any]:
    """A buildable ``{name, args}`` spec (a model variant such as ``qwen2.5-vl-7b`` expanded,
    env-expanded here on the driver). The scripted shopper's seed defaults to the run seed."""
    from vismem.serve.registry import VLMS

    spec = VLMS.check(spec, field=field)  # args checked against the backend, nothing built
    if spec["name"] == "scripted-shopper":
        spec["args"].setdefault("seed", run_seed)
    return spec


def is_stand_in(spec: dict[str, Any]) -> bool:
    """Whether a resolved backend spec builds a stand-in (as its factory declared)."""
    from vismem.serve.registry import VLMS

    return VLMS.is_stand_in(spec)


def backend_label(spec: dict[str, Any]) -> str:
    """A readable backend name from its spec (no model needs loading)."""
    args = spec.get("args") or {}
    if spec["name"] == "scripted-shopper":
        return f"scripted-shopper-stand-in-s{args.get('seed', 0)}"
    label = args.get("label") or args.get("model") or (Path(str(args["path"])).name if args.get("path") else None)
    return f"{spec['name']}-{label}" if label else spec["name"]


def protocol_settings(opts: SessionOptions, *, observation: str, images: Any, colour_order: str,
                      catalog_seed: int, catalog_data: dict[str, str] | None = None) -> dict[str, Any]:
    """Everything besides the model that changes what a session produces.

    ``catalog_data``: content digests of the catalogue files the shop is built from (its pages
    are what the agent reads), so an edited catalogue never reuses another's trajectories.
    """
    from vismem.agents import prompts

    out = {"prompts": prompts.fingerprint(),
           "page_text": opts.page_text, "max_tokens": opts.max_tokens, "temperature": opts.temperature,
           "observation": observation, "images": images, "colour_order": colour_order,
           "catalog_seed": catalog_seed}
    if catalog_data is not None:
        out["catalog_data"] = dict(sorted(catalog_data.items()))
    return out


def cache_slug(spec: dict[str, Any], protocol: dict[str, Any]) -> str:
    """``<label>--<8 hex>``: the hash covers the model args (minus transport) and the protocol."""
    model_args = drop_secrets({k: v for k, v in (spec.get("args") or {}).items() if k not in TRANSPORT_ARGS})
    blob = json.dumps({"v": PROTOCOL_VERSION, "name": spec["name"], "args": model_args, **protocol},
                      sort_keys=True, separators=(",", ":"), default=str)
    return f"{slugify(backend_label(spec))}--{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


class EncodeWorker:
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
    """

    def __init__(self, store: Any, backends: list[dict[str, Any]], slugs: list[str], *, data_dir: str,
                 catalog_seed: int = 0, colour_order: str = "seeded", images: Any = "placeholder",
                 options: SessionOptions = SessionOptions(), observation: str = "product_image",
                 step_timeout_s: float = 30.0, shop_url: str | None = None, env_factory: Any = None,
                 max_failed_calls: float = 0.5) -> None:
        self.store = store
        self.max_failed_calls = float(max_failed_calls)
        self.backends, self.slugs = list(backends), list(slugs)
        self.options = options
        self.caches = [TrajectoryCache(store, s) for s in self.slugs]
        self._vlms: dict[int, Any] = {}
        self.shop = None
        if shop_url is None:
            from vismem.env.storefront.server import ShopServer

            self.shop = ShopServer.from_data(data_dir, seed=catalog_seed, colour_order=colour_order,  # type: ignore[arg-type]
                                             images=images).start()
            shop_url = self.shop.url
        self.shop_url = shop_url
        self._factory = env_factory or default_env_factory
        self._env_kwargs = {"observation": observation, "step_timeout_s": step_timeout_s}
        self._env: Any = None
        self._env_thread: int | None = None

    @property
    def env(self) -> Any:
        """The browser env, created on first use in the calling thread.

        Playwright's sync API is bound to the thread that started it, and a Ray actor may call
        its UDF from another thread than the constructor's, so the env is made where it is used.
        """
        me = threading.get_ident()
        if self._env is None or self._env_thread != me:
            self._env = self._factory(self.shop_url, **self._env_kwargs)
            self._env_thread = me
        return self._env

    def vlm(self, i: int) -> Any:
        if i not in self._vlms:
            from vismem.serve.build import build_vlm

            vlm = build_vlm(self.backends[i])
            if getattr(vlm, "stand_in", False) and not getattr(vlm, "display_name", None):
                try:  # results must never pass a stand-in off as a model
                    vlm.display_name = f"{vlm.name} (stand-in)"
                except AttributeError:
                    pass
            self._vlms[i] = vlm
        return self._vlms[i]

    def run_key(self, backend: int, seed: int, j: int) -> dict[str, Any]:
        """Run and cache one session (skipped when already done); returns its summary."""
        cache = self.caches[backend]
        if cache.is_done(seed, j):
            return {**cache.read_summary(seed, j), "cached": True}
        t0 = time.perf_counter()
        result = run_session(session_spec(seed, j), vlm=self.vlm(backend), env=self.env,
                             backend=self.slugs[backend], options=self.options, blob_sink=cache.put_blob)
        # An outage is not a trajectory: past the threshold the session is not committed.
        failed = [st.error for st in result.steps if st.status == "failed"]
        check_failed_calls(len(failed), len(result.steps), failed, limit=self.max_failed_calls,
                           field="encode.max_failed_calls")
        summary = cache.write(result)
        log.info("session %s seed=%d j=%d: %d distinct products, %d styles, %.1fs", self.slugs[backend], seed, j,
                 summary["distinct_products"], summary["styles"], time.perf_counter() - t0)
        return {**summary, "cached": False}

    # Ray Data actor entry point: one row in, one row out.
    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, list[Any]] = {"backend": [], "seed": [], "j": [], "ok": [], "error": [], "summary": []}
        for b, s, j in zip(batch["backend"], batch["seed"], batch["j"]):
            b, s, j = int(b), int(s), int(j)
            try:
                summary, err = self.run_key(b, s, j), None
            except UnitFailed as e:  # the model's calls failed; the browser is fine
                log.error("session %s seed=%d j=%d failed: %s", self.slugs[b], s, j, e)
                summary, err = None, str(e)
            except Exception as e:  # noqa: BLE001 - reported per key; no done marker, so a re-run retries
                log.exception("session %s seed=%d j=%d failed", self.slugs[b], s, j)
                summary, err = None, f"{type(e).__name__}: {e}"[:2000]
                self._recover()
            out["backend"].append(self.slugs[b])
            out["seed"].append(s)
            out["j"].append(j)
            out["ok"].append(err is None)
            out["error"].append(err)
            out["summary"].append(json.dumps(summary, default=str) if summary else None)
        return out

    def _recover(self) -> None:
        # A crashed browser would fail every later session of this actor: rebuild the env.
        env, self._env = self._env, None
        try:
            closer = getattr(env, "close", None)
            if closer is not None:
                closer()
        except Exception:  # noqa: BLE001 - a crashed browser may not close cleanly
            log.exception("closing the browser failed")

    def close(self) -> None:
        for v in self._vlms.values():
            closer = getattr(v, "close", None)
            if closer:
                closer()
        env, self._env = self._env, None
        closer = getattr(env, "close", None)
        if closer and self._env_thread == threading.get_ident():
            closer()
        if self.shop is not None:
            self.shop.stop()
            self.shop = None

    def __del__(self) -> None:  # actors are torn down without an explicit close
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


def default_env_factory(shop_url: str, *, observation: str, step_timeout_s: float) -> Any:
    """The Playwright browser environment (``vismem.env.browser``)."""
    from vismem.env.pageenv import make_env

    return make_env("browser", shop_url, observation=observation, step_timeout_s=step_timeout_s)


def env_factory(name: str) -> Any:
    """The env factory for ``encode.env``: ``browser`` (Chromium) or ``http`` (fast path)."""
    from functools import partial

    from vismem.env.pageenv import ENV_KINDS, make_env

    if name not in ENV_KINDS:
        raise ValueError(f"unknown env {name!r}; allowed: {', '.join(ENV_KINDS)}")
    return default_env_factory if name == "browser" else partial(make_env, "http")
