"""Upstream LongMemEval's ``flat-contriever`` dense baseline behind the DialogueMemory protocol.

As ``src/retrieval/run_retrieval.py`` runs it: keys (the same as ``flat-bm25``'s,
:func:`vismem.memory.dialogue.memories.lexical.keyed_units`) and the question are tokenised with
padding and truncation, encoded by Contriever, mean-pooled over the attention mask (no
normalisation), scored by the dot product -- computed by numpy on float32 as upstream's
(its document vectors are a numpy array, so numpy does its matmul; torch's differs in the last
bits and so in the order of near ties) -- and ranked by ``torch.argsort(descending=True)``;
documents go through the model in batches of 128. ``path`` is a local copy of
``facebook/contriever`` (weights are never fetched at run time); where it cannot run, the
``dense`` memory with the run's embedder stands in and is named so.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vismem.memory.dialogue.memories import MEMORIES, MemoryUnit
from vismem.memory.dialogue.memories.lexical import Granularity, check_granularity, keyed_units

#: Upstream's batch size for flat-contriever documents.
BATCH = 128


@MEMORIES.register("flat-contriever", accelerator=True)
class FlatContrieverMemory:
    """Args: ``path`` (a local ``facebook/contriever`` directory), ``granularity`` (session or
    turn), ``device`` (``auto``: CUDA when available). The run's embedders are not used."""

    modality = "text"

    def __init__(self, *, path: str, granularity: Granularity = "session", device: str = "auto",
                 label: str | None = None, text_embedder: Any = None, image_embedder: Any = None) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        check_granularity(granularity)  # a bad granularity fails here, before any work
        self.granularity = granularity
        self.name = label or f"flat-contriever:{granularity}"
        self.spec = {"name": "flat-contriever", "args": {"path": path, "granularity": granularity,
                                                         **({"label": label} if label else {})}}
        dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).to(dev).eval()
        self._units: dict[str, list[MemoryUnit]] = {}
        self._docs: dict[str, Any] = {}

    def encode(self, texts: list[str]) -> Any:
        """Mean-pooled Contriever vectors (a CPU tensor), ``BATCH`` texts a forward pass."""
        import torch

        out = []
        with torch.no_grad():
            for i in range(0, len(texts), BATCH):
                inputs = self.tokenizer(texts[i:i + BATCH], padding=True, truncation=True, return_tensors="pt")
                inputs = {k: v.to(self.model.device) for k, v in inputs.items()}
                hidden = self.model(**inputs)[0]
                mask = inputs["attention_mask"]
                hidden = hidden.masked_fill(~mask[..., None].bool(), 0.0)
                out.append((hidden.sum(dim=1) / mask.sum(dim=1)[..., None]).cpu())
        return torch.cat(out) if out else torch.zeros((0, 1))

    def ingest(self, conversation: Any) -> float:
        """Build the units and encode their keys; returns the seconds spent."""
        t0 = time.perf_counter()
        pairs = keyed_units(conversation, self.granularity)
        cid = conversation.conversation_id
        self._units[cid] = [u for _k, u in pairs]
        self._docs[cid] = self.encode([k for k, _u in pairs]).numpy()
        return time.perf_counter() - t0

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        return list(self._units.get(conversation_id, []))

    def scores(self, conversation_id: str, question: str) -> Any:
        """Every unit's dot-product score for the question (memory order), a tensor."""
        import torch

        return torch.from_numpy(np.matmul(self.encode([question]).numpy(), self._docs[conversation_id].T)).squeeze(0)

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        """The k best scores, in ``torch.argsort(descending=True)``'s order (upstream's)."""
        units = self._units.get(conversation_id, [])
        if not units:
            return []
        order = np.asarray(self.scores(conversation_id, question).argsort(descending=True))
        return [units[i] for i in order[:k]]
