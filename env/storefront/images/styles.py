"""Interior styles as data: palette, materials and shape language for the procedural products.

Each style fixes what a collection has in common (backdrop, materials, leg type, corner
rounding, pattern family, trim); the ten variants of a collection then vary proportions, which
fabric of the palette they use, and details, seeded by their url_hash.
"""

from __future__ import annotations

from dataclasses import dataclass

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Style:
    name: str
    wall: RGB  # backdrop top
    floor: RGB  # backdrop floor
    fabrics: tuple[RGB, ...]  # upholstery / ceramic / main surface choices
    wood: RGB
    metal: RGB
    accent: RGB
    leg: str  # pin | thin | tapered | splayed | frame | turned | block | rattan | gold
    radius: float  # corner rounding 0..0.5 (share of the smaller side)
    pattern: str  # none | blocks | lines | atomic | dots | grain | floral | plaid | kilim | fan
    trim: bool = False  # contrasting piping / gilded edges
    low: float = 1.0  # height factor (japandi sits low)


STYLES: dict[str, Style] = {s.name: s for s in (
    Style("modern", (206, 210, 216), (222, 225, 229), ((68, 70, 78), (78, 98, 130), (160, 163, 168), (160, 94, 56)),
          (88, 68, 54), (38, 38, 42), (214, 168, 60), "pin", 0.18, "blocks"),
    Style("minimalist", (196, 199, 203), (214, 216, 219), ((236, 232, 224), (186, 180, 171), (208, 208, 208), (120, 120, 120)),
          (214, 194, 164), (205, 205, 205), (60, 60, 60), "thin", 0.04, "none"),
    Style("mid_century", (221, 210, 192), (233, 224, 208), ((206, 150, 40), (30, 108, 114), (190, 90, 40), (118, 120, 48)),
          (150, 88, 44), (60, 55, 50), (40, 40, 40), "splayed", 0.3, "atomic"),
    Style("scandinavian", (208, 216, 220), (224, 230, 232), ((198, 198, 196), (156, 174, 148), (148, 168, 186), (236, 228, 214)),
          (218, 188, 148), (230, 230, 230), (60, 70, 80), "tapered", 0.35, "dots"),
    Style("industrial", (182, 182, 184), (200, 200, 201), ((108, 70, 44), (74, 74, 78), (150, 140, 118), (92, 60, 40)),
          (122, 86, 56), (36, 36, 40), (150, 150, 152), "frame", 0.0, "grain"),
    Style("vintage", (214, 200, 194), (228, 218, 212), ((188, 132, 134), (138, 150, 108), (58, 100, 100), (190, 158, 98)),
          (108, 62, 38), (170, 140, 80), (240, 230, 210), "turned", 0.4, "floral", trim=True),
    Style("rustic", (210, 198, 182), (224, 214, 200), ((200, 184, 158), (150, 80, 50), (72, 92, 60), (122, 110, 92)),
          (128, 88, 54), (58, 54, 50), (230, 220, 200), "block", 0.1, "plaid"),
    Style("bohemian", (222, 204, 188), (232, 218, 204), ((190, 100, 70), (214, 158, 60), (62, 72, 122), (164, 70, 100)),
          (192, 150, 96), (150, 120, 80), (240, 230, 210), "rattan", 0.45, "kilim"),
    Style("art_deco", (196, 192, 206), (214, 210, 222), ((22, 96, 72), (26, 40, 86), (120, 30, 46), (32, 32, 34)),
          (48, 32, 28), (206, 168, 72), (206, 168, 72), "gold", 0.5, "fan", trim=True),
    Style("japandi", (220, 214, 204), (232, 228, 220), ((216, 206, 186), (66, 63, 60), (170, 140, 114), (120, 120, 94)),
          (190, 160, 120), (70, 56, 46), (40, 38, 36), "block", 0.15, "lines", low=0.85),
)}


def shade(c: RGB, f: float) -> RGB:
    """Darken (f < 1) or lighten towards white (f > 1) a colour."""
    if f <= 1:
        return tuple(max(0, int(v * f)) for v in c)  # type: ignore[return-value]
    t = min(f - 1, 1)
    return tuple(int(v + (255 - v) * t) for v in c)  # type: ignore[return-value]
