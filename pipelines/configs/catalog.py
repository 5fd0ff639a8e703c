"""DMV-Bench catalogue stage config (owned by the storefront; extend here)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec


class CatalogConfig(Frozen):
    """The storefront catalogue and its product images."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
    colour_order: Literal["seeded", "official"] = Field(
        "seeded",
        description=(
            "How cue colours map to a collection's ten cards. 'seeded' permutes the colours per "
            "collection from the run seed (fixes the official flaw where card position == colour "
            "index, card 01 always red); 'official' reproduces the released assignment exactly."
        ),
    )

    # -- product images (images engineer) ----------------------------------------------------
    image_source: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(name="procedural"),
        description="Image source that produces the product images, a name or {name, args}: 'procedural' "
        "(offline renderer, the local default; args e.g. {salt: v1}), 'official' (the paper's published "
        "with_cue/ and base/ images; args {root: s3://bucket/dmv-images}), or any other name in "
        "vismem.env.storefront.imagesource.IMAGE_SOURCES. `image_source_args` (a mapping) is accepted as input "
        "and merged into image_source.args.",
    )

    @model_validator(mode="before")
    @classmethod
    def _fold_args(cls, data: Any) -> Any:
        # `image_source_args` (the flag --image-root and older configs write it) folds into the
        # one component spec, so the frozen config has a single shape.
        if isinstance(data, dict) and "image_source_args" in data:
            data = dict(data)
            extra = data.pop("image_source_args") or {}
            if not isinstance(extra, dict):
                raise ValueError("image_source_args must be a mapping")
            src = data.get("image_source", "procedural")
            src = {"name": src} if isinstance(src, str) else dict(src)
            src["args"] = {**dict(src.get("args") or {}), **extra}
            data["image_source"] = src
        return data
    image_size: int = Field(512, ge=128, le=2048, description="Side of the square product images in pixels "
                            "(the official set is 512).")
    image_format: Literal["png", "jpeg", "webp"] = Field("png", description="Encoding of the stored images.")
    png_compress_level: int = Field(0, ge=0, le=9, description="Deflate level of the PNG writer (Up "
                                    "filter; core.png): 0, the default, is ISA-L's (~1 ms per photo, the same "
                                    "bytes every time), 1-9 zlib's with the RLE strategy (~25 % smaller, "
                                    "~5x slower).")
    limit: int | None = Field(None, ge=1, description="Generate only the first N variants in catalogue "
                              "order (smoke tests); None = all 1,000.")
    batch_size: int | None = Field(None, ge=1, description="Variants per Ray Data batch (one task renders "
                                   "and uploads a batch). None: the variants to render split into 4 batches "
                                   "per concurrent task (ray.concurrency), at least 10 each: 125 on 2 cores, "
                                   "where each Ray task costs ~60 ms of scheduling (25-variant batches were "
                                   "~25% slower).")
    upload_threads: int = Field(8, ge=1, le=64, description="Concurrent store uploads inside one batch "
                                "(uploads are I/O-bound; rendering holds the CPU).")
