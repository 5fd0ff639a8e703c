"""Product images for the storefront: procedural renderer, cue glyphs, image sources.

Importing this package registers the ``procedural`` and ``official`` sources in
:data:`vismem.env.storefront.imagesource.IMAGE_SOURCES` (``store`` and ``placeholder`` live there).
"""

from vismem.env.storefront.images.colors import CUE_COLORS, CUE_RAMPS
from vismem.env.storefront.images.glyphs import cue_sprite, depicted_object, glyph_table
from vismem.env.storefront.images.scene import RENDERER_VERSION, ProceduralRenderer, Rendered, VariantSpec, encode
from vismem.env.storefront.images.sources import OfficialImageSource, ProceduralImageSource

__all__ = [
    "CUE_COLORS", "CUE_RAMPS", "RENDERER_VERSION", "OfficialImageSource", "ProceduralImageSource",
    "ProceduralRenderer", "Rendered", "VariantSpec", "cue_sprite", "depicted_object", "encode", "glyph_table",
]
