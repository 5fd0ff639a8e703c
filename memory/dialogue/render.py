"""Sessions → memory units (shots or text), with per-phase timings.

``session_units`` is the one entry point the Ray job, the benchmark and the retrieval stage use:
it lays a session out, packs its turn-pairs into units (``pack``), and — for image variants —
draws and encodes each unit. Every unit records its session and the dia_ids it shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from vismem.env.dialogue.model import Conversation, Session, Turn
from vismem.memory.dialogue.draw import ImageFormat, SessionPainter
from vismem.memory.dialogue.layout import PairLayout, SessionLayout, layout_session, split_pair
from vismem.memory.dialogue.pack import GROW_LIMIT, Span, pack
from vismem.memory.dialogue.png import SHOT_LEVEL
from vismem.memory.dialogue.text import session_text, unit_text
from vismem.memory.dialogue.variants import Variant


@dataclass(frozen=True, slots=True)
class Unit:
    """One memory unit: what it shows, its size, its text form, and (shots) its encoded image."""

    conversation_id: str
    session_id: str
    session_index: int
    unit: int  # 0-based index within the session
    dia_ids: tuple[str, ...]
    pair_start: int
    pair_end: int  # exclusive
    overlap_pairs: int  # pairs repeated from the previous unit
    width: int
    height: int
    overflow: bool  # taller than max_height (LongMemEval single oversized pair)
    text: str  # LoCoMo-format text of exactly these turns (header included when the variant has one)
    image: bytes | None = None
    layout_ms: float = 0.0
    draw_ms: float = 0.0
    encode_ms: float = 0.0

    @property
    def unit_id(self) -> str:
        return f"{self.conversation_id}/{self.session_id}/u{self.unit:03d}"


def plan_session(conv: Conversation, session: Session, variant: Variant) -> tuple[SessionLayout, list[Span]]:
    """Layout and packing only (no pixels): what the "w/o Rendering" variant and tests need.

    Span heights are the heights of the shots as drawn. A variant that packs as if the header
    were shown but does not draw it (w/o Header, ``pack_header``) gets MemShot's spans, each
    shorter by the header band.
    """
    lay = layout_session(conv, session, variant.style, header=variant.header)
    band = variant.style.header_height if variant.packs_header and not variant.header else 0
    oversize = variant.oversize_for(conv.dataset)
    fixed = lay.fixed_height + band
    if variant.max_height is not None and oversize == "grow":
        lay = _split_tall_pairs(lay, variant, fixed)
    spans = pack([p.height for p in lay.pairs], fixed, variant.max_height,
                  overlap=variant.overlap_pairs, oversize=oversize,
                  where=f"{conv.source or conv.dataset}: {conv.conversation_id}/{session.session_id}")
    if band:
        spans = [replace(sp, height=sp.height - band) for sp in spans]
    return lay, spans


def _split_tall_pairs(lay: SessionLayout, variant: Variant, fixed: int) -> SessionLayout:
    """``lay`` with every pair that would grow a shot past ``GROW_LIMIT`` x ``max_height`` cut into
    pieces of at most ``max_height`` (the pieces are packed like pairs)."""
    assert variant.max_height is not None
    limit = GROW_LIMIT * variant.max_height
    if all(fixed + p.height <= limit for p in lay.pairs):
        return lay
    pairs: list[PairLayout] = []
    for p in lay.pairs:
        pairs += split_pair(p, variant.style, variant.max_height - fixed) if fixed + p.height > limit else [p]
    return replace(lay, pairs=tuple(pairs))


def _shown_turns(session: Session, lay: SessionLayout, sp: Span) -> list[Turn]:
    """The turns a unit shows, in order; a piece of a split turn as the text of its lines."""
    out = []
    for p in lay.pairs[sp.start:sp.end]:
        for i, m in zip(p.turns, p.messages):
            t = session.turns[i]
            if m.partial:
                t = replace(t, text="\n".join(" ".join(ln) for ln in m.lines),
                            image_caption=t.image_caption if m.caption_lines else None)
            out.append(t)
    return out


def session_units(conv: Conversation, session: Session, variant: Variant, *,
                  image_format: ImageFormat = "png", compress_level: int = SHOT_LEVEL) -> list[Unit]:
    """All units of one session for ``variant`` (images encoded when the variant draws)."""
    if not session.turns:
        return []
    if variant.kind == "session-text":
        t0 = time.perf_counter()
        text = session_text(session)
        return [Unit(conv.conversation_id, session.session_id, session.index, 0,
                     tuple(t.dia_id for t in session.turns), 0, 0, 0, 0, 0, False, text,
                     layout_ms=(time.perf_counter() - t0) * 1e3)]
    t0 = time.perf_counter()
    lay, spans = plan_session(conv, session, variant)
    layout_ms = (time.perf_counter() - t0) * 1e3 / len(spans)
    style = variant.style
    painter = SessionPainter(lay, style, image_format, compress_level) if variant.render else None
    units = []
    for u, sp in enumerate(spans):
        turns = _shown_turns(session, lay, sp)
        text = unit_text(session, turns, header=variant.header)
        image, draw_ms, enc_ms = None, 0.0, 0.0
        if painter is not None:
            image, draw_ms, enc_ms = painter.shot(sp.start, sp.end, sp.height)
        units.append(Unit(conv.conversation_id, session.session_id, session.index, u,
                          tuple(dict.fromkeys(t.dia_id for t in turns)), sp.start, sp.end, sp.overlap,
                          style.width, sp.height, sp.overflow, text, image,
                          layout_ms, draw_ms, enc_ms))
    return units


def conversation_units(conv: Conversation, variant: Variant, **kw) -> list[Unit]:
    """Units of every session of a conversation, in session order."""
    return [u for s in conv.sessions for u in session_units(conv, s, variant, **kw)]


def shot_units(conv: Conversation, variant: Variant, session: int | None = None, **kw) -> list[Unit]:
    """Units of one session (by its ``index``) or, with ``session=None``, of the whole conversation."""
    if session is None:
        return conversation_units(conv, variant, **kw)
    sess = next((s for s in conv.sessions if s.index == session), None)
    if sess is None:
        from vismem.core.errors import VismemError

        raise VismemError(f"{conv.conversation_id} has no session {session}")
    return session_units(conv, sess, variant, **kw)
