"""Layout of a session without drawing: wrapping, measuring, turn-pairs and their heights.

Layout is separate from drawing so units can be computed (and the "w/o Rendering" variant
produced) without touching pixels. Text is measured word by word (``font.getlength``'s
figures, from cached glyph advances: :mod:`vismem.memory.dialogue.glyphs`) and cached per process:
LoCoMo's vocabulary is small, so after the first sessions nearly every word
width is a dictionary hit. Drawing uses the same per-word advances, so what is measured is
exactly what is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from PIL import ImageFont

from vismem.env.dialogue.model import Conversation, Session, Turn
from vismem.memory.dialogue.glyphs import Glyphs
from vismem.memory.dialogue.style import Style


#: How a word is drawn: ``(core mask, dx, dy, advance, emoji runs or None)`` -- the mask of the
#: whole word (emoji as the font's box), its offset from the pen, the width the layout measured,
#: and the word's text/emoji runs when it holds colour emoji (:meth:`Font.emoji_runs`).
Stamp = tuple[Any, int, int, float, "list[tuple[str, bool]] | None"]


class Font:
    """A FreeType font at one size, with per-word width and glyph-mask caches (per process).

    With ``emoji_font``, characters this font lacks but the emoji font has are measured as
    ``emoji_size`` squares (:mod:`vismem.memory.dialogue.emoji`); ``draw`` stamps them in colour.
    With ``fallback`` (a font file, e.g. the style's CJK font), other characters this font lacks
    but the fallback has are drawn from the fallback (:class:`Glyphs`); a missing file leaves
    them as this font's box.
    """

    def __init__(self, path: str, size: int, emoji_font: str | None = None, emoji_size: int = 0,
                 fallback: str | None = None) -> None:
        # BASIC layout: no dependence on the optional libraqm, same bytes on every machine.
        self.font = ImageFont.truetype(path, size, layout_engine=ImageFont.Layout.BASIC)
        self.path, self.size = path, size
        self.emoji_font, self.emoji_size = emoji_font, emoji_size
        self.space = self.font.getlength(" ")
        #: glyph and kerning caches: word advances and masks without rasterising each word
        self.glyphs = Glyphs(self.font, *_fallback(path, size, fallback))
        self._widths: dict[str, float] = {}
        #: word -> its :data:`Stamp`; read directly by the drawing loop (one lookup per word).
        self.stamps: dict[str, Stamp] = {}

    def emoji_runs(self, word: str) -> list[tuple[str, bool]] | None:
        """``word``'s text/emoji runs when it holds an emoji this font draws in colour, else None."""
        if self.emoji_font is None or word.isascii():
            return None
        from vismem.memory.dialogue.emoji import has_emoji, runs

        return runs(word, self.path, self.emoji_font) if has_emoji(word, self.path, self.emoji_font) else None

    def width(self, word: str) -> float:
        w = self._widths.get(word)
        if w is None:
            if word.isspace():  # an indent token (wrap_measured): with the space after it, len(word) spaces
                w = self._widths[word] = self.space * (len(word) - 1)
                return w
            parts = self.emoji_runs(word)
            if parts is None:
                w = self.glyphs.length(word)
            else:
                from vismem.memory.dialogue.emoji import advance, glyphs

                w = sum(len(glyphs(r)) * advance(self.emoji_size) if e else self.glyphs.length(r)
                        for r, e in parts)
            self._widths[word] = w
        return w

    def stamp(self, word: str) -> Stamp:
        """A word's :data:`Stamp`, rendered once per process and reused for every shot."""
        s = self.stamps.get(word)
        if s is None:
            if len(self.stamps) > 200_000:  # bound memory on huge corpora
                self.stamps.clear()
            mask, dx, dy = self.glyphs.mask(word)
            s = self.stamps[word] = (mask, dx, dy, self.width(word), self.emoji_runs(word))
        return s


def _fallback(path: str, size: int, fallback: str | None) -> tuple[Any, Any]:
    """The fallback font at ``size`` and the rule choosing it for a character (None, None without one)."""
    from pathlib import Path

    if not fallback or not Path(fallback).is_file():
        return None, None
    from vismem.memory.dialogue.emoji import codepoints

    own, other = codepoints(path), codepoints(fallback)
    fb = ImageFont.truetype(fallback, size, layout_engine=ImageFont.Layout.BASIC)
    return fb, lambda ch: ord(ch) not in own and ord(ch) in other


@lru_cache(maxsize=64)
def get_font(path: str, size: int, emoji_font: str | None = None, emoji_size: int = 0,
             fallback: str | None = None) -> Font:
    return Font(path, size, emoji_font, emoji_size, fallback)


def body_fonts(style: Style) -> tuple[Font, Font]:
    """The message fonts (regular body, italic captions), both drawing emoji in colour and
    falling back to the style's CJK font."""
    return (get_font(style.font_regular, style.body_size, style.font_emoji, style.emoji_size, style.font_cjk),
            get_font(style.font_italic, style.body_size, style.font_emoji, style.emoji_size, style.font_cjk))


Line = tuple[str, ...]  # the words of one wrapped line


def wrap_measured(text: str, font: Font, max_width: float) -> tuple[list[Line], float]:
    """Greedy word wrap, and the widest line's :func:`line_width` measured in the same pass.

    Paragraphs (newlines) are kept, runs of blank lines collapse to one, and a word wider than
    a line is broken between characters. A paragraph indented like code -- a leading tab or at
    least two leading spaces (a tab counts four) -- keeps its indentation: its lines start with
    an indent token of that many spaces (:meth:`Font.width`), wrapped lines too. A single
    leading space (a typo in prose: LoCoMo has 81) is dropped as before."""
    lines: list[Line] = []
    widest = 0.0
    blank = False
    space = font.space
    known = font._widths  # one dict lookup per word; font.width fills it on a miss

    def end(cur: list[str], ws: list[float]) -> None:
        nonlocal widest
        lines.append(tuple(cur))
        widest = max(widest, sum(ws) + space * (len(ws) - 1))  # exactly line_width's sum

    for para in text.replace("\t", "    ").split("\n"):
        words = para.split()
        if not words:
            if lines and not blank:
                lines.append(())
                blank = True
            continue
        blank = False
        indent = _indent(para, font, max_width)
        head = [indent] if indent else []  # what every line of this paragraph starts with
        head_w = [font.width(indent)] if indent else []
        lead = head_w[0] + space if indent else 0.0
        cur, ws = list(head), list(head_w)
        cur_w = sum(head_w, 0.0)
        for w in words:
            ww = known.get(w)
            if ww is None:
                ww = font.width(w)
            if ww > max_width - lead:  # break an over-long token (URLs, code) into chunks
                for chunk in _break_word(w, font, max_width - lead):
                    cw = font.width(chunk)
                    if len(cur) > len(head) and cur_w + space + cw > max_width:
                        end(cur, ws)
                        cur, ws, cur_w = list(head), list(head_w), sum(head_w, 0.0)
                    cur_w = cur_w + space + cw if cur else cw
                    cur.append(chunk)
                    ws.append(cw)
                continue
            if len(cur) > len(head) and cur_w + space + ww > max_width:
                end(cur, ws)
                cur, ws, cur_w = [*head, w], [*head_w, ww], (lead + ww if indent else ww)
            else:
                cur_w = cur_w + space + ww if cur else ww
                cur.append(w)
                ws.append(ww)
        if cur:
            end(cur, ws)
    while lines and not lines[-1]:
        lines.pop()
    return lines or [()], widest


def _indent(para: str, font: Font, max_width: float) -> str:
    """The indent token of a code-like paragraph (tabs already expanded), or ``""``."""
    n = len(para) - len(para.lstrip(" "))
    if n < 2:
        return ""
    # never more than half a line, so the words after it still fit
    return " " * max(1, min(n, int(max_width / 2 / font.space)))


def _break_word(word: str, font: Font, max_width: float) -> list[str]:
    out, start = [], 0
    for i in range(1, len(word) + 1):
        if font.glyphs.length(word[start:i]) > max_width and i - 1 > start:
            out.append(word[start:i - 1])
            start = i - 1
    out.append(word[start:])
    return out


def line_width(line: Line, font: Font) -> float:
    if not line:
        return 0.0
    return sum(font.width(w) for w in line) + font.space * (len(line) - 1)


@dataclass(frozen=True, slots=True)
class MessageLayout:
    """One turn's block: the speaker name above a bubble of wrapped text (+ caption lines)."""

    dia_id: str
    side: int  # 0 = left speaker, 1 = right speaker
    name: str
    lines: tuple[Line, ...]
    caption_lines: tuple[Line, ...]
    bubble_w: int
    bubble_h: int
    height: int  # name + gap + bubble
    partial: bool = False  # a piece of a turn too tall for one shot (:func:`split_pair`)


@dataclass(frozen=True, slots=True)
class PairLayout:
    """A turn-pair: messages stacked with gaps; ``height`` includes the trailing pair gap."""

    turns: tuple[int, ...]  # indices into the session's turns
    messages: tuple[MessageLayout, ...]
    height: int


@dataclass(frozen=True, slots=True)
class SessionLayout:
    session: Session
    pairs: tuple[PairLayout, ...]
    header: bool
    fixed_height: int  # header + paddings: unit height = fixed_height + sum(pair heights)


def turn_pairs(turns: tuple[Turn, ...] | list[Turn]) -> list[tuple[int, ...]]:
    """Group turns into turn-pairs: a run of turns by one speaker followed by the run of turns
    by the next speaker. Strictly alternating dialogue gives pairs of two; a trailing turn with
    no reply forms a pair of one; consecutive messages by one speaker stay in one pair."""
    pairs: list[tuple[int, ...]] = []
    i, n = 0, len(turns)
    while i < n:
        j = i
        while j < n and turns[j].speaker == turns[i].speaker:
            j += 1
        k = j
        while k < n and turns[k].speaker == turns[j].speaker:
            k += 1
        pairs.append(tuple(range(i, k)))
        i = k
    return pairs


def caption_text(turn: Turn) -> str | None:
    """The image line of a turn, worded as LoCoMo's official prompt does."""
    return f"and shared {turn.image_caption}" if turn.image_caption else None


def layout_message(turn: Turn, side: int, style: Style) -> MessageLayout:
    body, ital = body_fonts(style)
    inner = style.bubble_max - 2 * style.bubble_pad_x
    lines, text_w = wrap_measured(turn.text, body, inner)
    cap = caption_text(turn)
    if cap:
        cap_lines, cap_w = wrap_measured(cap, ital, inner)
        text_w = max(text_w, cap_w)
    else:
        cap_lines = []
    bubble_w = int(text_w + 0.999) + 2 * style.bubble_pad_x
    bubble_h = (len(lines) + len(cap_lines)) * style.body_line + 2 * style.bubble_pad_y
    height = style.name_line + style.name_gap + bubble_h
    return MessageLayout(dia_id=turn.dia_id, side=side, name=turn.speaker, lines=tuple(lines),
                         caption_lines=tuple(cap_lines), bubble_w=bubble_w, bubble_h=bubble_h, height=height)


def speaker_side(conv_speakers: tuple[str, str], speaker: str) -> int:
    """0 for the conversation's first (left) speaker, 1 for anyone else."""
    return 0 if speaker == conv_speakers[0] else 1


def layout_session(conv: Conversation, session: Session, style: Style, *, header: bool = True) -> SessionLayout:
    """Measure every message of a session and group them into turn-pairs."""
    pairs = []
    for idx in turn_pairs(session.turns):
        msgs = tuple(layout_message(session.turns[i], speaker_side(conv.speakers, session.turns[i].speaker), style)
                     for i in idx)
        h = sum(m.height for m in msgs) + style.message_gap * (len(msgs) - 1) + style.pair_gap
        pairs.append(PairLayout(turns=idx, messages=msgs, height=h))
    fixed = (style.header_height if header else 0) + style.chat_pad_top + style.chat_pad_bottom - style.pair_gap
    return SessionLayout(session=session, pairs=tuple(pairs), header=header, fixed_height=fixed)


def split_pair(pair: PairLayout, style: Style, room: int) -> list[PairLayout]:
    """A turn-pair too tall for any shot, cut into pieces of at most ``room`` px each (``room``: a
    shot's height less its header and paddings), packed like a long session: messages in order,
    whole lines only; a message that does not fit in the rest of a piece goes on in the next one
    under its speaker's name again (its bubble keeps the whole message's width)."""
    fixed = style.name_line + style.name_gap + 2 * style.bubble_pad_y  # a message's height without lines
    pieces: list[PairLayout] = []
    turns: list[int] = []
    msgs: list[MessageLayout] = []
    used = style.pair_gap
    for t, m in zip(pair.turns, pair.messages):
        rows = [(ln, False) for ln in m.lines] + [(ln, True) for ln in m.caption_lines]
        pos = 0
        while pos < len(rows):
            gap = style.message_gap if msgs else 0
            fit = (room - used - gap - fixed) // style.body_line
            if fit < 1 and msgs:  # not one more line here: start the next piece
                pieces.append(PairLayout(tuple(turns), tuple(msgs), used))
                turns, msgs, used = [], [], style.pair_gap
                continue
            take = rows[pos:pos + max(fit, 1)]
            if len(take) == len(rows):
                msg = m
            else:
                bubble_h = len(take) * style.body_line + 2 * style.bubble_pad_y
                msg = MessageLayout(m.dia_id, m.side, m.name, tuple(ln for ln, cap in take if not cap),
                                    tuple(ln for ln, cap in take if cap), m.bubble_w, bubble_h,
                                    style.name_line + style.name_gap + bubble_h, partial=True)
            turns.append(t)
            msgs.append(msg)
            used += gap + msg.height
            pos += len(take)
    if msgs:
        pieces.append(PairLayout(tuple(turns), tuple(msgs), used))
    return pieces
