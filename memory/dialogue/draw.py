"""Drawing shots with Pillow, fast and byte-deterministic.

Speed: the benchmark target is all of LoCoMo (~1,560 shots) in 1.5 s on 2 cores, i.e. about
2 ms of CPU per shot. Three choices get there:

* **palette drawing** — a shot uses six colour pairs (background → text colour: canvas/names,
  left bubble, right bubble, header, and the two caption colours). We draw into an 8-bit ``L``
  canvas whose values are *palette indices*: each pair owns a ramp of 42 indices from its
  background to its text colour. Anti-aliased text drawn with ink = ramp end on a ramp-start
  background blends to an index inside that ramp, which the palette maps to the right blended
  colour. The result is a ``P`` image that looks like the RGB rendering but is 1 byte/pixel
  (3x less to draw and to compress);
* **word masks** — each word's mask is made once per process (``Font.stamp``, composed from
  cached glyphs by :mod:`vismem.memory.dialogue.glyphs`) and stamped with ``draw_bitmap`` (what
  ``ImageDraw.text`` does internally), 8x faster than ``draw.text``;
* **pair strips** — each turn-pair is drawn once per session into a full-width strip and pasted
  into every unit that shows it, so the two overlapping pairs are not drawn twice.

Encoding: lossless, chosen by measurement on a 948x768 shot (this machine, Pillow 13):
PNG of the palette image at ``compress_level=1`` 2.3 ms / 54 kB; PNG level 6 ~5 ms / 30-50 kB;
lossless WebP (method 0) 18 ms / 59 kB; RGB PNG level 1 14 ms / 87 kB. PNG level 1 on the
palette image wins encode time x size by far, so PNG is the default (WebP stays available).
PNG shots go one step further (``SessionPainter`` + ``vismem.memory.dialogue.png``): each header band
and turn-pair strip is compressed once and spliced into every shot that shows it, so the
overlapping pairs are neither drawn nor compressed twice, and the deflate is ISA-L's level 0
(``vismem.core.png``, ``vismem.memory.dialogue.png.SHOT_LEVEL``: ~5x zlib level 1, same pixels, output that
repeats exactly). PNGs carry no text chunks or
timestamps, so the same input gives the same bytes.
"""

from __future__ import annotations

import io
import time
from functools import lru_cache
from typing import Any, Literal

from PIL import Image, ImageColor, ImageDraw

from vismem.memory.dialogue.layout import (Font, Line, MessageLayout, PairLayout, SessionLayout, body_fonts, get_font,
                                    line_width)
from vismem.memory.dialogue.png import SHOT_LEVEL, assemble, fill_block, rows_block
from vismem.memory.dialogue.style import Style

_N_RAMPS = 6
_LEVELS = 256 // _N_RAMPS  # 42 anti-aliasing levels per colour pair
CANVAS, LEFT, RIGHT, HEADER, LEFT_CAP, RIGHT_CAP = range(_N_RAMPS)
ImageFormat = Literal["png", "webp"]


def _ramp_start(r: int) -> int:
    return r * _LEVELS


def _ramp_end(r: int) -> int:
    return r * _LEVELS + _LEVELS - 1


@lru_cache(maxsize=32)
def palette(style: Style) -> bytes:
    """The 256-entry RGB palette: linear ramps background → foreground per colour pair."""
    pairs = [(style.canvas, style.name_color), (style.left_bg, style.left_fg), (style.right_bg, style.right_fg),
             (style.header_bg, style.header_fg), (style.left_bg, style.left_caption),
             (style.right_bg, style.right_caption)]
    out = bytearray()
    for bg, fg in pairs:
        b, f = ImageColor.getrgb(bg)[:3], ImageColor.getrgb(fg)[:3]
        for i in range(_LEVELS):
            t = i / (_LEVELS - 1)
            out += bytes(round(b[c] + (f[c] - b[c]) * t) for c in range(3))
    out += bytes(3 * (256 - _N_RAMPS * _LEVELS))
    return bytes(out)


Placement = tuple[str, int, int]  # (emoji character, x, y of its square's top-left in the strip)


