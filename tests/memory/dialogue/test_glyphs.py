"""Glyph-composed words: the same advances and the same ink as Pillow's own rasteriser, in every
font and size a shot uses, over LoCoMo's vocabulary and seeded random strings."""

from __future__ import annotations

import random

import pytest
from PIL import Image, ImageFont

from vismem.env.dialogue import load_locomo
from vismem.memory.dialogue.glyphs import Glyphs, pixel
from vismem.memory.dialogue.style import Style

STYLE = Style()
#: (font file, size) of every text a shot draws: body, captions, speaker names, the header.
FACES = sorted({(STYLE.font_regular, STYLE.body_size), (STYLE.font_italic, STYLE.body_size),
                (STYLE.font_bold, STYLE.name_size), (STYLE.font_bold, STYLE.header_size),
                (STYLE.font_regular, STYLE.header_size)})
# Kerned pairs, repeated kerning, accents, combining marks, typographic punctuation, tofu.
ALPHABET = "AVTWYLPFavtwyfrjil.,;:'\"()-_/\\?!0123456789 éüñ–—’“”…\u0301\u4e00"


@pytest.fixture(scope="module")
def vocabulary(data_dir) -> list[str]:
    words: set[str] = set()
    for conv in load_locomo(data_dir / "locomo/locomo10.json"):
        for s in conv.sessions:
            for t in s.turns:
                words.update(t.text.split())
                words.update(t.speaker.split())
                words.update((t.image_caption or "").split())
    return sorted(words)


def _font(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size, layout_engine=ImageFont.Layout.BASIC)


def ink(mask, dx: int, dy: int) -> tuple | None:
    """Where a mask's ink lands relative to the pen, and the ink itself (margins dropped)."""
    im = Image.Image()._new(mask)
    box = im.getbbox()
    if box is None:
        return None
    return dx + box[0], dy + box[1], im.crop(box).tobytes()


def _words(vocabulary: list[str], face: tuple[str, int]) -> list[str]:
    rng = random.Random(f"{face}")
    sample = vocabulary if face == (STYLE.font_regular, STYLE.body_size) else rng.sample(vocabulary, 1500)
    noise = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 60))) for _ in range(300)]
    return sample + noise + ["AV" * 40, "To" * 40, "f" * 30, "e\u0301", "\u0301", ""]


@pytest.mark.parametrize("face", FACES, ids=lambda f: f"{f[0].rsplit('/', 1)[-1]}-{f[1]}")
def test_same_ink_and_advance_as_pillow(vocabulary, face):
    font = _font(*face)
    glyphs = Glyphs(font)
    for word in _words(vocabulary, face):
        assert glyphs.length(word) == font.getlength(word), word
        mask, (dx, dy) = font.getmask2(word, mode="L")
        assert ink(*glyphs.mask(word)) == ink(mask, dx, dy), word


def test_overlapping_ink_is_left_to_pillow_and_the_rest_is_composed(monkeypatch):
    glyphs = Glyphs(_font(STYLE.font_regular, STYLE.body_size))
    rasterised: list[str] = []
    own = glyphs._pillow
    monkeypatch.setattr(glyphs, "_pillow", lambda w: rasterised.append(w) or own(w))
    for word in ("ry", "ff", "visual", "shot", "Ana"):
        glyphs.mask(word)
    # "r"/"y" and "f"/"f" share ink pixels at 15 px: blended by Pillow; the others are composed.
    assert rasterised == ["ry", "ff"]


def test_kerning_is_added_the_way_pillow_adds_it():
    glyphs = Glyphs(_font(STYLE.font_regular, STYLE.body_size))
    # Pillow adds a kerned pair's whole-pixel kerning as 1/64 px units (kept, to stay exact).
    assert glyphs.kern("To") < 0 and glyphs.kern("ab") == 0
    assert glyphs.length("To") * 64 == glyphs.glyph("T")[5] + glyphs.glyph("o")[5] + glyphs.kern("To")
    assert [pixel(x) for x in (-33, -32, 31, 32, 95, 96)] == [-1, 0, 0, 1, 1, 2]
