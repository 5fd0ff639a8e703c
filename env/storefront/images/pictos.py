"""Small vector pictographs for cue objects that have no emoji glyph.

Each is drawn in grey levels (outline, shade, body, highlight) on a transparent canvas the size of
an emoji glyph, at 2× then reduced for anti-aliasing; ``glyphs.recolor`` maps the grey levels onto
the cue colour's ramp exactly as it does for emoji.
"""

from __future__ import annotations

import math
from typing import Callable

from PIL import Image, ImageChops, ImageDraw

W, H = 136, 128  # the Noto Color Emoji bitmap cell
S = 2  # supersampling factor
OUT, SHADE, BODY, LIGHT = (45,) * 3, (110,) * 3, (165,) * 3, (225,) * 3
LW = 5  # outline width at 2×

Picto = Callable[[ImageDraw.ImageDraw], None]
PICTOS: dict[str, Picto] = {}


def _p(name: str) -> Callable[[Picto], Picto]:
    def deco(fn: Picto) -> Picto:
        PICTOS[name] = fn
        return fn
    return deco


def _b(x0: float, y0: float, x1: float, y1: float) -> list[float]:
    return [x0 * S, y0 * S, x1 * S, y1 * S]


@_p("belt")
def _belt(d: ImageDraw.ImageDraw) -> None:
    # a coiled strap seen from above with its buckle and holes
    d.ellipse(_b(10, 24, 126, 116), fill=BODY, outline=OUT, width=LW)
    d.ellipse(_b(30, 42, 106, 98), fill=SHADE, outline=OUT, width=LW)
    d.ellipse(_b(46, 56, 90, 84), fill=(0, 0, 0, 0), outline=OUT, width=LW)
    d.rounded_rectangle(_b(94, 50, 132, 90), radius=6 * S, fill=LIGHT, outline=OUT, width=LW)
    d.rounded_rectangle(_b(102, 58, 124, 82), radius=4 * S, fill=SHADE, outline=OUT, width=LW)
    for x in (22, 34):
        d.ellipse(_b(x, 66, x + 6, 72), fill=OUT)


