"""Fixtures for the agent tests: one real storefront (FastAPI on loopback) per module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def shop(data_dir):
    from vismem.env.storefront.server import ShopServer

    with ShopServer.from_data(data_dir, seed=0) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(shop, chromium_path):
    from vismem.env.envs import make_env

    env = make_env("browser", shop.url)
    yield env
    env.close()
