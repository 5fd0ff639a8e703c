"""Pixel work for the OCR stand-in: text lines of a chat screenshot, polarity-normalised.

Pure numpy (plus Pillow to decode). A MemShot shot is a flat background with text blocks — the
header band, speaker names, chat bubbles — separated by rows of pure background, and each block
is one flat colour with text in another. That structure is found from pixels alone (no layout
metadata, so any screenshot of this kind reads), and it buys three things a stock OCR pipeline
misses (measured in ``bench/memshot_ocr.py`` / the report of issue 13):

* **no text detector**: lines come from row projections, so only the recogniser runs;
* **polarity**: each block is mapped to *ink darkness* = distance from the block's own
  background colour, so white-on-blue bubbles and the dark header read as dark-on-white;
* **word boundaries**: the recogniser often drops spaces ("andsharedaphoto"); the pixel gaps
  between words (≥ 4 px at 13-19 px DejaVu, letter gaps are ≤ 3 px) put them back.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Colour distance (max over channels) under which a pixel counts as a given background. Shots
#: are lossless; the slack only matters for re-encoded (JPEG) screenshots.
TOL = 10
INK = 200  # ink-map value under which a pixel is ink (0 = full ink, 255 = background)


def decode_rgb(image: Any) -> np.ndarray:
    """Encoded bytes or a PIL image → ``(H, W, 3)`` uint8 RGB. Palette (``P``) shots are expanded
    through their palette (reading their indices as grey levels would be garbage)."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, (bytes, bytearray, memoryview)):
        try:
            img = Image.open(io.BytesIO(bytes(image)))
            img.load()
        except (UnidentifiedImageError, OSError, ValueError) as err:
            raise ValueError(f"cannot decode image ({len(image)} bytes): {err}") from err
    elif isinstance(image, Image.Image):
        img = image
    else:
        raise TypeError(f"image must be encoded bytes or a PIL.Image, got {type(image).__name__}")
    if img.width == 0 or img.height == 0:
        raise ValueError(f"empty image {img.size}")
    return np.asarray(img.convert("RGB"))


