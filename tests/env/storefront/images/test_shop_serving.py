"""The shop serves the procedural images through its image routes (cue and cue-free)."""

from __future__ import annotations

import io


def test_shop_serves_procedural_images(catalog):
    from fastapi.testclient import TestClient
    from PIL import Image

    from vismem.env.storefront.app import create_app
    from vismem.env.storefront.imagesource import build_image_source

    src = build_image_source("procedural", catalog)
    v = catalog.variants[321]
    with TestClient(create_app(catalog, src)) as c:
        cued = c.get(f"/images/{v.url_hash}.png")
        base = c.get(f"/images/base/{v.url_hash}.png")
    assert cued.status_code == 200 and cued.headers["content-type"] == "image/png"
    assert cued.content == src.get(v.url_hash) != base.content == src.get(v.url_hash, with_cue=False)
    assert Image.open(io.BytesIO(cued.content)).size == (512, 512)
