"""The shot renderer's peer: a straightforward single-process Pillow renderer written for the benchmark.

``memshot-render-locomo`` states its time as a ratio over this renderer's time per shot, measured
in the same run (issue 43), so the target holds on a machine with slower cores. It draws what
a MemShot shot shows with the obvious Pillow calls and nothing cached across words: each turn's
text wrapped word by word with ``ImageFont.getlength``, a ``rounded_rectangle`` bubble under the
speaker's name, ``ImageDraw.text`` per line, the session header band, turns packed greedily
into shots of at most the variant's height, each shot written by Pillow's own PNG encoder
(zlib level 1). It shares the variant's style (fonts, sizes, colours) and nothing of the
renderer's code, so the ratio measures the renderer's work (glyph caches, ISA-L deflate, packs,
two processes) against plain Pillow on the same dialogue.
"""

from __future__ import annotations

import io
import time
from typing import Any

from vismem.bench.harness import record

NAME = "memshot-render-locomo"
#: Sessions of conv-26 drawn by the peer: ~100 shots, ~2 s on the reference machine.
SESSIONS = 16


class NaiveRenderer:
    """Plain Pillow: fonts loaded once, everything else done per word, per line, per shot."""

    def __init__(self, variant: Any) -> None:
        from PIL import ImageFont

        self.style = s = variant.style
        self.max_height = variant.max_height or 10_000
        self.body = ImageFont.truetype(s.font_regular, s.body_size)
        self.italic = ImageFont.truetype(s.font_italic, s.body_size)
        self.name = ImageFont.truetype(s.font_bold, s.name_size)
        self.header = ImageFont.truetype(s.font_bold, s.header_size)

    def wrap(self, text: str, font: Any) -> list[str]:
        """Greedy word wrap to the bubble's inner width."""
        room = self.style.bubble_max - 2 * self.style.bubble_pad_x
        lines, line = [], ""
        for word in text.split():
            trial = f"{line} {word}" if line else word
            if line and font.getlength(trial) > room:
                lines.append(line)
                line = word
            else:
                line = trial
        return lines + ([line] if line else [])

    def message(self, turn: Any) -> tuple[list[str], list[str], int]:
        """A turn's body lines, caption lines and height (name, gap, bubble)."""
        s = self.style
        body = self.wrap(turn.text, self.body)
        caption = self.wrap(f"and shared {turn.image_caption}", self.italic) if turn.image_caption else []
        height = s.name_line + s.name_gap + 2 * s.bubble_pad_y + s.body_line * (len(body) + len(caption))
        return body, caption, height

    def session_shots(self, session: Any, speakers: tuple[str, ...]) -> list[bytes]:
        """Every shot of one session as PNG bytes."""
        s = self.style
        fixed = s.header_height + s.chat_pad_top + s.chat_pad_bottom
        shots, page, used = [], [], fixed
        for turn in session.turns:
            msg = self.message(turn)
            if page and used + msg[2] + s.message_gap > self.max_height:
                shots.append(self.draw(session, page, used, speakers))
                page, used = [], fixed
            page.append((turn, msg))
            used += msg[2] + s.message_gap
        if page:
            shots.append(self.draw(session, page, used, speakers))
        return shots

    def draw(self, session: Any, page: list[tuple[Any, Any]], height: int, speakers: tuple[str, ...]) -> bytes:
        """One shot: canvas, header band, then each message's name, bubble and lines."""
        from PIL import Image, ImageDraw

        s = self.style
        img = Image.new("RGB", (s.width, height), s.canvas)
        d = ImageDraw.Draw(img)
        d.rectangle((0, 0, s.width, s.header_height), fill=s.header_bg)
        d.text((s.margin_x, s.header_height // 2), f"Session {session.index} · {session.date_text}",
               font=self.header, fill=s.header_fg, anchor="lm")
        y = s.header_height + s.chat_pad_top
        for turn, (body, caption, h) in page:
            left = not speakers or turn.speaker == speakers[0]
            widths = [self.body.getlength(ln) for ln in body] + [self.italic.getlength(ln) for ln in caption]
            w = int(max(widths, default=0)) + 2 * s.bubble_pad_x
            x = s.margin_x if left else s.width - s.margin_x - w
            d.text((x, y), turn.speaker, font=self.name, fill=s.name_color)
            top = y + s.name_line + s.name_gap
            d.rounded_rectangle((x, top, x + w, y + h), radius=s.bubble_radius, fill=s.left_bg if left else s.right_bg)
            ty = top + s.bubble_pad_y
            for ln, font, fill in ([(ln, self.body, s.left_fg if left else s.right_fg) for ln in body]
                                   + [(ln, self.italic, s.left_caption if left else s.right_caption) for ln in caption]):
                d.text((x + s.bubble_pad_x, ty), ln, font=font, fill=fill)
                ty += s.body_line
            y += h + s.message_gap
        buf = io.BytesIO()
        img.save(buf, format="PNG", compress_level=1)
        return buf.getvalue()


def measure(conversation: Any, variant: Any, sessions: int = SESSIONS) -> dict[str, float]:
    """The peer over the first ``sessions`` sessions of ``conversation``: shots, wall, per shot."""
    r = NaiveRenderer(variant)
    todo = [s for s in conversation.sessions if s.turns][:sessions]
    r.session_shots(todo[0], conversation.speakers)  # Pillow's font and PNG code paths warmed
    t0 = time.perf_counter()
    shots = [b for s in todo for b in r.session_shots(s, conversation.speakers)]
    wall = time.perf_counter() - t0
    return {"shots": len(shots), "wall_s": wall, "ms_per_shot": wall * 1e3 / len(shots),
            "kb_per_shot": sum(map(len, shots)) / len(shots) / 1024}


def peer_records(conversation: Any, variant: Any) -> list[dict[str, Any]]:
    """The peer's records, under ``naive.`` in the render benchmark."""
    m = measure(conversation, variant)
    return [record(NAME, "naive.ms_per_shot", m["ms_per_shot"], "ms"),
            record(NAME, "naive.shots", m["shots"], "shots"),
            record(NAME, "naive.kb_per_shot", m["kb_per_shot"], "KiB")]
