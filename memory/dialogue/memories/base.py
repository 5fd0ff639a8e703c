"""The shared half of the built-in memories: embed the units once, rank by cosine per question.

A subclass says how a conversation becomes units (:meth:`RetrievingMemory.build_units`); this
base embeds them at ingest — text units with ``embed_texts``; shots with ``embed_images``, or,
for a pixel reader (``ocr-minilm``), its OCR text with ``embed_ocr_texts`` — and answers
``retrieve`` with ``embed_queries`` and a stable cosine top-k. Ingest time covers building and
embedding the units (the paper's memory-construction latency); queries are not part of it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vismem.memory.dialogue.memories import MemoryUnit


class RetrievingMemory:
    """Units per conversation + one embedder; subclasses implement :meth:`build_units`."""

    name = "memory"
    modality = "text"  # which embedder the units need: "text" or "image"

    def __init__(self, *, text_embedder: Any = None, image_embedder: Any = None, label: str | None = None) -> None:
        spec = text_embedder if self.modality == "text" else image_embedder
        if spec is None:
            from vismem.core.errors import ConfigError

            raise ConfigError(f"memory {self.name!r} needs an {self.modality}_embedder "
                              "(the memshot stage passes memshot.text_embedder / memshot.image_embedder)")
        from vismem.serve.build import build_embedder

        self.embedder = build_embedder(spec) if isinstance(spec, (dict, str)) else spec
        if label:
            self.name = label
        self._units: dict[str, list[MemoryUnit]] = {}
        self._vecs: dict[str, np.ndarray] = {}
        self._read: dict[str, list[str]] = {}  # a pixel reader's OCR text per unit, per conversation
        self._last_read: list[str] = []

    def build_units(self, conversation: Any) -> list[MemoryUnit]:
        raise NotImplementedError

    def _embed_units(self, units: list[MemoryUnit]) -> np.ndarray:
        from vismem.serve.embed import l2_normalise

        if not units:
            return np.zeros((0, 1), np.float32)
        if self.modality == "text":
            return l2_normalise(self.embedder.embed_texts([u.text for u in units]))
        images = [u.image for u in units]
        if hasattr(self.embedder, "read_images"):  # pixel reader: read, then embed the text
            self._last_read = self._read_images(images)
            return l2_normalise(self.embedder.embed_ocr_texts(self._last_read))
        return l2_normalise(self.embedder.embed_images(images))

    def _read_images(self, images: list[Any]) -> list[str]:
        """A pixel reader's text of each shot, a shot at a time under a progress line (issue 43:
        reading a conversation's shots takes ~1 s each on a CPU; the stage was silent meanwhile)."""
        from vismem.core.progress import track

        out: list[str] = []
        for i in track(range(len(images)), f"{self.name}: reading its shots", total=len(images)):
            try:
                out += self.embedder.read_images([images[i]])
            except ValueError as err:  # the reader names index 0 of the one it was given
                raise ValueError(f"shot {i} of {len(images)}: {err}") from err
        return out

    def ingest(self, conversation: Any) -> float:
        t0 = time.perf_counter()
        units = self.build_units(conversation)
        self._last_read = []
        self._units[conversation.conversation_id] = units
        self._vecs[conversation.conversation_id] = self._embed_units(units)
        self._read[conversation.conversation_id] = list(self._last_read)
        return time.perf_counter() - t0

    def ocr_texts(self, conversation_id: str) -> list[str]:
        """What a pixel reader read from each unit's shot at ingest (in :meth:`units` order);
        empty when the embedder reads no pixels as text. With each unit's ``text`` (the words
        its shot draws) this is the memory's read rate."""
        return list(self._read.get(conversation_id, []))

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        return list(self._units.get(conversation_id, []))

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        from vismem.serve.embed import embed_queries, l2_normalise

        units = self._units.get(conversation_id, [])
        if not units:
            return []
        q = l2_normalise(embed_queries(self.embedder, [question]))[0]
        order = np.argsort(-(self._vecs[conversation_id] @ q), kind="stable")[:k]
        return [units[i] for i in order]
