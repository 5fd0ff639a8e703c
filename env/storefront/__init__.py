"""The DMV-Bench storefront: catalogue model, image sources, the FastAPI shop and the L2 audit.

Heavy parts (FastAPI, Playwright) load only from their modules: ``vismem.env.storefront.app``,
``vismem.env.storefront.server`` (``ShopServer``), ``vismem.env.storefront.audit``.
"""

from vismem.env.storefront.catalog import (
    COLOURS,
    Catalog,
    Category,
    Collection,
    Variant,
    load_catalog,
    url_hash,
)

__all__ = ["COLOURS", "Catalog", "Category", "Collection", "Variant", "load_catalog", "url_hash"]
