"""Emoji in shots: characters the body font lacks, drawn in colour from Noto Color Emoji.

DejaVu has no emoji, so without this a turn like "Inspiring 💪" draws DejaVu's tofu box (seven
LoCoMo turns do). A word is split into runs of text (drawn by the word-mask path of
:mod:`vismem.memory.dialogue.draw`) and emoji (characters missing from the body font but present in
the emoji font). An emoji occupies a square of ``style.emoji_size`` px plus a 1 px gap, and the
shot that holds one is composed in RGB so the glyph keeps its colours (the palette of the
other shots has no room for them). Characters missing from both fonts still draw the tofu box.

Noto Color Emoji is a bitmap (CBDT) font with one 109 px strike; each glyph is rasterised once
per process at that size and scaled down with a Lanczos filter, so the same input gives the same
pixels.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

NOTO_EMOJI = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
_STRIKE = 109  # the only size a CBDT Noto Color Emoji loads at
_JOINERS = {0x200D, 0xFE0E, 0xFE0F}  # ZWJ and variation selectors: part of the emoji, never drawn alone


@lru_cache(maxsize=16)
def codepoints(font_path: str) -> frozenset[int]:
    """Every code point the font maps to a glyph (empty when the file is missing)."""
    if not Path(font_path).is_file():
        return frozenset()
    from fontTools.ttLib import TTFont  # a matplotlib dependency; read once per font per process

    with TTFont(font_path, lazy=True, fontNumber=0) as font:  # fontNumber: the first face of a .ttc
        return frozenset(font.getBestCmap() or {})


def is_emoji(ch: str, body_font: str, emoji_font: str) -> bool:
    """Whether ``ch`` is drawn from ``emoji_font``: the body font lacks it and the emoji font has it."""
    cp = ord(ch)
    if cp in _JOINERS:
        return True
    return cp not in codepoints(body_font) and cp in codepoints(emoji_font)


def runs(word: str, body_font: str, emoji_font: str) -> list[tuple[str, bool]]:
    """``word`` as ``[(text, is_emoji), ...]``: maximal runs; joiners stay with their emoji."""
    out: list[tuple[str, bool]] = []
    for ch in word:
        e = is_emoji(ch, body_font, emoji_font)
        if e and ord(ch) in _JOINERS and not (out and out[-1][1]):
            e = False  # a stray selector after text: leave it to the body font
        if out and out[-1][1] == e:
            out[-1] = (out[-1][0] + ch, e)
        else:
            out.append((ch, e))
    return out


def glyphs(run: str) -> list[str]:
    """The drawn emoji of an emoji run (joiners and selectors are not drawn on their own)."""
    return [ch for ch in run if ord(ch) not in _JOINERS]


def has_emoji(word: str, body_font: str, emoji_font: str) -> bool:
    """Whether any character of ``word`` is drawn from the emoji font."""
    return any(is_emoji(ch, body_font, emoji_font) and ord(ch) not in _JOINERS for ch in word)


def advance(size: int) -> int:
    """Horizontal space one emoji takes in a line (its square plus a 1 px gap)."""
    return size + 1


@lru_cache(maxsize=4)
def _font(path: str) -> ImageFont.FreeTypeFont:
    """The colour-emoji font at its bitmap strike, parsed once (the file is ~10 MB)."""
    return ImageFont.truetype(path, _STRIKE, layout_engine=ImageFont.Layout.BASIC)


@lru_cache(maxsize=512)
def glyph_image(ch: str, size: int, emoji_font: str = NOTO_EMOJI) -> Image.Image:
    """An RGBA ``size`` x ``size`` image of the colour glyph ``ch`` (transparent around it)."""
    font = _font(emoji_font)
    im = Image.new("RGBA", (_STRIKE + 40, _STRIKE + 40), (0, 0, 0, 0))
    ImageDraw.Draw(im).text((0, 0), ch, font=font, embedded_color=True)
    box = im.getbbox()
    if box is None:
        return Image.new("RGBA", (size, size), (0, 0, 0, 0))
    im = im.crop(box)
    scale = size / max(im.size)
    w, h = max(1, round(im.width * scale)), max(1, round(im.height * scale))
    out = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    out.paste(im.resize((w, h), Image.Resampling.LANCZOS), ((size - w) // 2, (size - h) // 2))
    return out


__all__ = ["NOTO_EMOJI", "advance", "codepoints", "glyph_image", "glyphs", "has_emoji", "is_emoji", "runs"]