def _stamp_line(core, line: Line, font: Font, x: float, y: int, ink: int,
                emoji: list[Placement] | None = None, emoji_y: int = 0) -> None:
    """Stamp a line's words; emoji runs (fonts with an emoji font) go to ``emoji`` instead,
    at the advance the layout measured, to be pasted in colour once the shot is composed."""
    # The hot loop of drawing (~80 words a shot): one dict lookup per word, bound methods local.
    stamps, stamp, space, draw_bitmap = font.stamps, font.stamp, font.space, core.draw_bitmap
    for w in line:
        mask, dx, dy, width, parts = stamps.get(w) or stamp(w)
        if parts is None or emoji is None:
            draw_bitmap((int(x) + dx, y + dy), mask, ink)
            x += width + space
            continue
        from vismem.memory.dialogue.emoji import advance, glyphs

        for run, is_emoji in parts:
            if is_emoji:
                for g in glyphs(run):
                    emoji.append((g, int(x), emoji_y))
                    x += advance(font.emoji_size)
            else:
                mask, dx, dy = font.stamp(run)[:3]
                draw_bitmap((int(x) + dx, y + dy), mask, ink)
                x += font.glyphs.length(run)
        x += space


@lru_cache(maxsize=8)
def _corners(radius: int) -> tuple[Any, Any, Any, Any]:
    """The four ``(radius+1)``-square corner blocks of a filled rounded rectangle as Pillow draws
    it (masks, 255 = filled): top-left, top-right, bottom-right, bottom-left."""
    size = 4 * radius + 3  # corners far apart: each block holds its own quarter only
    im = Image.new("L", (size, size), 0)
    ImageDraw.Draw(im).rounded_rectangle((0, 0, size - 1, size - 1), radius, fill=255)
    far = size - 1 - radius
    return tuple(im.crop((x, y, x + radius + 1, y + radius + 1)).im  # type: ignore[return-value]
                 for x, y in ((0, 0), (far, 0), (far, far), (0, far)))


def bubble(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], radius: int, fill: int) -> None:
    """``draw.rounded_rectangle(box, radius, fill=fill)``, pixel for pixel, 5x faster.

    Pillow fills three rectangles and four quarter-pies; a pie's pixels depend only on its box,
    so each corner is a cached mask stamped at the corner (the quarter-pies never reach past
    their corner's ``radius+1`` square). Bubbles too small for four separate corners (Pillow
    joins them) go to Pillow.
    """
    x0, y0, x1, y1 = box
    r = radius
    if r <= 0 or 2 * r >= min(x1 - x0, y1 - y0) - 1:
        draw.rounded_rectangle(box, radius, fill=fill)
        return
    core = draw.draw
    if x1 - r - 1 >= x0 + r + 1:
        core.draw_rectangle((x0 + r + 1, y0, x1 - r - 1, y1), fill, 1)
    core.draw_rectangle((x0, y0 + r + 1, x0 + r, y1 - r - 1), fill, 1)
    core.draw_rectangle((x1 - r, y0 + r + 1, x1, y1 - r - 1), fill, 1)
    tl, tr, br, bl = _corners(r)
    core.draw_bitmap((x0, y0), tl, fill)
    core.draw_bitmap((x1 - r, y0), tr, fill)
    core.draw_bitmap((x1 - r, y1 - r), br, fill)
    core.draw_bitmap((x0, y1 - r), bl, fill)


