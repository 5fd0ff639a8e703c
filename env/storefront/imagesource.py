"""Where the shop's product images come from: a Protocol + registry.

An image source maps a product's ``url_hash`` to PNG bytes, with or without its cue. The shop
never turns a request path into a file path: it looks the hash up in the catalogue and asks the
source, so there is no path traversal to get wrong.

Registered here:

* ``placeholder`` — a flat neutral-grey PNG per product, no text, no cue. A stand-in so the shop
  works before real images exist; never use it for an evaluation (agents can't see a cue).
* ``store`` — images already written to an object store in the official layout
  (``<prefix>/with_cue/<cat>/<style>/NN.png`` and ``<prefix>/base/...``).

The images engineer registers ``procedural`` and ``official`` in ``env/storefront/images/``.

Factories are called with their spec's ``args`` plus ``catalog=<Catalog>`` as a keyword
(:func:`build_image_source`), so specs stay JSON-serialisable.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import threading
from typing import Any, Protocol, runtime_checkable

from vismem.core.registry import Registry

from vismem.env.storefront.catalog import Catalog


@runtime_checkable
class ImageSource(Protocol):
    """Product images by hash. Raises ``KeyError`` for an unknown hash."""

    def get(self, url_hash: str, with_cue: bool = True) -> bytes:
        """PNG bytes of the product image (``with_cue=False``: the cue-free base image)."""
        ...


#: Registry of image sources; the procedural and official ones live in ``vismem.env.storefront.images``.
IMAGE_SOURCES: Registry[ImageSource] = Registry("image_source", package="vismem.env.storefront.images")


def build_image_source(spec: dict[str, Any] | str, catalog: Catalog) -> ImageSource:
    """Build a registered source from ``{"name", "args"}``, handing it the catalogue."""
    resolved = IMAGE_SOURCES.resolve(spec, field="image source")
    name, args = resolved["name"], dict(resolved["args"])
    factory = IMAGE_SOURCES.factory(name)  # its signature says whether it takes the catalogue
    try:
        params = inspect.signature(factory).parameters
        if "catalog" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            args["catalog"] = catalog
    except (TypeError, ValueError):
        pass
    src = IMAGE_SOURCES.build({"name": name, "args": args})
    try:
        src.spec = resolved  # type: ignore[attr-defined]  (the catalogue is not part of the spec)
    except (AttributeError, TypeError):
        pass
    return src


class CachedImageSource:
    """An LRU cache in front of a source: sources that render on demand (procedural) pay the
    cost once per image, not once per page view. Images are deterministic, so caching is exact."""

    def __init__(self, inner: ImageSource, max_items: int = 512) -> None:
        from collections import OrderedDict

        self.inner, self.max_items = inner, max_items
        self._lru: "OrderedDict[tuple[str, bool], bytes]" = OrderedDict()
        self._lock = threading.Lock()
        self.spec = getattr(inner, "spec", None)

    def get(self, url_hash: str, with_cue: bool = True) -> bytes:
        key = (url_hash, with_cue)
        with self._lock:
            if key in self._lru:
                self._lru.move_to_end(key)
                return self._lru[key]
        data = self.inner.get(url_hash, with_cue=with_cue)
        with self._lock:
            self._lru[key] = data
            while len(self._lru) > self.max_items:
                self._lru.popitem(last=False)
        return data



def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A ``width`` x ``height`` PNG of one colour (the placeholder's images)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), rgb).save(buf, format="PNG", optimize=False)
    return buf.getvalue()


@IMAGE_SOURCES.register("placeholder")
class PlaceholderImageSource:
    """PLACEHOLDER: a flat neutral-grey square per product (no text, no cue).

    Shades differ per product only so that screenshots of different pages differ; grey keeps
    the placeholder from carrying any colour a cue could be confused with.
    """

    def __init__(self, catalog: Catalog | None = None, size: int = 256) -> None:
        self.catalog = catalog
        self.size = int(size)
        self._cache: dict[tuple[str, bool], bytes] = {}

    def get(self, url_hash: str, with_cue: bool = True) -> bytes:
        if self.catalog is not None and url_hash not in self.catalog.by_hash:
            raise KeyError(url_hash)
        key = (url_hash, with_cue)
        if key not in self._cache:
            g = 150 + hashlib.sha1(url_hash.encode()).digest()[0] % 80
            self._cache[key] = solid_png(self.size, self.size, (g, g, g))
        return self._cache[key]


@IMAGE_SOURCES.register("store")
class StoreImageSource:
    """Images in an object store under ``prefix`` in the official layout."""

    def __init__(self, catalog: Catalog, uri: str, prefix: str = "", **store_kwargs: Any) -> None:
        from vismem.core.store import Store

        self.catalog = catalog
        self.store = Store.open(uri, **store_kwargs)
        self.prefix = prefix.strip("/")

    def get(self, url_hash: str, with_cue: bool = True) -> bytes:
        v = self.catalog.by_hash[url_hash]  # KeyError for unknown hashes
        rel = v.image_path if with_cue else v.base_image_path
        return self.store.get_bytes(f"{self.prefix}/{rel}" if self.prefix else rel)
