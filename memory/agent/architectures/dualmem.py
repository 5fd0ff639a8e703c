"""DualMem: a visual channel (image embeddings) and a verbal channel (caption embeddings).

Official: ``DualBank(siglip2, sbert, verbal_mode="vlm_caption")`` with ``HybridNormRetriever``
(min-max fusion), ``VisualRetriever`` (``-vis``) or ``TextRetriever`` (``-verb``), and
``ImageTextInject`` / ``ImageOnlyInject`` / ``CaptionOnlyInject`` (``systems/registry.py``,
``memory/dual_bank.py``, ``retrieval/hybrid_retriever.py``).

Retrieval, for query q over the bank:

* ``v_i = cos(visual_text(q), image_i)`` and ``t_i = cos(sbert(q), caption_i)``, ``-inf``
  where the entry has no image / no caption;
* ``hybrid``: ``alpha * minmax(v) + (1 - alpha) * minmax(t)`` (missing → 0, zero span → 0.5);
* ``visual``: raw ``v``; ``verbal``: raw ``t`` (token-overlap fallback when no entry has a
  caption), as the official single-channel retrievers — *not* alpha = 1 / 0 of the hybrid.

Only the channels a configuration reads are computed (the official bank always fills both; an
unread channel cannot change a ranking or an injected string).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec
from vismem.memory.agent.base import ARCHITECTURES, ArchitectureBase
from vismem.memory.agent.captioner import PAPER_CAPTIONER
from vismem.memory.agent.features import FeatureSource, FeatureSpec, caption_feature, content_id, embedder_feature
from vismem.memory.agent.scoring import VectorChannel, hybrid_scores, token_overlap, tokens
from vismem.memory.agent.types import MemoryItem, Observation, Query


class DualConfig(Frozen):
    """One DualMem configuration (headline: hybrid, alpha 0.75, image + caption)."""

    visual_encoder: ComponentSpec = Field(
        ComponentSpec(name="siglip2-base"),
        description="Image-text encoder of the visual channel (serve embedder spec: siglip2-base, clip-vit-b32, tiny-siglip2, pocket-clip).")
    text_encoder: ComponentSpec = Field(ComponentSpec(name="minilm"), description="Sentence-BERT encoder of the verbal channel.")
    captioner: ComponentSpec = Field(ComponentSpec.model_validate(PAPER_CAPTIONER),
                                     description="Captioner backend whose caption the verbal channel stores.")
    retrieval: Literal["hybrid", "visual", "verbal"] = Field(
        "hybrid", description="hybrid (min-max fusion), visual (VisualRetriever), verbal (TextRetriever over captions).")
    alpha: float = Field(0.75, ge=0.0, le=1.0, description="Weight of the visual channel in the hybrid score.")
    inject: Literal["image_text", "image", "caption"] = Field(
        "image_text", description="Injector: image_text (image + caption), image (raw image), caption (caption only).")


@ARCHITECTURES.register("dual")
class DualMem(ArchitectureBase):
    """The dual-channel bank and its retrieval / injection ablations."""

    family = "dual"
    Config = DualConfig

    @property
    def _uses_visual(self) -> bool:
        return self.config.retrieval in ("hybrid", "visual")

    @property
    def _uses_verbal(self) -> bool:
        return self.config.retrieval in ("hybrid", "verbal")

    @property
    def _uses_caption(self) -> bool:
        return self._uses_verbal or self.config.inject in ("image_text", "caption")

    def _components(self) -> dict[str, FeatureSpec]:
        out: dict[str, FeatureSpec] = {}
        if self._uses_visual:
            out["visual"] = embedder_feature("image_embedding", self.config.visual_encoder)
        if self._uses_verbal:
            out["text"] = embedder_feature("text_embedding", self.config.text_encoder)
        if self._uses_caption:
            out["captioner"] = caption_feature(self.config.captioner, "caption")
        return out

    def _reset(self) -> None:
        self._visual = VectorChannel()
        self._text = VectorChannel()
        self._tokens: list[frozenset[str]] = []

    def _caption(self, obs: Observation, features: FeatureSource) -> str:
        # The official replay captions only visits with an image; the bank stores `caption or ""`.
        if not (self._uses_caption and obs.image_key):
            return ""
        return features.caption(obs.image_key, obs.url_hash, self._specs["captioner"]) or ""

    def documents(self, obs: Observation, features: FeatureSource) -> list[tuple[FeatureSpec, str]]:
        cap = self._caption(obs, features) if self._uses_verbal else ""
        return [(self._specs["text"], cap)] if cap else []

    def _ingest(self, obs: Observation) -> MemoryItem:
        f = self._f
        if self._uses_visual:
            vec = f.image_embedding(obs.image_key, self._specs["visual"]) if obs.image_key else None
            self._visual.append(content_id(obs.image_key) if obs.image_key else None, vec)
        cap = self._caption(obs, f)
        if self._uses_verbal:
            self._text.append(cap, f.text_embedding(cap, self._specs["text"]) if cap else None)
            self._tokens.append(tokens(cap or obs.encode_text))
        return self._item(obs, caption=cap)

    def _scores(self, query: Query) -> np.ndarray:
        f = self._f
        mode = self.config.retrieval
        if mode == "verbal" and not self._text.any_present:
            return np.array([token_overlap(query.text, t) for t in self._tokens], dtype=np.float64)
        v = self._visual.scores(f.query_embedding(query.text, self._specs["visual"])) if self._uses_visual else None
        t = self._text.scores(f.query_embedding(query.text, self._specs["text"])) if self._uses_verbal else None
        self.last_channels = {k: x for k, x in (("visual", v), ("verbal", t)) if x is not None}
        if mode == "visual":
            return v
        if mode == "verbal":
            return t
        return hybrid_scores(v, t, self.config.alpha)
