"""vismem.core.png: spliceable deflate segments (ISA-L and zlib levels), zlib streams, the RGB writer."""

from __future__ import annotations

import io
import zlib

import numpy as np
import pytest
from PIL import Image

from vismem.core.png import ISAL_MAX_LEVEL, chunk, deflate_segment, rgb_png, up_filtered, zlib_stream


def _pieces(seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    flat = bytes(4000)  # long runs, like background rows
    noisy = rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()
    text = (b"the quick brown fox " * 150)
    return [flat, noisy, text, b"", noisy[:7]]


@pytest.mark.parametrize("level", [0, 1, 2, ISAL_MAX_LEVEL, ISAL_MAX_LEVEL + 1, 6, 9])
def test_segments_splice_into_one_stream(level):
    pieces = _pieces(level)
    stream = b"".join(deflate_segment(p, level) for p in pieces) + b"\x03\x00"  # + an empty final block
    d = zlib.decompressobj(-15)
    assert d.decompress(stream) == b"".join(pieces)
    assert d.eof  # the final block ended the stream: nothing was left open by a segment


@pytest.mark.parametrize("level", [1, 6])
def test_zlib_stream_round_trips_and_is_deterministic(level):
    raw = b"".join(_pieces(3))
    out = zlib_stream(raw, level)
    assert zlib.decompress(out) == raw and zlib_stream(raw, level) == out


def test_segment_compresses_runs():
    raw = (b"\x00" * 900 + b"\x07\x09" * 50) * 200
    assert len(deflate_segment(raw, 1)) < len(raw) / 20


def test_bad_level_is_refused():
    with pytest.raises(ValueError, match="0-9"):
        deflate_segment(b"x", 10)
    with pytest.raises(ValueError, match="0-9"):
        zlib_stream(b"x", -1)


def test_up_filter_rows():
    a = np.array([[[1, 2, 3], [4, 5, 6]], [[0, 2, 10], [4, 4, 4]]], np.uint8)
    rows = up_filtered(a)
    assert rows == bytes([2, 1, 2, 3, 4, 5, 6, 2, 255, 0, 7, 0, 255, 254])


@pytest.mark.parametrize("level", [1, 6])
def test_rgb_png_decodes_to_the_same_pixels(level):
    rng = np.random.default_rng(level)
    a = np.zeros((37, 53, 3), np.uint8)
    a[:, :, 0] = np.arange(53, dtype=np.uint8)  # a horizontal gradient
    a[10:20, 5:40] = rng.integers(0, 256, (10, 35, 3), dtype=np.uint8)
    png = rgb_png(a, level)
    im = Image.open(io.BytesIO(png))
    assert im.format == "PNG" and im.mode == "RGB" and im.size == (53, 37)
    assert np.array_equal(np.asarray(im), a)
    assert rgb_png(a, level) == png  # deterministic


def test_rgb_png_refuses_other_arrays():
    with pytest.raises(ValueError, match="uint8"):
        rgb_png(np.zeros((4, 4, 4), np.uint8))
    with pytest.raises(ValueError, match="uint8"):
        rgb_png(np.zeros((4, 4, 3), np.float32))


def test_chunk_crc():
    c = chunk(b"IEND", b"")
    assert c == b"\x00\x00\x00\x00IEND" + zlib.crc32(b"IEND").to_bytes(4, "big")


@pytest.mark.parametrize("level", range(1, 10))
def test_levels_above_isal_are_zlibs_exact_bytes(level):
    """ISA-L serves level 0 only: its levels 1-3 now and then gave another (valid) stream for the same
    input, so content keys changed between runs. Above 0 the bytes are zlib's, a function of the input."""
    raw = b"".join(_pieces(level)) * 3
    c = zlib.compressobj(level, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY)
    assert zlib_stream(raw, level) == c.compress(raw) + c.flush()
    c = zlib.compressobj(level, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    assert zlib_stream(raw, level, rle=True) == c.compress(raw) + c.flush()
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    assert deflate_segment(raw, level) == c.compress(raw) + c.flush(zlib.Z_FULL_FLUSH)