def mode_colour(rgb: np.ndarray) -> np.ndarray:
    """The most frequent colour of an ``(..., 3)`` array, as int32 ``(3,)``."""
    flat = rgb.reshape(-1, 3).astype(np.int32)
    key = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    vals, counts = np.unique(key, return_counts=True)
    k = int(vals[counts.argmax()])
    return np.array([(k >> 16) & 255, (k >> 8) & 255, k & 255], dtype=np.int32)


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` index ranges where a 1-d boolean mask is True."""
    m = np.concatenate([[False], np.asarray(mask, bool), [False]]).astype(np.int8)
    d = np.diff(m)
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


@dataclass(frozen=True, slots=True)
class Block:
    """A rectangle of non-background rows: a header band, a name line, or a bubble."""

    y0: int
    y1: int
    x0: int
    x1: int


def text_blocks(rgb: np.ndarray, tol: int = TOL) -> tuple[list[Block], np.ndarray]:
    """Blocks separated by full rows of the page background (the image's most common colour),
    each trimmed to its non-background columns; and that background colour."""
    canvas = mode_colour(rgb)
    fg = np.abs(rgb.astype(np.int32) - canvas).max(axis=2) > tol
    blocks = []
    for y0, y1 in runs(fg.any(axis=1)):
        cols = np.flatnonzero(fg[y0:y1].any(axis=0))
        blocks.append(Block(y0, y1, int(cols[0]), int(cols[-1]) + 1))
    return blocks, canvas


def ink_map(crop: np.ndarray, canvas: np.ndarray, tol: int = TOL) -> np.ndarray:
    """``uint8`` map, 0 = ink .. 255 = background: each pixel's colour distance from the block's
    own (most common) colour, stretched to full range — dark-on-light whatever the polarity."""
    bg = mode_colour(crop)
    c = crop.astype(np.int32)
    d = np.abs(c - bg).max(axis=2)
    if np.abs(bg - canvas).max() > tol:
        # A bubble's rounded corners show the page background; blank them, but only near the
        # left/right edges: light text on a dark bubble can itself be page-coloured mid-stroke.
        m = max(1, min(crop.shape[0] // 2, 16))
        edge = np.zeros(crop.shape[1], bool)
        edge[:m] = edge[-m:] = True
        d[(np.abs(c - canvas).max(axis=2) <= tol) & edge[None, :]] = 0
    top = int(d.max())
    if top == 0:
        return np.full(d.shape, 255, np.uint8)
    return (255 - d * 255 // top).astype(np.uint8)


@dataclass(frozen=True, slots=True)
class Line:
    """One text line (or a segment of one: big horizontal gaps split a header's label from its
    timestamp), as an ink map padded with background; ``block`` says where it came from."""

    ink: np.ndarray
    block: int
    tall: bool  # taller than a text line at this scale: not a line, read with a detector


def text_lines(rgb: np.ndarray, *, pad: int = 4, min_height: int = 5, max_height: int = 40,
               segment_gap: int = 40, tol: int = TOL) -> list[Line]:
    """Every text line of a screenshot in reading order (blocks top to bottom, lines within a
    block top to bottom, segments left to right).

    ``min_height`` drops specks (corner anti-aliasing); a run of ink rows taller than
    ``max_height`` is returned whole with ``tall=True`` (large text, a picture, touching lines);
    column gaps of at least ``segment_gap`` px split a line into segments.
    """
    blocks, canvas = text_blocks(rgb, tol)
    out: list[Line] = []
    for bi, b in enumerate(blocks):
        ink = ink_map(rgb[b.y0:b.y1, b.x0:b.x1], canvas, tol)
        for a, z in runs((ink < INK).any(axis=1)):
            if z - a < min_height:
                continue
            row = ink[a:z]
            if z - a > max_height:
                out.append(Line(np.pad(row, pad, constant_values=255), bi, True))
                continue
            segs: list[list[int]] = []
            for s, e in runs((row < INK).any(axis=0)):
                if segs and s - segs[-1][1] < segment_gap:
                    segs[-1][1] = e
                else:
                    segs.append([s, e])
            out += [Line(np.pad(row[:, s:e], pad, constant_values=255), bi, False) for s, e in segs]
    return out


def word_gaps(ink: np.ndarray, min_gap: int = 4) -> list[tuple[int, int]]:
    """Interior column ranges of at least ``min_gap`` px with no ink: the spaces between words."""
    blank = ~(ink < INK).any(axis=0)
    return [(s, e) for s, e in runs(blank) if e - s >= min_gap and s > 0 and e < ink.shape[1]]


# Characters that hug their neighbour: a pixel gap next to them is kerning, not a space
# ("2:31" in a 19 px header has 4 px around the colon).
_NO_SPACE_BEFORE = set(",.:;!?)]}%'’”")
_NO_SPACE_AFTER = set("([{'‘“$#")


def _in_number(out: list[str], ch: str) -> bool:
    """``1:|14``, ``3.|5``: a separator between digits joins them (``1`` has a wide bearing)."""
    return ch.isdigit() and len(out) >= 2 and out[-1] in ":.," and out[-2].isdigit()


def respace(chars: list[tuple[str, float]], gaps: list[tuple[int, int]]) -> str:
    """Join recognised characters ``(char, x)`` (x = centre in the line's pixels), inserting a
    space wherever a word gap lies between two consecutive characters. The recogniser's own
    spaces are kept (collapsed); spaces next to hugging punctuation are not inserted."""
    mids = [(s + e) / 2 for s, e in gaps]
    out: list[str] = []
    prev_x: float | None = None
    for ch, x in chars:
        if ch == " ":
            if out and out[-1] != " ":
                out.append(" ")
        else:
            if (prev_x is not None and out and out[-1] != " " and ch not in _NO_SPACE_BEFORE
                    and out[-1] not in _NO_SPACE_AFTER and not _in_number(out, ch)
                    and any(prev_x < m < x for m in mids)):
                out.append(" ")
            out.append(ch)
        prev_x = x
    return "".join(out).strip()


def fix_zero_letter(text: str) -> str:
    """``0ctober`` → ``October``: a zero inside a word of letters is the letter O (the
    recogniser's one systematic confusion on these fonts); zeros next to digits stay."""
    out = []
    for tok in text.split(" "):
        if "0" in tok and sum(c.isalpha() for c in tok) >= 2:
            chars = list(tok)
            for i, c in enumerate(chars):
                if c != "0":
                    continue
                left = chars[i - 1] if i > 0 else ""
                right = chars[i + 1] if i + 1 < len(chars) else ""
                if not (left.isdigit() or right.isdigit()) and (left.isalpha() or right.isalpha()):
                    chars[i] = "o" if left.islower() else "O"
            tok = "".join(chars)
        out.append(tok)
    return " ".join(out)
