"""Storefront fixtures (tests/env/storefront and tests/env/test_browser.py): the real
catalogue, an in-process app, one real uvicorn server."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def catalog(data_dir):
    from vismem.env.storefront.catalog import load_catalog

    return load_catalog(data_dir, seed=0)


@pytest.fixture(scope="session")
def shop_app(catalog):
    from vismem.env.storefront.app import create_app
    from vismem.env.storefront.imagesource import build_image_source

    return create_app(catalog, build_image_source("placeholder", catalog))


@pytest.fixture
def client(shop_app):
    from fastapi.testclient import TestClient

    with TestClient(shop_app) as c:
        yield c


@pytest.fixture(scope="session")
def shop_server(catalog):
    """One real uvicorn server on loopback for the session."""
    from vismem.env.storefront.imagesource import build_image_source
    from vismem.env.storefront.server import ShopServer

    with ShopServer(catalog, build_image_source("placeholder", catalog)) as s:
        yield s
