"""Dialogue memory units: MemShot shots (Pillow renderer), their ablations, and Text RAG units.

Public API::

    from vismem.memory.dialogue import load_variant, list_variants, session_units, conversation_units
    units = conversation_units(conv, load_variant("memshot"))   # -> list[Unit]

The package's modules import each other directly (never this face), so it re-exports only the
entry points above.
"""

from __future__ import annotations

from vismem.memory.dialogue.render import Unit, conversation_units, plan_session, session_units
from vismem.memory.dialogue.text import session_text
from vismem.memory.dialogue.variants import Variant, list_variants, load_variant

__all__ = [
    "Unit", "Variant", "conversation_units", "list_variants", "load_variant", "plan_session", "session_text",
    "session_units",
]
