"""Dialogue memory units: MemShot shots (Pillow renderer), their ablations, and Text RAG units.

Public API::

    from vismem.memory.dialogue import load_variant, list_variants, session_units, conversation_units
    units = conversation_units(conv, load_variant("memshot"))   # -> list[Unit]
"""

from __future__ import annotations

from vismem.memory.dialogue.pack import Span, pack
from vismem.memory.dialogue.render import Unit, conversation_units, plan_session, session_units
from vismem.memory.dialogue.style import Style
from vismem.memory.dialogue.text import session_text, turn_line, unit_text
from vismem.memory.dialogue.variants import Variant, list_variants, load_variant

__all__ = [
    "Span", "Style", "Unit", "Variant", "conversation_units", "list_variants", "load_variant", "pack",
    "plan_session", "session_text", "session_units", "turn_line", "unit_text",
]
