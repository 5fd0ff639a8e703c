"""MMA-lite: reliability-weighted text retrieval (``baselines/external/mma.py``, spec §1.12).

Each product stores ``"a chair " + caption`` (the caption the captioner model writes for MMA's
own one-sentence prompt, 80 tokens) embedded with Sentence-BERT. For query q:

    R = cos(entry, sbert(q)) · (α·S + β·T + γ·C),   α, β, γ = 0.4, 0.3, 0.3
    S = 1 (one source);  T = exp(−ln 2 · age / 5), age in sessions;
    C = max(0, cos(entry, centroid of the other entries)) (1 with a single entry)

ranked by R (stable); if the best R is exactly 0, by token overlap of q with
``"{encode_text} {caption}"`` instead.

The session clock (a deliberate fix): the released adapter only advances its clock in
``begin_session()``, which nothing calls, so every age is 0 and T ≡ 1 (the paper's numbers).
``session_clock: replay`` (default) dates each entry by the replayed session and measures age
against the session being probed; ``session_clock: official`` keeps T ≡ 1.

Injection, as the code (not the paper's README "text"): ``ImageTextInject`` without a caption,
i.e. the image and ``Caption: "a chair"``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec
from vismem.memory.agent.base import ARCHITECTURES, ArchitectureBase
from vismem.memory.agent.captioner import PAPER_CAPTIONER
from vismem.memory.agent.features import FeatureSource, FeatureSpec, caption_feature, embedder_feature
from vismem.memory.agent.scoring import VectorChannel, exp_decay, token_overlap, tokens
from vismem.memory.agent.types import MemoryItem, Observation, Query


class MMAConfig(Frozen):
    """MMA-lite's settings (defaults: the released adapter's constants)."""

    text_encoder: ComponentSpec = Field(ComponentSpec(name="minilm"), description="Sentence-BERT encoder.")
    captioner: ComponentSpec = Field(ComponentSpec.model_validate(PAPER_CAPTIONER),
                                     description="Captioner backend writing MMA's one-sentence caption.")
    session_clock: Literal["replay", "official"] = Field(
        "replay", description="replay: ages advance with the replayed sessions (fix); official: T ≡ 1 (released bug).")
    alpha: float = Field(0.4, description="Weight of source credibility S (constant 1).")
    beta: float = Field(0.3, description="Weight of temporal decay T.")
    gamma: float = Field(0.3, description="Weight of consensus C.")
    half_life: float = Field(5.0, gt=0, description="Half-life of T in sessions.")
    inject: Literal["image_text", "image", "caption", "text"] = Field("image_text", description="Injector.")


def _unit_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


@ARCHITECTURES.register("mma")
class MMALite(ArchitectureBase):
    """MMA-lite's R(m | q) over one Sentence-BERT channel."""

    family = "mma"
    Config = MMAConfig

    def _components(self) -> dict[str, FeatureSpec]:
        return {"text": embedder_feature("text_embedding", self.config.text_encoder),
                "captioner": caption_feature(self.config.captioner, "mma")}

    def _reset(self) -> None:
        self._text = VectorChannel()
        self._born: list[int] = []
        self._fallback_tokens: list[frozenset[str]] = []
        self._consensus: np.ndarray | None = None

    def _blob(self, obs: Observation, features: FeatureSource) -> tuple[str, str]:
        # Official: the caption call is made for every visit (without an image when there is none).
        cap = features.caption(obs.image_key, obs.url_hash, self._specs["captioner"]) or ""
        return cap, " ".join(x for x in (obs.encode_text, cap) if x)

    def documents(self, obs: Observation, features: FeatureSource) -> list[tuple[FeatureSpec, str]]:
        return [(self._specs["text"], self._blob(obs, features)[1])]

    def _ingest(self, obs: Observation) -> MemoryItem:
        cap, blob = self._blob(obs, self._f)
        self._text.append(blob, self._f.text_embedding(blob, self._specs["text"]))
        self._born.append(self.session if self.config.session_clock == "replay" else 0)
        self._fallback_tokens.append(tokens(f"{obs.encode_text} {cap}"))
        self._consensus = None
        return self._item(obs, caption=None)

    def consensus(self) -> np.ndarray:
        """C of every entry: cosine to the mean of the *other* entries (1 when alone), floored at 0."""
        if self._consensus is None:
            m = self._text.vectors().astype(np.float64)
            n = len(m)
            if n <= 1:
                self._consensus = np.ones(n)
            else:
                # The mean of the others points along (sum - self): same cosine, one pass.
                others = m.sum(axis=0, keepdims=True) - m
                self._consensus = np.maximum(0.0, np.sum(_unit_rows(m) * _unit_rows(others), axis=1))
        return self._consensus

    def temporal(self) -> np.ndarray:
        """T of every entry at the current session."""
        now = self.session if self.config.session_clock == "replay" else 0
        return np.array([exp_decay(now - b, self.config.half_life) for b in self._born])

    def _scores(self, query: Query) -> np.ndarray:
        cfg = self.config
        q = self._f.query_embedding(query.text, self._specs["text"]).astype(np.float64)
        qn = np.linalg.norm(q)
        m = self._text.vectors().astype(np.float64)
        rel = _unit_rows(m) @ (q / qn) if qn > 0 else np.zeros(len(m))
        r = rel * (cfg.alpha * 1.0 + cfg.beta * self.temporal() + cfg.gamma * self.consensus())
        self.last_channels = {"relevance": rel}
        if len(r) and float(np.max(r)) == 0.0:  # the best R is exactly 0: lexical re-rank
            return np.array([token_overlap(query.text, t) for t in self._fallback_tokens], dtype=np.float64)
        return r
