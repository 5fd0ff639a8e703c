"""Storefront benchmarks.

* ``storefront-step``: one environment step (page load in real Chromium + the observation) on a
  seeded mix of category, collection and product pages; p50/p95 per observation mode. Target:
  the official ``product_image`` mode's p50 over the run's calibration unit (100 ms on the
  reference machine; issue 43).
* ``audit-crawl``: the full L2 audit crawl of the shop over HTTP, in fields scanned per second.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from vismem.bench.calibration import per_unit
from vismem.bench.harness import benchmark, record

N_STEPS = 60


def _shop():
    from vismem.env.storefront.catalog import load_catalog
    from vismem.env.storefront.imagesource import IMAGE_SOURCES, build_image_source
    from vismem.env.storefront.server import ShopServer
    from vismem.pipelines.config import load_config
    from vismem.pipelines.context import resolve_data_dir

    cat = load_catalog(resolve_data_dir(load_config(None)), seed=0)
    build_image_source("placeholder", cat)  # loads image plugins if present
    name = "procedural" if "procedural" in IMAGE_SOURCES else "placeholder"
    return ShopServer(cat, build_image_source(name, cat)), name


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


@benchmark("storefront-step", "one BrowserEnv step (Chromium page load + observation), p50/p95 per mode")
def storefront_step() -> list[dict[str, Any]]:
    from vismem.env.actions import navigate
    from vismem.env.browser import BrowserEnv

    shop, source = _shop()
    out = []
    with shop:
        rng = random.Random(0)
        cat = shop.catalog
        urls = []
        for _ in range(N_STEPS):
            kind = rng.random()
            if kind < 0.6:
                urls.append(rng.choice(cat.variants).url)
            elif kind < 0.85:
                urls.append(f"/collection/{rng.choice(cat.collections).slug}")
            else:
                urls.append(f"/category/{rng.choice(cat.categories).slug}")
        for mode in ("product_image", "screenshot"):
            with BrowserEnv(shop.url, observation=mode) as env:
                env.reset("/")
                for u in urls:  # warm-up: images rendered once into the shop's cache
                    env.step(navigate(u))
                times = []
                for u in urls:
                    t0 = time.perf_counter()
                    r = env.step(navigate(u))
                    times.append((time.perf_counter() - t0) * 1000)
                    assert r.ok, r.error
            for metric, q in (("p50_ms", 0.5), ("p95_ms", 0.95)):
                rec = record("storefront-step", f"{metric}[{mode}]" if mode != "product_image" else metric,
                             _pct(times, q), "ms")
                rec["images"] = source
                rec["load_avg_1m"] = os.getloadavg()[0]
                out.append(rec)
            if mode == "product_image":
                out.append(per_unit("storefront-step", "p50_ms", target_s=0.1))
    return out


@benchmark("audit-crawl", "full L2-leakage audit crawl of the shop over HTTP (fields scanned per second)")
def audit_crawl() -> list[dict[str, Any]]:
    from vismem.env.storefront.audit import crawl_and_audit

    shop, _ = _shop()
    with shop:
        rep = crawl_and_audit(shop.url, shop.catalog)
    assert rep.ok, rep.to_dict(5)
    return [
        record("audit-crawl", "fields_per_s", rep.fields_scanned / rep.seconds, "fields/s", better="higher"),
        record("audit-crawl", "pages_per_s", rep.pages / rep.seconds, "pages/s", better="higher"),
        record("audit-crawl", "seconds", rep.seconds, "s"),
    ]
