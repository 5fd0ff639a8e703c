"""Cue pictographs: object → glyph (emoji, same-theme substitute or vector picto), recoloured.

The table (``cue_glyphs.json``) says how each of the 100 cue objects is drawn and which object is
actually in the pixels (``depicted``). Recolouring maps a glyph's luminance onto the cue colour's
ramp by rank (median → base tone), so any glyph, whatever its original colours, comes out with its
shading intact and a mean colour on the intended hue.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from vismem.env.storefront.images.colors import ramp_lut
from vismem.env.storefront.images.pictos import PICTOS, draw_picto

TABLE_PATH = Path(__file__).with_name("cue_glyphs.json")
EMOJI_FONT = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
EMOJI_SIZE = 109  # the only size of Noto Color Emoji's CBDT bitmaps
_FONT_LOCK = threading.Lock()  # a FreeType face must not render from two threads at once


@lru_cache(maxsize=1)
def glyph_table() -> dict[str, dict[str, Any]]:
    """The object → drawing table (validated: every entry is drawable)."""
    objects = json.loads(TABLE_PATH.read_text())["objects"]
    for obj, spec in objects.items():
        kind = spec.get("kind")
        if kind in ("emoji", "substitute"):
            int(spec["codepoint"], 16)
            if kind == "substitute" and not spec.get("depicted"):
                raise ValueError(f"{TABLE_PATH.name}: substitute for {obj!r} has no 'depicted' name")
        elif kind == "procedural":
            if spec.get("picto") not in PICTOS:
                raise ValueError(f"{TABLE_PATH.name}: {obj!r} names unknown picto {spec.get('picto')!r}")
        else:
            raise ValueError(f"{TABLE_PATH.name}: {obj!r} has unknown kind {kind!r}")
    return objects


def depicted_object(cue_object: str) -> str:
    """The object actually drawn for ``cue_object`` (differs only for substitutes)."""
    spec = _spec(cue_object)
    return spec.get("depicted", cue_object)


def _spec(cue_object: str) -> dict[str, Any]:
    try:
        return glyph_table()[cue_object]
    except KeyError:
        raise KeyError(f"cue object {cue_object!r} is not in {TABLE_PATH.name}") from None


@lru_cache(maxsize=1)
def _emoji_font() -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(EMOJI_FONT, EMOJI_SIZE)


@lru_cache(maxsize=128)
def base_glyph(cue_object: str) -> Image.Image:
    """The uncoloured glyph (RGBA, tight bbox) of a cue object."""
    spec = _spec(cue_object)
    im = draw_picto(spec["picto"]) if spec["kind"] == "procedural" else emoji_canvas(spec["codepoint"])
    return tight(im, f"cue object {cue_object!r}")


def emoji_canvas(codepoint: str) -> Image.Image:
    """A colour emoji (hex ``codepoint``) drawn at the font's bitmap size on a clear 160² canvas."""
    im = Image.new("RGBA", (160, 160), (0, 0, 0, 0))
    with _FONT_LOCK:
        ImageDraw.Draw(im).text((0, 0), chr(int(codepoint, 16)), font=_emoji_font(), embedded_color=True)
    return im


def tight(im: Image.Image, what: str) -> Image.Image:
    """``im`` cropped to its visible pixels (alpha > 8); an empty glyph is an error naming ``what``."""
    bbox = im.getchannel("A").point(lambda a: 255 if a > 8 else 0).getbbox()
    if bbox is None:
        raise ValueError(f"glyph for {what} rendered empty (font lacks it?)")
    return im.crop(bbox)


def fit(glyph: Image.Image, box: int) -> Image.Image:
    """``glyph`` scaled (Lanczos, aspect kept) so its longer side is ``box`` pixels."""
    scale = box / max(glyph.size)
    return glyph.resize((max(1, round(glyph.width * scale)), max(1, round(glyph.height * scale))), Image.LANCZOS)


def recolor(glyph: Image.Image, color: str) -> Image.Image:
    """Map the glyph's luminance onto ``color``'s ramp by rank; alpha is kept."""
    return recolor_lut(glyph, ramp_lut(color))


def recolor_lut(glyph: Image.Image, lut: np.ndarray) -> Image.Image:
    """:func:`recolor` onto any 256-entry RGB ramp ``lut`` (the training scenes' wider palette)."""
    arr = np.asarray(glyph.convert("RGBA"), dtype=np.float32)
    alpha = arr[..., 3]
    lum = arr[..., :3] @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    solid = lum[alpha > 128]
    if solid.size == 0:
        solid = lum[alpha > 0]
    p2, p50, p98 = np.percentile(solid, [2, 50, 98]) if solid.size else (0.0, 128.0, 255.0)
    lo = 0.5 * (lum - p2) / max(p50 - p2, 1.0)
    hi = 0.5 + 0.5 * (lum - p50) / max(p98 - p50, 1.0)
    t = np.clip(np.where(lum <= p50, lo, hi), 0.0, 1.0)
    rgb = lut[(t * 255).round().astype(np.uint8)]
    out = np.dstack([rgb, alpha.round().astype(np.uint8)])
    return Image.fromarray(out, "RGBA")


@lru_cache(maxsize=2048)
def cue_sprite(cue_object: str, color: str, box: int) -> Image.Image:
    """The recoloured glyph fitted into a ``box``×``box`` square (aspect kept); cached."""
    return recolor(fit(base_glyph(cue_object), box), color)
