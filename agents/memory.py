"""How a memory architecture meets the agent loop: the one protocol between them.

The loop asks its :class:`MemoryHook` for a :class:`MemoryContext` at every step; the context's
text goes into the step message's memory block and its images follow the observation image.
Encoding sessions run without a hook (the agent is memoryless); probe episodes use a hook built
over a memory bank (``vismem.memory.agent``), which this package never imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from vismem.agents.chains import SessionSpec


@dataclass(frozen=True)
class MemoryContext:
    """What a memory architecture injects into one step: a text block and its images (in order)."""

    text: str
    images: tuple[bytes, ...] = ()


class MemoryHook(Protocol):
    """The hook a memory architecture plugs into the loop (absent during encoding)."""

    def context(self, *, spec: "SessionSpec | None", step: int, url: str, subtask: str) -> MemoryContext: ...
