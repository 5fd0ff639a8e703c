"""Text memory units in LoCoMo's official format.

LoCoMo's evaluation code writes a session as ``DATE: {date}\\nCONVERSATION:\\n`` followed by one
line per turn, ``{speaker} said, "{text}"``, with `` and shared {blip_caption}`` appended for
turns that shared a photo. Text RAG uses one such unit per session; the "w/o Rendering" ablation
writes each MemShot unit (same turns, same session label and date as the shot's header) this way.
"""

from __future__ import annotations

from typing import Iterable

from vismem.env.dialogue.model import Session, Turn


def turn_line(turn: Turn) -> str:
    """``Caroline said, "..." and shared a photo of ...`` (no trailing newline)."""
    line = f'{turn.speaker} said, "{turn.text}"'
    if turn.image_caption:
        line += f" and shared {turn.image_caption}"
    return line


def session_text(session: Session) -> str:
    """One Text RAG unit: the whole session in LoCoMo's prompt format."""
    return "DATE: " + session.date_text + "\n" + "CONVERSATION:\n" + "".join(turn_line(t) + "\n" for t in session.turns)


def unit_text(session: Session, turns: Iterable[Turn], *, header: bool = True) -> str:
    """A MemShot unit as text: the shot's header (session label, date) then its turns."""
    body = "".join(turn_line(t) + "\n" for t in turns)
    if not header:
        return "CONVERSATION:\n" + body
    return f"SESSION: {session.label}\nDATE: {session.date_text}\nCONVERSATION:\n" + body
