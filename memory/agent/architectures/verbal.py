"""NoMemory and the verbal-only banks (TextOnly, Caption).

Official: ``_EphemeralVerbalBank`` + ``TextRetriever`` (NoMemory), ``VerbalBank(sbert,
mode="encode_text" | "vlm_caption")`` + ``TextRetriever`` + ``TextOnlyInject`` /
``CaptionOnlyInject`` (``systems/registry.py``, ``memory/verbal_bank.py``,
``retrieval/text_retriever.py``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from vismem.agents.memory import MemoryContext
from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec
from vismem.memory.agent.base import ARCHITECTURES, ArchitectureBase
from vismem.memory.agent.features import FeatureSource, FeatureSpec, caption_feature, embedder_feature
from vismem.memory.agent.inject import format_block
from vismem.memory.agent.scoring import VectorChannel, token_overlap, tokens
from vismem.memory.agent.types import MemoryItem, Observation, Query


class NoMemoryConfig(Frozen):
    """NoMemory takes no arguments."""


@ARCHITECTURES.register("no-memory")
class NoMemory(ArchitectureBase):
    """Encodes nothing, retrieves nothing: the block reads ``(no memory retrieved this step)``.

    As the official ephemeral bank, every visit is "encoded" and discarded, so the bank size is
    always 0 and replay never sees a product as already banked.
    """

    family = "no-memory"
    Config = NoMemoryConfig

    def _injector_name(self) -> str:
        return "text"  # it takes no arguments and recalls nothing; any injector would do

    def encode(self, obs: Observation) -> None:
        return None

    def retrieve(self, query: Query, k: int = 10) -> list[MemoryItem]:
        return []

    def inject(self, items: list[MemoryItem]) -> MemoryContext:
        text, _ = format_block([])
        return MemoryContext(text=text)


class VerbalConfig(Frozen):
    """TextOnly (``mode: encode_text``) or Caption (``mode: caption``)."""

    mode: Literal["encode_text", "caption"] = Field(
        ..., description="What the verbal channel stores: the encode text ('a chair') or the captioner's caption.")
    text_encoder: ComponentSpec = Field(ComponentSpec(name="minilm"),
                                        description="Sentence-BERT encoder (serve embedder spec; all-MiniLM-L6-v2).")
    captioner: ComponentSpec | None = Field(
        None, description="Captioner backend (mode caption only): a `vlm` captioner over any VLM spec, or `catalogue` (stand-in).")
    inject: Literal["text", "caption", "image", "image_text"] = Field(
        "text", description="Injector: text (TextOnlyInject), caption (CaptionOnlyInject), image, image_text.")

    @model_validator(mode="after")
    def _needs_captioner(self) -> "VerbalConfig":
        if self.mode == "caption" and self.captioner is None:
            raise ValueError("mode 'caption' needs a captioner")
        return self


@ARCHITECTURES.register("verbal")
class VerbalMemory(ArchitectureBase):
    """One SBERT channel over the stored text; raw cosine ranking, stable ties.

    ``TextRetriever``: an empty caption gets no embedding (scored ``-inf``); when *no* entry has
    one, ranking falls back to token overlap of the query with ``caption or encode_text``.
    """

    family = "verbal"
    Config = VerbalConfig

    def _components(self) -> dict[str, FeatureSpec]:
        out = {"text": embedder_feature("text_embedding", self.config.text_encoder)}
        if self.config.mode == "caption":
            out["captioner"] = caption_feature(self.config.captioner, "caption")
        return out

    def _reset(self) -> None:
        self._text = VectorChannel()
        self._tokens: list[frozenset[str]] = []

    def _stored_text(self, obs: Observation, features: FeatureSource) -> str:
        if self.config.mode == "encode_text":
            return obs.encode_text
        cap = features.caption(obs.image_key, obs.url_hash, self._specs["captioner"]) if obs.image_key else None
        return cap or ""

    def documents(self, obs: Observation, features: FeatureSource) -> list[tuple[FeatureSpec, str]]:
        text = self._stored_text(obs, features)
        return [(self._specs["text"], text)] if text else []

    def _ingest(self, obs: Observation) -> MemoryItem:
        f = self._f
        text = self._stored_text(obs, f)
        vec = f.text_embedding(text, self._specs["text"]) if text else None
        self._text.append(text, vec)
        self._tokens.append(tokens(text or obs.encode_text))
        return self._item(obs, caption=text)

    def _scores(self, query: Query) -> np.ndarray:
        if not self._text.any_present:
            return np.array([token_overlap(query.text, t) for t in self._tokens], dtype=np.float64)
        return self._text.scores(self._f.query_embedding(query.text, self._specs["text"]))
