"""The ``procedural`` and ``official`` image sources (registered in ``IMAGE_SOURCES``).

* ``procedural`` (default here): renders every product offline with :mod:`scene` — a studio
  photo whose silhouette shows the category, palette and shape language the style, details the
  variant — and the variant's cue beside it. Deterministic: same catalogue + parameters → same
  bytes.
* ``official``: the paper's own images, ``with_cue/<cat>/<style>/NN.png`` and ``base/...`` (the
  layout of the published Hugging Face set, see the official ``scripts/download_images.py``),
  read from a directory or a store prefix, for clusters that have them.
* ``store`` (in :mod:`vismem.env.storefront.imagesource`) reads what the catalog job wrote: the job
  writes the same layout, so one reader serves both.

Every source here also answers ``depicted_object(url_hash)``: the cue object actually in the
pixels (a substitute glyph for the few objects without one), so probes can name what is drawn.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from vismem.env.storefront.imagesource import IMAGE_SOURCES, StoreImageSource
from vismem.env.storefront.images.glyphs import depicted_object
from vismem.env.storefront.images.scene import ProceduralRenderer, VariantSpec, encode


def spec_of(v: Any) -> VariantSpec:
    """A catalogue ``Variant`` (or a row dict with the same fields) → the renderer's input."""
    return VariantSpec.from_row(v)


@IMAGE_SOURCES.register("procedural")
class ProceduralImageSource:
    """Offline procedural product photos with the variant's cue; cue-free on request."""

    def __init__(self, catalog: Any, size: int = 512, salt: str = "v1", format: str = "png",
                 compress_level: int = 0, cache_items: int = 64) -> None:
        self.catalog = catalog
        self.renderer = ProceduralRenderer(int(size), salt)
        self.format, self.compress_level = format, int(compress_level)
        self._cache: OrderedDict[str, tuple[bytes, bytes]] = OrderedDict()
        self._cache_items = int(cache_items)
        self._lock = threading.Lock()  # the shop serves requests from a thread pool

    def get_pair(self, url_hash: str) -> tuple[bytes, bytes]:
        """``(with_cue, base)`` encoded images of one product (rendered once for both)."""
        with self._lock:
            hit = self._cache.get(url_hash)
            if hit is not None:
                self._cache.move_to_end(url_hash)
                return hit
        v = self.catalog.by_hash[url_hash]  # KeyError for an unknown hash
        out = self.renderer.render(spec_of(v))
        pair = (encode(out.with_cue, self.format, self.compress_level), encode(out.base, self.format, self.compress_level))
        with self._lock:
            self._cache[url_hash] = pair
            while len(self._cache) > self._cache_items:
                self._cache.popitem(last=False)
        return pair

    def get(self, url_hash: str, with_cue: bool = True) -> bytes:
        cue, base = self.get_pair(url_hash)
        return cue if with_cue else base

    def depicted_object(self, url_hash: str) -> str:
        return depicted_object(self.catalog.by_hash[url_hash].cue_object)


@IMAGE_SOURCES.register("official")
class OfficialImageSource(StoreImageSource):
    """The paper's published images under ``root`` (a directory, ``file://`` or ``s3://`` URI).

    The official files are numbered by cue-colour index (``NN`` = the colour's index), which is
    what each variant's ``image_idx`` points at, so this works under either colour order.
    """

    def __init__(self, catalog: Any, root: str, check: bool = True, **store_kwargs: Any) -> None:
        from vismem.core.errors import DataError
        from vismem.core.store import Store

        uri = root if "://" in root else Path(root).resolve().as_uri()
        if uri.startswith("file://") and check and not Path(uri[len("file://"):]).joinpath("with_cue").is_dir():
            raise DataError(f"official image set not found: {root!r} has no with_cue/ folder "
                            "(expected the layout with_cue/<cat>/<style>/NN.png of the published set; vismem never "
                            "downloads it: get it from Hugging Face yyyujintang/DMV-Bench-Images and pass its "
                            "folder with --image-root)")
        super().__init__(catalog, uri, **store_kwargs)
        if check:
            first = catalog.variants[0]
            if not self.store.exists(first.image_path):
                raise DataError(f"official image set at {root!r} lacks {first.image_path} "
                                "(expected with_cue/<cat>/<style>/NN.png)")

    def depicted_object(self, url_hash: str) -> str:
        # The official edit drew the registry's object itself.
        return self.catalog.by_hash[url_hash].cue_object
