"""M2A-lite: the released local dual-layer memory (``baselines/external/m2a.py``, spec §1.13).

Each product's semantic text is ``"a chair " + caption`` (the captioner model's answer to M2A's
own one-sentence prompt, 80 tokens). For query q:

    score = 0.35·n(overlap(q, text)) + 0.25·n(BM25(q, text)) + 0.40·n(cos(visual_text(q), image))
    n(x) = x / max|x|    (max-abs scaling; 1 when all are 0); no image → cosine 0

(with no visual encoder: ``0.35/0.60`` and ``0.25/0.60`` of the first two, as the released
fallback when SigLIP fails to load). Injection is ``CaptionOnlyInject`` of the *F2 caption* (the
wrapper's captioner, official caption prompt), not M2A's own caption, and no image.

The code is followed where its docstrings say otherwise: the "dense" channel is token overlap
(not SBERT), the fusion is max-abs (not min-max), and BM25 and SigLIP are both used.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec
from vismem.memory.agent.base import ARCHITECTURES, ArchitectureBase
from vismem.memory.agent.captioner import PAPER_CAPTIONER
from vismem.memory.agent.features import FeatureSpec, caption_feature, content_id, embedder_feature
from vismem.memory.agent.scoring import BM25Index, VectorChannel, maxabs, tokens
from vismem.memory.agent.types import MemoryItem, Observation, Query

TEXT_W, BM25_W, VISUAL_W = 0.35, 0.25, 0.40


class M2AConfig(Frozen):
    """M2A-lite's settings."""

    visual_encoder: ComponentSpec | None = Field(
        ComponentSpec(name="siglip2-base"),
        description="Image-text encoder of the cross-modal channel (None: the two-channel fallback).")
    captioner: ComponentSpec = Field(ComponentSpec.model_validate(PAPER_CAPTIONER),
                                     description="Captioner backend: M2A's own caption and the injected F2 caption.")
    k1: float = Field(1.5, gt=0, description="BM25 k1.")
    b: float = Field(0.75, ge=0, le=1, description="BM25 b.")
    inject: Literal["caption", "image_text", "image", "text"] = Field("caption", description="Injector.")


@ARCHITECTURES.register("m2a")
class M2ALite(ArchitectureBase):
    """Token overlap ⊕ BM25 ⊕ visual cosine, max-abs fused."""

    family = "m2a"
    Config = M2AConfig

    def _components(self) -> dict[str, FeatureSpec]:
        out = {"captioner": caption_feature(self.config.captioner, "caption"),
               "m2a_captioner": caption_feature(self.config.captioner, "m2a")}
        if self.config.visual_encoder is not None:
            out["visual"] = embedder_feature("image_embedding", self.config.visual_encoder)
        return out

    def _reset(self) -> None:
        self._visual = VectorChannel()
        self._bm25 = BM25Index(self.config.k1, self.config.b)
        self._tokens: list[frozenset[str]] = []
        self.semantic_texts: list[str] = []

    def _ingest(self, obs: Observation) -> MemoryItem:
        f = self._f
        own = f.caption(obs.image_key, obs.url_hash, self._specs["m2a_captioner"]) or ""
        text = f"{obs.encode_text} {own}"
        self.semantic_texts.append(text)
        self._tokens.append(tokens(text))
        self._bm25.add(text)
        if "visual" in self._specs:
            vec = f.image_embedding(obs.image_key, self._specs["visual"]) if obs.image_key else None
            self._visual.append(content_id(obs.image_key) if obs.image_key else None, vec)
        # The wrapper's F2 caption (only for visits with an image), for injection.
        f2 = f.caption(obs.image_key, obs.url_hash, self._specs["captioner"]) if obs.image_key else None
        return self._item(obs, caption=f2)

    def _scores(self, query: Query) -> np.ndarray:
        q = tokens(query.text)
        overlap = np.array([len(q & t) for t in self._tokens], dtype=np.float64)
        bm25 = self._bm25.scores(query.text)
        if "visual" not in self._specs:
            w_t, w_b = TEXT_W / (TEXT_W + BM25_W), BM25_W / (TEXT_W + BM25_W)
            self.last_channels = {"overlap": overlap, "bm25": bm25}
            return w_t * maxabs(overlap) + w_b * maxabs(bm25)
        cos = self._visual.scores(self._f.query_embedding(query.text, self._specs["visual"])).astype(np.float64)
        cos[~np.isfinite(cos)] = 0.0
        self.last_channels = {"overlap": overlap, "bm25": bm25, "visual": cos}
        return TEXT_W * maxabs(overlap) + BM25_W * maxabs(bm25) + VISUAL_W * maxabs(cos)