@_p("beanie")
def _beanie(d: ImageDraw.ImageDraw) -> None:
    d.ellipse(_b(52, 4, 84, 34), fill=LIGHT, outline=OUT, width=LW)  # pompom
    d.chord(_b(14, 22, 122, 150), 180, 360, fill=BODY, outline=OUT, width=LW)
    for x in range(30, 112, 14):
        d.line(_b(x, 40, x - 4 + (x - 68) // 6, 86), fill=SHADE, width=3 * S)
    d.rounded_rectangle(_b(10, 84, 126, 118), radius=10 * S, fill=LIGHT, outline=OUT, width=LW)
    for x in range(20, 120, 9):
        d.line(_b(x, 90, x, 112), fill=SHADE, width=2 * S)


@_p("sleep_mask")
def _sleep_mask(d: ImageDraw.ImageDraw) -> None:
    d.line(_b(4, 60, 132, 60), fill=OUT, width=6 * S)  # strap
    d.ellipse(_b(14, 30, 70, 98), fill=BODY, outline=OUT, width=LW)
    d.ellipse(_b(66, 30, 122, 98), fill=BODY, outline=OUT, width=LW)
    d.rectangle(_b(56, 40, 80, 80), fill=BODY)
    d.arc(_b(24, 52, 60, 78), 20, 160, fill=OUT, width=LW)  # closed-eye stitching
    d.arc(_b(76, 52, 112, 78), 20, 160, fill=OUT, width=LW)
    d.ellipse(_b(24, 38, 42, 48), fill=LIGHT)


@_p("folded_blanket")
def _folded_blanket(d: ImageDraw.ImageDraw) -> None:
    for i, y in enumerate((88, 64, 40)):
        d.rounded_rectangle(_b(10 + i * 3, y - 6, 126 - i * 3, y + 26), radius=12 * S,
                            fill=BODY if i % 2 == 0 else LIGHT, outline=OUT, width=LW)
        d.line(_b(20 + i * 3, y + 14, 116 - i * 3, y + 14), fill=SHADE, width=2 * S)
    for x in range(18, 122, 8):  # fleece fringe
        d.line(_b(x, 114, x, 122), fill=OUT, width=2 * S)


@_p("pillow")
def _pillow(d: ImageDraw.ImageDraw) -> None:
    pts = [(14, 18), (68, 28), (122, 18), (112, 64), (122, 110), (68, 100), (14, 110), (24, 64)]
    d.polygon([(x * S, y * S) for x, y in pts], fill=BODY, outline=OUT, width=LW)
    d.ellipse(_b(30, 36, 70, 60), fill=LIGHT)
    d.ellipse(_b(62, 58, 74, 70), fill=SHADE, outline=OUT, width=LW)  # centre button


@_p("neck_pillow")
def _neck_pillow(d: ImageDraw.ImageDraw) -> None:
    d.ellipse(_b(8, 8, 128, 124), fill=BODY, outline=OUT, width=LW)
    d.ellipse(_b(40, 36, 96, 96), fill=(0, 0, 0, 0), outline=OUT, width=LW)
    d.polygon([(50 * S, 70 * S), (86 * S, 70 * S), (98 * S, 128 * S), (38 * S, 128 * S)], fill=(0, 0, 0, 0))
    d.arc(_b(8, 8, 128, 124), 200, 300, fill=LIGHT, width=8 * S)
    for x in (38, 86):
        d.ellipse(_b(x, 96, x + 14, 122), fill=BODY, outline=OUT, width=LW)


@_p("remote")
def _remote(d: ImageDraw.ImageDraw) -> None:
    d.rounded_rectangle(_b(46, 4, 90, 124), radius=14 * S, fill=BODY, outline=OUT, width=LW)
    d.ellipse(_b(58, 14, 78, 34), fill=SHADE, outline=OUT, width=LW)  # power
    d.ellipse(_b(54, 42, 82, 70), fill=LIGHT, outline=OUT, width=LW)  # d-pad
    for row in range(3):
        for col in range(3):
            x, y = 55 + col * 10, 80 + row * 11
            d.rounded_rectangle(_b(x, y, x + 7, y + 6), radius=2 * S, fill=OUT)


def _tape(d: ImageDraw.ImageDraw, stripes: bool) -> None:
    d.ellipse(_b(8, 20, 128, 116), fill=BODY, outline=OUT, width=LW)
    if stripes:  # washi tape: a wider flat roll printed with diagonal stripes, clipped to the roll
        roll = Image.new("L", (W * S, H * S), 0)
        ImageDraw.Draw(roll).ellipse(_b(8, 20, 128, 116), fill=255)
        ink = Image.new("L", roll.size, 0)
        for i in range(-6, 8):
            x = 20 + i * 14
            ImageDraw.Draw(ink).line(_b(x, 22, x + 50, 114), fill=255, width=4 * S)
        d._image.paste(Image.new("RGBA", roll.size, LIGHT + (255,)), (0, 0), ImageChops.multiply(ink, roll))
        d.ellipse(_b(8, 20, 128, 116), outline=OUT, width=LW)
        d.ellipse(_b(44, 48, 92, 88), fill=(0, 0, 0, 0), outline=OUT, width=LW)
    else:  # clear sticky tape: glossy ring, a narrow core
        d.arc(_b(16, 28, 120, 108), 200, 320, fill=LIGHT, width=6 * S)
        d.ellipse(_b(36, 40, 100, 96), fill=SHADE, outline=OUT, width=LW)
        d.ellipse(_b(46, 48, 90, 88), fill=(0, 0, 0, 0), outline=OUT, width=LW)
        d.polygon([(118 * S, 70 * S), (134 * S, 96 * S), (124 * S, 104 * S), (110 * S, 84 * S)], fill=BODY, outline=OUT)


@_p("tape_roll")
def _tape_roll(d: ImageDraw.ImageDraw) -> None:
    _tape(d, stripes=False)


@_p("washi_tape")
def _washi_tape(d: ImageDraw.ImageDraw) -> None:
    _tape(d, stripes=True)


@_p("yoga_mat")
def _yoga_mat(d: ImageDraw.ImageDraw) -> None:
    d.rounded_rectangle(_b(26, 38, 126, 92), radius=6 * S, fill=BODY, outline=OUT, width=LW)
    d.line(_b(40, 40, 40, 90), fill=SHADE, width=3 * S)
    d.ellipse(_b(6, 36, 48, 94), fill=LIGHT, outline=OUT, width=LW)  # rolled end: spiral
    for r in (14, 8, 3):
        d.arc(_b(27 - r, 65 - r * 1.4, 27 + r, 65 + r * 1.4), 0, 300, fill=OUT, width=2 * S)
    d.line(_b(70, 36, 70, 94), fill=OUT, width=3 * S)  # strap
    d.line(_b(100, 36, 100, 94), fill=OUT, width=3 * S)


@_p("scrunchie")
def _scrunchie(d: ImageDraw.ImageDraw) -> None:
    cx, cy, r = 68, 64, 40
    for i in range(14):  # gathered fabric puffs around the ring
        a = 2 * math.pi * i / 14
        x, y = cx + r * math.cos(a), cy + r * 0.9 * math.sin(a)
        d.ellipse(_b(x - 20, y - 18, x + 20, y + 18), fill=BODY if i % 2 else LIGHT, outline=OUT, width=LW)
    d.ellipse(_b(cx - 20, cy - 18, cx + 20, cy + 18), fill=(0, 0, 0, 0))


@_p("wreath")
def _wreath(d: ImageDraw.ImageDraw) -> None:
    cx, cy, r = 68, 64, 42
    d.ellipse(_b(cx - r, cy - r, cx + r, cy + r), outline=OUT, width=14 * S)
    for i in range(18):  # leaves alternating in and out along the ring
        a = 2 * math.pi * i / 18
        rr = r + (6 if i % 2 else -6)
        x, y = cx + rr * math.cos(a), cy + rr * math.sin(a)
        d.ellipse(_b(x - 11, y - 7, x + 11, y + 7), fill=BODY if i % 3 else LIGHT, outline=OUT, width=3 * S)
    d.polygon([(cx * S, (cy + r - 8) * S), ((cx - 14) * S, (cy + r + 18) * S), ((cx + 14) * S, (cy + r + 18) * S)],
              fill=SHADE, outline=OUT)  # bow


@_p("sticky_note")
def _sticky_note(d: ImageDraw.ImageDraw) -> None:
    d.polygon([(16 * S, 12 * S), (120 * S, 12 * S), (120 * S, 92 * S), (96 * S, 120 * S), (16 * S, 120 * S)],
              fill=BODY, outline=OUT, width=LW)
    d.polygon([(120 * S, 92 * S), (96 * S, 92 * S), (96 * S, 120 * S)], fill=LIGHT, outline=OUT, width=LW)
    d.rectangle(_b(18, 14, 118, 30), fill=SHADE)  # adhesive strip
    for y in (48, 64, 80):
        d.line(_b(30, y, 100 if y < 80 else 80, y), fill=SHADE, width=3 * S)


def draw_picto(name: str) -> Image.Image:
    """Render a pictograph as an RGBA grey-level image of the emoji cell size."""
    try:
        fn = PICTOS[name]
    except KeyError:
        raise KeyError(f"unknown pictograph {name!r}; known: {', '.join(sorted(PICTOS))}") from None
    im = Image.new("RGBA", (W * S, H * S), (0, 0, 0, 0))
    fn(ImageDraw.Draw(im))
    return im.reduce(S)
