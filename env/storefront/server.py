"""Run the shop: in-process in a thread (tests, the browser env) or from the command line.

    with ShopServer.from_data("../shared/data", seed=0) as shop:
        httpx.get(shop.url + "/")

    python -m vismem.env.storefront --data-dir ../shared/data --port 8000            # procedural images
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from vismem.env.storefront.app import create_app
from vismem.env.storefront.catalog import Catalog, ColourOrder, load_catalog
from vismem.env.storefront.imagesource import ImageSource, build_image_source
from vismem.serve.asgi_thread import ThreadedASGIServer


class ShopServer(ThreadedASGIServer):
    """The shop under uvicorn on a background thread, on a socket bound before start (no port race)."""

    thread_name = "shop"

    def __init__(self, catalog: Catalog, images: ImageSource, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.catalog, self.images = catalog, images
        super().__init__(create_app(catalog, images), host=host, port=port)

    @classmethod
    def from_data(cls, data_dir: str | Path, *, seed: int = 0, colour_order: ColourOrder = "seeded",
                  images: dict[str, Any] | str = "placeholder", **kw: Any) -> "ShopServer":
        from vismem.core.paths import resolve_data_dir

        # Resolved here, on the node that serves: a relative or s3:// data dir means this node's copy.
        cat = load_catalog(resolve_data_dir(data_dir), seed=seed, colour_order=colour_order)
        return cls(cat, build_image_source(images, cat), **kw)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vismem.env.storefront", description="Serve the DMV-Bench shop.")
    p.add_argument("--data-dir", default=None,
                   help="folder holding dmv-bench/seed_v2.json and cue_registry.json "
                        "(default: the run config's default data_dir, ../shared/data)")
    p.add_argument("--seed", type=int, default=0, help="run seed (colour permutation)")
    p.add_argument("--colour-order", choices=["seeded", "official"], default="seeded")
    p.add_argument("--images", default="procedural",
                   help='image source: a registered name (procedural, official, store, placeholder) or a '
                        'JSON spec {"name":..,"args":{..}}')
    p.add_argument("--host", default="127.0.0.1", help="bind address (loopback by default)")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    a = p.parse_args(argv)
    if a.data_dir is None:
        from vismem.core.paths import resolve_data_dir

        a.data_dir = str(resolve_data_dir())
    spec = json.loads(a.images) if a.images.strip().startswith("{") else a.images
    shop = ShopServer.from_data(a.data_dir, seed=a.seed, colour_order=a.colour_order, images=spec,
                                host=a.host, port=a.port)
    with shop:
        print(f"storefront serving {len(shop.catalog.variants)} products at {shop.url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0
