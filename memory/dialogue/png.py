"""Palette PNGs assembled from pre-compressed row blocks.

A shot is a vertical stack of full-width pieces — header band, padding, turn-pair strips — and
with the overlap-two rule each strip appears in about 2.3 shots. Compressing each piece once as
an independent deflate segment (``vismem.core.png.deflate_segment`` at :data:`SHOT_LEVEL`, ended
with a full flush: byte-aligned, no back-references across pieces) and splicing segments into
each shot's zlib stream makes encoding a shot almost free: the PNG's ``IDAT`` is ``zlib header +
segments + final empty block + adler32``, where the adler32 of the whole is combined from the
pieces' checksums (zlib's ``adler32_combine``). The output is an ordinary 8-bit palette PNG
(filter 0 on every row), byte-deterministic, with no metadata chunks; it decodes to exactly the
pixels Pillow would encode from the composed image.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image

from vismem.core.png import SIGNATURE, adler32, chunk, deflate_segment

#: The deflate level of shot pieces: ISA-L's level 0 (Huffman coding with its short-window
#: matcher -- not zlib's "stored"). ISA-L's stateful compressor at levels 1-3 is not deterministic
#: here: the same strip, compressed again later in the same render process, sometimes came out
#: different (still valid, same pixels; one to twenty segments in ~30 % of full LoCoMo renders,
#: measured over 24 renders against a fixed reference segment), which made a session's shots
#: differ byte-wise between runs. Level 0 showed no difference in 34 such renders, is ~20 % faster
#: than level 1 and ~22 % larger (tests/memory/dialogue/test_render.py renders a conversation in
#: three processes and compares the bytes).
SHOT_LEVEL = 0
_BASE = 65521
_FINAL = b"\x03\x00"  # an empty final fixed-Huffman block: ends the deflate stream


def adler32_combine(adler1: int, adler2: int, len2: int) -> int:
    """Adler-32 of ``A + B`` from ``adler32(A)``, ``adler32(B)`` and ``len(B)`` (as zlib's)."""
    rem = len2 % _BASE
    sum1 = adler1 & 0xFFFF
    sum2 = (rem * sum1) % _BASE
    sum1 += (adler2 & 0xFFFF) + _BASE - 1
    sum2 += ((adler1 >> 16) & 0xFFFF) + ((adler2 >> 16) & 0xFFFF) + _BASE - rem
    if sum1 >= _BASE:
        sum1 -= _BASE
    if sum1 >= _BASE:
        sum1 -= _BASE
    if sum2 >= _BASE << 1:
        sum2 -= _BASE << 1
    if sum2 >= _BASE:
        sum2 -= _BASE
    return sum1 | (sum2 << 16)


@dataclass(frozen=True, slots=True)
class Block:
    """A run of PNG rows: its full-flushed raw-deflate bytes, adler32 and raw length."""

    data: bytes
    adler: int
    size: int
    rows: int


def rows_block(img: Image.Image, level: int = SHOT_LEVEL) -> Block:
    """The rows of an 8-bit (``L``/``P``) image, each prefixed with filter type 0."""
    w, h = img.size
    # Paste into a one-pixel-wider image whose column 0 stays 0: its bytes are exactly the PNG
    # rows with filter byte 0 (one memcpy instead of a Python join over rows).
    wide = Image.new("L", (w + 1, h), 0)
    wide.paste(img if img.mode == "L" else img.convert("L"), (1, 0))
    filtered = wide.tobytes()
    return Block(deflate_segment(filtered, level), adler32(filtered), len(filtered), h)


@lru_cache(maxsize=256)
def fill_block(width: int, rows: int, index: int, level: int = SHOT_LEVEL) -> Block:
    """``rows`` rows of one palette index (page padding)."""
    filtered = (b"\x00" + bytes([index]) * width) * rows
    return Block(deflate_segment(filtered, level), adler32(filtered), len(filtered), rows)


def assemble(width: int, palette: bytes, blocks: list[Block]) -> bytes:
    """A palette PNG whose rows are the concatenation of ``blocks``."""
    height = sum(b.rows for b in blocks)
    adler, segs = 1, []
    for b in blocks:
        adler = adler32_combine(adler, b.adler, b.size)
        segs.append(b.data)
    idat = b"\x78\x01" + b"".join(segs) + _FINAL + struct.pack(">I", adler)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    return SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"PLTE", palette) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
