"""Words measured and rasterised from cached glyphs, exactly as Pillow's BASIC layout does.

Rasterising a word with ``getmask2`` loads and hints every glyph of it four times (layout,
bounding box, two render passes): ~40 us a word here, the largest single cost of a cold render
(~11,000 distinct words in LoCoMo). Pillow's BASIC layout (``_imagingft.c``) is simple enough to
reproduce from per-glyph data:

* the pen advances, in 26.6 fixed point, by each glyph's hinted advance, plus -- between two
  glyphs the font kerns -- ``PIXEL(kerning)``, that is the pair's kerning in whole pixels added
  as 1/64 px units (Pillow's arithmetic, kept as it is); ``getlength`` is that sum / 64;
* each glyph's bitmap is rendered at the origin and copied to the whole pixel ``PIXEL(pen)``
  (no sub-pixel placement), blending only where two glyphs' ink overlaps.

So a word's advance is its glyphs' advances plus its pairs' kerning (one ``getlength`` per
distinct character and per distinct pair), and its mask is its glyphs' ink pasted at those
pixel offsets, whenever no two glyphs' ink overlaps. Where some does (5-9 % of LoCoMo's words,
depending on the font: "ry", "ff", "rt") the word is rasterised by Pillow itself, so
overlaps blend exactly as Pillow blends them. Result: the same ink at the same pixels as
``getmask2`` (the mask's blank margins may differ; they draw nothing), 3x faster cold; checked
over LoCoMo's vocabulary and random strings in every font and size a shot uses
(``tests/memory/dialogue/test_glyphs.py``).

A fallback font (the CJK font of the style) draws the characters the font lacks and the fallback
has: their glyphs come from the fallback at the same pixel size, moved down by the difference of
the two ascents so both share a baseline, with no kerning across the two fonts. Words holding
such characters are composed from glyphs even where ink overlaps (lighter-of blending), since
Pillow would draw them in the first font alone, as boxes. A word without one takes exactly the
path above, so text the font covers draws the same pixels with or without a fallback.
"""

from __future__ import annotations

from typing import Any, Callable

from PIL import Image, ImageFont

#: A glyph: ``(ink mask or None, ink x, ink y, ink width, ink height, advance in 1/64 px)``, the
#: ink's top-left relative to the pen at the ascender line ("la" anchor, Pillow's default).
Glyph = tuple[Any, int, int, int, int, int]


def pixel(x: int) -> int:
    """Pillow's ``PIXEL``: a 26.6 coordinate rounded to the nearest whole pixel."""
    return ((x + 32) & -64) >> 6


class Glyphs:
    """One font's glyph and kerning-pair caches; :meth:`length` and :meth:`mask` read them."""

    def __init__(self, font: ImageFont.FreeTypeFont, fallback: ImageFont.FreeTypeFont | None = None,
                 use_fallback: Callable[[str], bool] | None = None) -> None:
        self.font = font
        self.fallback = fallback if use_fallback is not None else None
        self._use_fallback = use_fallback
        # the fallback's glyphs sit on the font's baseline: shift them by the ascents' difference
        self._shift = font.getmetrics()[0] - fallback.getmetrics()[0] if self.fallback is not None else 0
        self._glyphs: dict[str, Glyph] = {}
        self._kern: dict[str, int] = {}
        #: characters drawn from the fallback font (filled as their glyphs are made)
        self.from_fallback: set[str] = set()

    def glyph(self, ch: str) -> Glyph:
        """``ch``'s :data:`Glyph`, rasterised once (by Pillow, alone) and kept."""
        g = self._glyphs.get(ch)
        if g is None:
            font, shift = self.font, 0
            if self.fallback is not None and not ch.isascii() and self._use_fallback(ch):  # type: ignore[misc]
                font, shift = self.fallback, self._shift
                self.from_fallback.add(ch)
            mask, (dx, dy) = font.getmask2(ch, mode="L")
            advance = round(font.getlength(ch) * 64)  # exact: getlength is an int / 64
            box = mask.getbbox()
            if box is None:  # a space: advance only
                g = (None, 0, 0, 0, 0, advance)
            else:
                left, top, right, bottom = box
                g = (mask.crop(box), dx + left, dy + top + shift, right - left, bottom - top, advance)
            self._glyphs[ch] = g
        return g

    def mixed(self, word: str) -> bool:
        """Whether ``word`` holds a character drawn from the fallback font."""
        if self.fallback is None or word.isascii():
            return False
        for ch in word:
            self.glyph(ch)
        return any(ch in self.from_fallback for ch in word)

    def kern(self, pair: str) -> int:
        """The pair's kerning as Pillow adds it to the pen (1/64 px units; 0 for most pairs)."""
        k = self._kern.get(pair)
        if k is None:
            if len(self._kern) > 200_000:  # bound memory on huge alphabets (CJK corpora)
                self._kern.clear()
            a, b = self.glyph(pair[0])[5], self.glyph(pair[1])[5]
            fa, fb = pair[0] in self.from_fallback, pair[1] in self.from_fallback
            if fa != fb:  # no kerning across two fonts
                k = self._kern[pair] = 0
            else:
                font = self.fallback if fa else self.font
                k = self._kern[pair] = round(font.getlength(pair) * 64) - a - b  # type: ignore[union-attr]
        return k

    def _walk(self, word: str) -> tuple[list[tuple[Glyph, int]], int]:
        """Each character's glyph with its pen position, and the word's advance (both 26.6)."""
        glyphs, kerns = self._glyphs, self._kern
        out = []
        pen = 0
        prev = ""
        for ch in word:
            if prev:
                k = kerns.get(prev + ch)
                pen += self.kern(prev + ch) if k is None else k
            g = glyphs.get(ch) or self.glyph(ch)
            out.append((g, pen))
            pen += g[5]
            prev = ch
        return out, pen

    def length(self, word: str) -> float:
        """``font.getlength(word)``, float for float."""
        return self._walk(word)[1] / 64

    def mask(self, word: str) -> tuple[Any, int, int]:
        """``(core mask, dx, dy)`` drawing the same ink at the same offset as
        ``font.getmask2(word, mode="L")``."""
        placed = []  # (ink, left, top, right, bottom) relative to the pen's start
        for g, pen in self._walk(word)[0]:
            if g[0] is not None:
                x = pixel(pen) + g[1]
                placed.append((g[0], x, g[2], x + g[3], g[2] + g[4]))
        mixed = self.mixed(word)
        if not placed:
            return (Image.core.fill("L", (1, 1), 0), 0, 0) if mixed else self._pillow(word)
        x0 = min(p[1] for p in placed)
        y0 = min(p[2] for p in placed)
        canvas = Image.core.fill("L", (max(p[3] for p in placed) - x0, max(p[4] for p in placed) - y0), 0)
        right = placed[0][1]  # the rightmost ink column pasted so far
        for ink, left, top, r, bottom in placed:
            box = (left - x0, top - y0, r - x0, bottom - y0)
            if left >= right:  # columns of its own: a plain copy
                canvas.paste(ink, box)
            else:
                below = canvas.crop(box)
                if not mixed and below.chop_darker(ink).getbbox() is not None:  # ink on ink: Pillow blends it
                    return self._pillow(word)
                canvas.paste(below.chop_lighter(ink), box)
            right = max(right, r)
        return canvas, x0, y0

    def _pillow(self, word: str) -> tuple[Any, int, int]:
        mask, (dx, dy) = self.font.getmask2(word, mode="L")
        return mask, dx, dy