def _draw_message(draw: ImageDraw.ImageDraw, m: MessageLayout, y: int, style: Style,
                  emoji: list[Placement] | None = None) -> None:
    core = draw.draw
    name_f = get_font(style.font_bold, style.name_size, fallback=style.font_cjk)
    body, ital = body_fonts(style)
    W = style.width
    if m.side == 0:
        bx = style.margin_x
        name_x = bx + 2
    else:
        bx = W - style.margin_x - m.bubble_w
        name_x = W - style.margin_x - 2 - name_f.width(m.name)
    _stamp_line(core, tuple(m.name.split(" ")) or ("",), name_f, name_x, y, _ramp_end(CANVAS))
    by = y + style.name_line + style.name_gap
    ramp, cap_ramp = (LEFT, LEFT_CAP) if m.side == 0 else (RIGHT, RIGHT_CAP)
    bubble(draw, (bx, by, bx + m.bubble_w - 1, by + m.bubble_h - 1), style.bubble_radius, _ramp_start(ramp))
    ty = by + style.bubble_pad_y + (style.body_line - style.body_size) // 2 - 1
    tx = bx + style.bubble_pad_x
    # An emoji's square is centred in its body line.
    e_off = (style.body_line - style.emoji_size) // 2 - (style.body_line - style.body_size) // 2 + 1
    for ln in m.lines:
        _stamp_line(core, ln, body, tx, ty, _ramp_end(ramp), emoji, ty + e_off)
        ty += style.body_line
    if m.caption_lines:
        # Caption text blends from the bubble colour towards the caption colour. The caption
        # ramp starts at the bubble colour, so repaint the caption rows with that ramp's start
        # index (visually identical) before stamping; blends then stay inside the ramp.
        inset = min(style.bubble_pad_x // 2, style.bubble_radius // 2)
        cap_top = by + style.bubble_pad_y + len(m.lines) * style.body_line
        draw.rectangle((bx + inset, cap_top, bx + m.bubble_w - 1 - inset,
                        cap_top + len(m.caption_lines) * style.body_line - 1), fill=_ramp_start(cap_ramp))
        for ln in m.caption_lines:
            _stamp_line(core, ln, ital, tx, ty, _ramp_end(cap_ramp), emoji, ty + e_off)
            ty += style.body_line


def draw_pair(pair: PairLayout, style: Style, emoji: list[Placement] | None = None) -> Image.Image:
    """A full-width strip (``L`` image of palette indices) holding one turn-pair.

    With ``emoji`` (a list), emoji are left blank in the strip and their placements appended
    (strip coordinates) for :func:`paste_emoji`; without it they draw as the body font's box.
    """
    img = Image.new("L", (style.width, pair.height), _ramp_start(CANVAS))
    draw = ImageDraw.Draw(img)
    y = 0
    for m in pair.messages:
        _draw_message(draw, m, y, style, emoji)
        y += m.height + style.message_gap
    return img


def paste_emoji(img: Image.Image, placements: list[Placement], top: int, style: Style) -> None:
    """Paste colour emoji glyphs into an RGB shot, ``top`` = the strip's y in the shot."""
    from vismem.memory.dialogue.emoji import glyph_image

    for ch, x, y in placements:
        g = glyph_image(ch, style.emoji_size, style.font_emoji)
        img.paste(g, (x, top + y), g)


def draw_header(layout: SessionLayout, style: Style) -> Image.Image:
    """The header band: session label (bold) on the left, the timestamp on the right."""
    img = Image.new("L", (style.width, style.header_height), _ramp_start(HEADER))
    core = ImageDraw.Draw(img).draw
    bold = get_font(style.font_bold, style.header_size, fallback=style.font_cjk)
    reg = get_font(style.font_regular, style.header_size, fallback=style.font_cjk)
    y = (style.header_height - style.header_size) // 2 - 2
    _stamp_line(core, tuple(layout.session.label.split()), bold, style.margin_x, y, _ramp_end(HEADER))
    date = tuple(layout.session.date_text.split())
    dx = style.width - style.margin_x - line_width(date, reg)
    _stamp_line(core, date, reg, dx, y, _ramp_end(HEADER))
    return img


def compose(layout: SessionLayout, start: int, end: int, height: int, style: Style,
            strips: dict[int, Image.Image], header: Image.Image | None) -> Image.Image:
    """Assemble one unit (pairs ``[start, end)``) as a ``P`` image; strips are drawn on demand."""
    img = Image.new("L", (style.width, height), _ramp_start(CANVAS))
    y = 0
    if layout.header and header is not None:
        img.paste(header, (0, 0))
        y = style.header_height
    y += style.chat_pad_top
    for p in range(start, end):
        strip = strips.get(p)
        if strip is None:
            strip = strips[p] = draw_pair(layout.pairs[p], style)
        img.paste(strip, (0, y))
        y += layout.pairs[p].height
    img.putpalette(palette(style))
    return img


def encode(img: Image.Image, fmt: ImageFormat = "png", *, compress_level: int = 1) -> bytes:
    """Lossless bytes of a shot; deterministic (no metadata chunks, no timestamps)."""
    if fmt == "png" and img.mode == "RGB":  # colour (emoji) shots: Up filter + ISA-L, ~1/3 of Pillow's time
        import numpy as np

        from vismem.core.png import rgb_png

        return rgb_png(np.asarray(img), compress_level)
    buf = io.BytesIO()
    if fmt == "png":
        img.save(buf, "PNG", compress_level=compress_level)
    elif fmt == "webp":
        img.save(buf, "WEBP", lossless=True, quality=100, method=4, exact=True)
    else:
        raise ValueError(f"unknown image format {fmt!r}")
    return buf.getvalue()


class SessionPainter:
    """Draws one session's shots, each piece once: the header band and every turn-pair strip
    are drawn on first use and (PNG) compressed on first use; shots reuse them.

    ``shot`` returns ``(bytes, draw_ms, encode_ms)``. PNG shots are spliced from the pieces'
    deflate segments (``vismem.memory.dialogue.png``); WebP shots are composed then encoded.
    """

    def __init__(self, layout: SessionLayout, style: Style, fmt: ImageFormat = "png",
                 compress_level: int = SHOT_LEVEL) -> None:
        self.layout, self.style, self.fmt, self.level = layout, style, fmt, compress_level
        self._strips: dict[int, Image.Image] = {}
        self._emoji: dict[int, list[Placement]] = {}
        self._blocks: dict[int, Any] = {}
        self._header: Image.Image | None = None
        self._header_block: Any = None

    def _strip(self, p: int) -> Image.Image:
        s = self._strips.get(p)
        if s is None:
            placed: list[Placement] = []
            s = self._strips[p] = draw_pair(self.layout.pairs[p], self.style, placed)
            if placed:
                self._emoji[p] = placed
        return s

    def _colour_shot(self, start: int, end: int, height: int) -> tuple[bytes, float, float]:
        """A shot holding emoji: composed, turned RGB, glyphs pasted in colour, then encoded."""
        t0 = time.perf_counter()
        style = self.style
        img = compose(self.layout, start, end, height, style, self._strips,
                      self._head() if self.layout.header else None).convert("RGB")
        y = (style.header_height if self.layout.header else 0) + style.chat_pad_top
        for p in range(start, end):
            paste_emoji(img, self._emoji.get(p, []), y, style)
            y += self.layout.pairs[p].height
        t1 = time.perf_counter()
        data = encode(img, self.fmt, compress_level=self.level)
        return data, (t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3

    def _head(self) -> Image.Image:
        if self._header is None:
            self._header = draw_header(self.layout, self.style)
        return self._header

    def shot(self, start: int, end: int, height: int) -> tuple[bytes, float, float]:
        t0 = time.perf_counter()
        style = self.style
        for p in range(start, end):  # strips first: drawing them finds their emoji
            self._strip(p)
        pre_ms = (time.perf_counter() - t0) * 1e3
        if any(p in self._emoji for p in range(start, end)):
            data, d_ms, e_ms = self._colour_shot(start, end, height)
            return data, pre_ms + d_ms, e_ms
        if self.fmt != "png":
            img = compose(self.layout, start, end, height, style, self._strips,
                          self._head() if self.layout.header else None)
            t1 = time.perf_counter()
            data = encode(img, self.fmt, compress_level=self.level)
            return data, (t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3
        draw_s = enc_s = 0.0
        blocks = []
        if self.layout.header:
            if self._header_block is None:
                t1 = time.perf_counter()
                img = self._head()
                t2 = time.perf_counter()
                self._header_block = rows_block(img, self.level)
                draw_s += t2 - t1
                enc_s += time.perf_counter() - t2
            blocks.append(self._header_block)
        canvas = _ramp_start(CANVAS)
        if style.chat_pad_top:
            blocks.append(fill_block(style.width, style.chat_pad_top, canvas, self.level))
        for p in range(start, end):
            b = self._blocks.get(p)
            if b is None:
                t1 = time.perf_counter()
                img = self._strip(p)
                t2 = time.perf_counter()
                b = self._blocks[p] = rows_block(img, self.level)
                draw_s += t2 - t1
                enc_s += time.perf_counter() - t2
            blocks.append(b)
        rest = height - sum(b.rows for b in blocks)
        if rest < 0:  # the last strip's trailing pair gap is taller than the bottom padding
            raise ValueError("style.chat_pad_bottom must be >= style.pair_gap")
        if rest:
            blocks.append(fill_block(style.width, rest, canvas, self.level))
        t3 = time.perf_counter()
        data = assemble(style.width, palette(style), blocks)
        enc_s += time.perf_counter() - t3
        return data, pre_ms + draw_s * 1e3, enc_s * 1e3
