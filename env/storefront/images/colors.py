"""The ten cue colours as shading ramps, and the CIELAB maths used to check they stay apart.

A cue is drawn by mapping the luminance of a pictograph onto a three-stop ramp of its colour
(shadow → base → highlight), so shading survives and the mean colour of the object lands on the
base tone. The ramps are chosen so the risky pairs separate: white is neutral and bright, beige
warm and a step darker; brown is dark and low-chroma, orange bright and saturated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: colour name → (shadow, base, highlight) sRGB stops.
CUE_RAMPS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]] = {
    "red": ((105, 8, 14), (208, 28, 36), (250, 125, 115)),
    "blue": ((10, 28, 105), (34, 88, 210), (125, 175, 250)),
    "green": ((8, 72, 24), (38, 152, 62), (140, 218, 132)),
    "yellow": ((165, 125, 0), (246, 208, 24), (255, 242, 150)),
    "white": ((150, 150, 154), (242, 242, 242), (255, 255, 255)),
    "black": ((4, 4, 5), (28, 28, 30), (92, 92, 98)),
    "brown": ((52, 28, 10), (112, 66, 32), (168, 122, 82)),
    "beige": ((168, 142, 100), (222, 200, 156), (244, 232, 205)),
    "orange": ((170, 66, 0), (246, 128, 18), (255, 192, 112)),
    "purple": ((58, 12, 88), (128, 48, 176), (196, 140, 232)),
}

CUE_COLORS: tuple[str, ...] = tuple(CUE_RAMPS)


def ramp_lut(color: str) -> np.ndarray:
    """A 256×3 uint8 lookup table: position 0..255 on the cue colour's ramp → sRGB."""
    try:
        stops = CUE_RAMPS[color]
    except KeyError:
        raise KeyError(f"unknown cue colour {color!r}; known: {', '.join(CUE_COLORS)}") from None
    return ramp_lut_from(stops)


def ramp_lut_from(stops: Any) -> np.ndarray:
    """The 256×3 uint8 LUT of any three-stop ramp ``(low, mid, high)`` of sRGB triples."""
    lo, mid, hi = (np.asarray(c, dtype=np.float32) for c in stops)
    t = np.linspace(0.0, 1.0, 256, dtype=np.float32)[:, None]
    low = lo + (mid - lo) * np.clip(t * 2, 0, 1)
    high = mid + (hi - mid) * np.clip(t * 2 - 1, 0, 1)
    return np.where(t <= 0.5, low, high).round().astype(np.uint8)


def srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (..., 3) in 0..255 → CIELAB (D65)."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124564, 0.3575761, 0.1804375],
                  [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = c @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def delta_e(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CIE76 colour difference between Lab colours."""
    return np.linalg.norm(np.asarray(a) - np.asarray(b), axis=-1)
