"""Dialogue memories behind one protocol: ingest a conversation, retrieve units for a question.

A :class:`DialogueMemory` is what Tables 1-2 compare: Text RAG, MemShot, the MemOCR-style
summarise-then-render baseline (``session-summary-shots``), and the external text-memory systems (LightMem, MemOS,
MemoryOS, EverMemOS) once an implementation is plugged in. Each one

1. **ingests** a conversation (``ingest(conv)`` → construction seconds, Table 1's Latency);
2. **retrieves** the top-k :class:`MemoryUnit` for a question (``retrieve``), which the
   answering VLM is shown (shots as images, text units as text);
3. lists every unit it built (``units``), each with the dia_ids it shows, so evidence
   recall@k is scored exactly as for the batch variants.

Memories are built by name from ``{name, args}`` specs (:data:`MEMORIES`, a
``vismem.core.registry.Registry``); the ``memshot`` stage evaluates ``memshot.memories`` beside its
batch variants. Built-ins: ``text-rag``, ``memshot`` (any shot variant), ``session-summary-shots``
(the MemOCR-style baseline; ``memocr`` is its old name), LongMemEval's retrieval baselines
``flat-bm25`` (old name ``bm25``) / ``flat-contriever`` as upstream runs them and ``dense`` (the
run's embedder, a stand-in) over sessions or turns (:mod:`vismem.memory.dialogue.memories.lexical`,
:mod:`vismem.memory.dialogue.memories.contriever`), ``mem0`` through mem0's own API
(:mod:`vismem.memory.dialogue.memories.mem0mem`), and the
external adapters ``lightmem`` / ``memos`` / ``memoryos`` / ``evermemos``
(:mod:`vismem.memory.dialogue.memories.external`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Protocol, runtime_checkable

from vismem.core.registry import ComponentSpec, Registry


@dataclass(frozen=True, slots=True)
class MemoryUnit:
    """One retrievable memory unit: what it shows (``dia_ids``) and its content."""

    unit_id: str
    conversation_id: str
    session_index: int
    dia_ids: tuple[str, ...]
    modality: Literal["text", "image"]
    text: str = ""  # the unit's text (text units), or what a shot shows, for inspection
    image: bytes | None = None  # encoded shot (image units)


@runtime_checkable
class DialogueMemory(Protocol):
    """A memory of long dialogues, as the evaluation sees it."""

    #: Row label in result tables (the ``variant`` column).
    name: str

    def ingest(self, conversation: Any) -> float:
        """Build the memory of one ``vismem.env.dialogue.Conversation``; returns wall seconds spent."""
        ...

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        """The ``k`` units most relevant to ``question`` (best first), within the conversation."""
        ...

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        """Every unit built for the conversation (in memory order)."""
        ...


#: The registry of dialogue memories; ``MEMORIES.build({"name": "memocr", "args": {...}})``.
MEMORIES: Registry[DialogueMemory] = Registry(
    "dialogue-memory", package="vismem.memory.dialogue.memories")


def build_memory(spec: ComponentSpec | Mapping[str, Any] | str, **injected: Any) -> DialogueMemory:
    """Build a memory from its spec; ``injected`` args (the run's embedder specs) fill what the
    spec leaves unset."""
    resolved = MEMORIES.resolve(spec, field="memshot.memories")
    args = {**{k: v for k, v in injected.items() if v is not None}, **resolved["args"]}
    return MEMORIES.build({"name": resolved["name"], "args": args})


__all__ = ["DialogueMemory", "MEMORIES", "MemoryUnit", "build_memory"]
