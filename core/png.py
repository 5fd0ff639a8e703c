"""PNG writing shared by the MemShot shot renderer and the catalogue: chunks, deflate, an RGB writer.

Deflate is the cost of a PNG here (the pixels are drawn fast; see ``vismem.memory.dialogue.draw``), so the
level picks the engine: level 0 is ISA-L's (``isal``: Intel's deflate, static Huffman with a short-window
matcher, about as fast as its level 1 and ~25 % larger), 1-9 are zlib's (smaller, several times
slower). ``pyproject.toml`` pins both libraries, and the same pixels must give the same bytes
(content-keyed caches, result tables), which is why ISA-L serves level 0 only: its levels 1-3
(two-pass, with a separately allocated level buffer) now and then gave a different (valid) stream
for the same input -- the stateful compressor later in the same process (shots, see
``vismem.memory.dialogue.png.SHOT_LEVEL``) and the one-shot ``compress`` in 2 of 6 catalogue
generations. Level 0 needs no level buffer and showed no difference in any repeat; zlib's output
is a function of its input and settings. Measured per 512-px product photo (Up-filtered rows):
zlib RLE level 1 2.5 ms, ISA-L 0.55 ms.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from isal import isal_zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The highest level ISA-L serves (the one whose output repeats exactly); levels above go to zlib.
ISAL_MAX_LEVEL = 0


def adler32(data: bytes, value: int = 1) -> int:
    """Adler-32 (ISA-L's SIMD version: ~5x zlib's, same values)."""
    return isal_zlib.adler32(data, value)


def _check(level: int) -> int:
    level = int(level)
    if not 0 <= level <= 9:
        raise ValueError(f"deflate level must be 0-9, got {level}")
    return level


def chunk(tag: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, tag, data, CRC-32 of tag + data."""
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def deflate_segment(raw: bytes, level: int = 1) -> bytes:
    """Raw deflate of ``raw`` ending in a sync flush: byte-aligned and not final, so segments
    compressed on their own can be concatenated into one stream (no back-references between)."""
    level = _check(level)
    mod = isal_zlib if level <= ISAL_MAX_LEVEL else zlib
    c = mod.compressobj(level, mod.DEFLATED, -15)
    return c.compress(raw) + c.flush(mod.Z_FULL_FLUSH)


def zlib_stream(raw: bytes, level: int = 1, *, rle: bool = False) -> bytes:
    """A complete zlib stream of ``raw`` (``rle``: zlib's RLE strategy when zlib serves the level)."""
    level = _check(level)
    if level <= ISAL_MAX_LEVEL:
        return isal_zlib.compress(raw, level)
    c = zlib.compressobj(level, zlib.DEFLATED, 15, 9, zlib.Z_RLE if rle else zlib.Z_DEFAULT_STRATEGY)
    return c.compress(raw) + c.flush()


def up_filtered(a: np.ndarray) -> bytes:
    """The PNG rows of an ``(h, w, c)`` uint8 array, every row with filter type 2 ("Up")."""
    h = a.shape[0]
    flat = a.reshape(h, -1)
    raw = np.empty((h, 1 + flat.shape[1]), np.uint8)
    raw[:, 0] = 2
    raw[0, 1:] = flat[0]
    np.subtract(flat[1:], flat[:-1], out=raw[1:, 1:])  # uint8 arithmetic wraps modulo 256, as PNG wants
    return raw.tobytes()


def rgb_png(a: np.ndarray, level: int = 1) -> bytes:
    """A minimal deterministic 8-bit RGB PNG (no metadata) of an ``(h, w, 3)`` uint8 array.

    "Up" on every row instead of Pillow's per-row choice among five filters, which costs more than
    the compression itself: drawn scenes and shots are flat shapes and vertical gradients, where
    Up leaves mostly zeros.
    """
    h, w, c = a.shape
    if c != 3 or a.dtype != np.uint8:
        raise ValueError(f"rgb_png wants an (h, w, 3) uint8 array, got {a.shape} {a.dtype}")
    data = zlib_stream(up_filtered(np.ascontiguousarray(a)), level, rle=True)
    return (SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", data) + chunk(b"IEND", b""))
