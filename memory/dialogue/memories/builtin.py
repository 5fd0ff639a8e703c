"""Text RAG and MemShot behind the :class:`~memory.dialogue.memories.DialogueMemory` protocol.

The same units as the batch path (``vismem.memory.dialogue.session_units`` of the ``text-rag`` /
``memshot`` variant YAMLs), built in-process: what a user calls to put MemShot beside their own
memory system, and what the stage uses for ``memshot.memories`` entries.
"""

from __future__ import annotations

from typing import Any

from vismem.memory.dialogue.memories import MEMORIES, MemoryUnit
from vismem.memory.dialogue.memories.base import RetrievingMemory


def variant_units(conversation: Any, variant: Any) -> list[MemoryUnit]:
    """A conversation's units of ``variant`` as :class:`MemoryUnit` (shots carry their PNG)."""
    from vismem.memory.dialogue.render import conversation_units

    return [MemoryUnit(u.unit_id, u.conversation_id, u.session_index, u.dia_ids,
                       "image" if u.image is not None else "text", u.text, u.image)
            for u in conversation_units(conversation, variant)]


@MEMORIES.register("text-rag")
class TextRAGMemory(RetrievingMemory):
    """One LoCoMo-format text unit per session, retrieved with the text embedder."""

    name = "text-rag"
    modality = "text"

    def build_units(self, conversation: Any) -> list[MemoryUnit]:
        from vismem.memory.dialogue.variants import load_variant

        return variant_units(conversation, load_variant("text-rag"))


@MEMORIES.register("memshot")
class MemShotMemory(RetrievingMemory):
    """MemShot shots of a variant (default ``memshot``: 768 px, header, overlap 2), retrieved
    with the image embedder; a text variant (``no-render``) uses the text embedder."""

    name = "memshot"

    def __init__(self, *, variant: str = "memshot", **kw: Any) -> None:
        from vismem.memory.dialogue.variants import load_variant

        self.variant = load_variant(variant)
        self.modality = "image" if self.variant.is_image else "text"
        kw.setdefault("label", None if variant == "memshot" else f"memshot:{variant}")
        super().__init__(**kw)

    def build_units(self, conversation: Any) -> list[MemoryUnit]:
        return variant_units(conversation, self.variant)
