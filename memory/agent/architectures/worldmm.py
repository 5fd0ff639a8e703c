"""WorldMM-lite: tri-modular memory (episodic / semantic / visual texts) with a keyword router
and multi-grain token-overlap scoring (``baselines/external/worldmm.py``, spec §1.11).

Per product: the episodic text ``Session {s}, turn {n}: user viewed {slug}.`` (``n`` = entries
already banked), and the semantic and visual texts the captioner model writes from the image
(official prompts, 120 tokens). A query is scored per module as
``0.55·overlap(q, product) + 0.30·overlap(q, its session's texts) + 0.15·overlap(q, all texts)``.
Round 0 picks the module with the keyword router; later rounds ask a VLM for
``NEXT: <module-or-done>`` (at most 3 rounds), summing the module scores.

``routing: official`` reproduces the released behaviour: its reply regex looks for upper-case
``NEXT:`` in the *lower-cased* reply, so it never matches and every retrieval ranks on the one
keyword-routed module. Its single routing call per retrieval cannot change the ranking, so it is
not made (same ranking, no cost). ``routing: fixed`` parses the reply case-insensitively and
really runs the extra rounds with ``router`` (any VLM spec).

Injection is ``ImageTextInject`` without a caption (the wrapper passes none): the image and
``Caption: "a chair"``. None of the module texts reach the agent.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec
from vismem.memory.agent.base import ARCHITECTURES, ArchitectureBase
from vismem.memory.agent.captioner import PAPER_CAPTIONER
from vismem.memory.agent.features import FeatureSpec, caption_feature
from vismem.memory.agent.scoring import tokens
from vismem.memory.agent.types import MemoryItem, Observation, Query

MODULES = ("episodic", "semantic", "visual")
GRAIN_WEIGHTS = {"product": 0.55, "session": 0.30, "chain": 0.15}

#: The router's cue words (official ``ROUTER_CUES``).
ROUTER_CUES: dict[str, tuple[str, ...]] = {
    "episodic": ("earlier", "before", "first", "last", "previous", "session", "after", "now", "still",
                 "any more", "remember when"),
    "semantic": ("like", "similar", "style", "kind", "category", "type", "not", "no", "without", "instead",
                 "rather", "prefer"),
    "visual": ("color", "red", "blue", "green", "shape", "pattern", "wood", "metal", "fabric", "leather", "image",
               "looks", "looking"),
}
_CUE_RES = {m: [re.compile(rf"\b{re.escape(c)}\b") for c in cues] for m, cues in ROUTER_CUES.items()}
ROUTER_SYSTEM = "You are a memory-routing controller."


def route(query: str) -> str:
    """The keyword router: the module with most cue hits (ties: visual > semantic > episodic),
    ``semantic`` when nothing matches."""
    ql = query.lower()
    scores = {m: sum(1 for r in _CUE_RES[m] if r.search(ql)) for m in MODULES}
    best = max(scores.values())
    for m in ("visual", "semantic", "episodic"):
        if scores[m] == best and scores[m] > 0:
            return m
    return "semantic"


def routing_prompt(query: str, queried: list[str], ctx: list[str]) -> str:
    """The official round-r routing prompt (``{q!r}`` is Python's repr of the query)."""
    return (f"Retrieval task. Query: {query!r}\n"
            f"Modules already queried: {queried}\n"
            f"Top candidates so far: " + " | ".join(ctx[-3:]) + "\n"
            "Reply with the NEXT memory module to query from "
            "[episodic, semantic, visual], or 'done' if the evidence "
            "so far is sufficient.\nFormat: 'NEXT: <module-or-done>'")


class WorldMMConfig(Frozen):
    """WorldMM-lite's settings."""

    captioner: ComponentSpec = Field(ComponentSpec.model_validate(PAPER_CAPTIONER),
                                     description="Captioner backend writing the semantic and visual module texts.")
    routing: Literal["official", "fixed"] = Field(
        "official", description="official: one keyword-routed module (the released regex bug); fixed: real VLM rounds.")
    router: ComponentSpec | None = Field(None, description="VLM spec answering 'NEXT: <module>' (routing fixed only).")
    max_rounds: int = Field(3, ge=1, description="Routing rounds, round 0 included.")
    inject: Literal["image_text", "image", "caption", "text"] = Field("image_text", description="Injector.")

    @model_validator(mode="after")
    def _router(self) -> "WorldMMConfig":
        if self.routing == "fixed" and self.router is None:
            raise ValueError("routing 'fixed' needs a router VLM spec")
        return self


@ARCHITECTURES.register("worldmm")
class WorldMMLite(ArchitectureBase):
    """WorldMM-lite over token sets kept per module, per session and per chain."""

    family = "worldmm"
    Config = WorldMMConfig

    def _components(self) -> dict[str, FeatureSpec]:
        return {"semantic_captioner": caption_feature(self.config.captioner, "worldmm-semantic"),
                "visual_captioner": caption_feature(self.config.captioner, "worldmm-visual")}

    def _other_components(self) -> dict[str, tuple[str, bool]]:
        if self.config.routing != "fixed":
            return {}
        from vismem.serve.registry import VLMS

        resolved = VLMS.resolve(self.config.router.raw(), field="router")
        return {"router": (self.config.router.key, VLMS.is_stand_in(resolved))}

    def _reset(self) -> None:
        self.texts: dict[str, list[str]] = {m: [] for m in MODULES}
        self._tok: dict[str, list[frozenset[str]]] = {m: [] for m in MODULES}
        self._sess_tok: dict[str, dict[int, set[str]]] = {m: {} for m in MODULES}
        self._chain_tok: dict[str, set[str]] = {m: set() for m in MODULES}
        self._sess: list[int] = []
        self._router_vlm: Any = None

    def _ingest(self, obs: Observation) -> MemoryItem:
        f = self._f
        texts = {
            "episodic": f"Session {self.session}, turn {len(self.items)}: user viewed {obs.url_hash}.",
            "semantic": f.caption(obs.image_key, obs.url_hash, self._specs["semantic_captioner"]) or "",
            "visual": f.caption(obs.image_key, obs.url_hash, self._specs["visual_captioner"]) or "",
        }
        for m, text in texts.items():
            tok = tokens(text)
            self.texts[m].append(text)
            self._tok[m].append(tok)
            self._sess_tok[m].setdefault(self.session, set()).update(tok)
            self._chain_tok[m].update(tok)
        self._sess.append(self.session)
        return self._item(obs, caption=None)

    def module_scores(self, query: str, module: str) -> np.ndarray:
        """The multi-grain score of every entry for one module (insertion order)."""
        q = tokens(query)
        w = GRAIN_WEIGHTS
        s2 = {s: len(q & t) for s, t in self._sess_tok[module].items()}
        s3 = len(q & self._chain_tok[module])
        return np.array([w["product"] * len(q & t) + w["session"] * s2[s] + w["chain"] * s3
                         for t, s in zip(self._tok[module], self._sess)], dtype=np.float64)

    def _next_module(self, query: str, queried: list[str], ctx: list[str]) -> str:
        from vismem.serve.build import build_vlm
        from vismem.serve.vlm import Message

        if self._router_vlm is None:
            self._router_vlm = build_vlm(self.config.router.raw())
        try:
            resp = self._router_vlm.chat([Message("system", ROUTER_SYSTEM),
                                          Message("user", routing_prompt(query, queried, ctx))],
                                         max_tokens=20, temperature=0.0).text
        except Exception:  # noqa: BLE001 - the official loop treats a failed call as "done"
            return "done"
        m = re.search(r"NEXT:\s*(\w+)", resp or "", re.IGNORECASE)
        return m.group(1).lower() if m else "done"

    def _scores(self, query: Query) -> np.ndarray:
        q = query.text
        if self.config.routing == "official":
            module = route(q)
            scores = self.module_scores(q, module)
            self.last_channels = {module: scores}
            return scores
        queried: list[str] = []
        ctx: list[str] = []
        combined = np.zeros(len(self.items), dtype=np.float64)
        for r in range(self.config.max_rounds):
            module = route(q) if r == 0 else self._next_module(q, queried, ctx)
            if module == "done" or module in queried or module not in MODULES:
                break
            queried.append(module)
            ms = self.module_scores(q, module)
            self.last_channels[module] = ms
            combined += ms
            top3 = np.argsort(-ms, kind="stable")[:3]
            ctx.append(f"[{module}] " + ", ".join(f"{self.items[i].slug}={ms[i]:.1f}" for i in top3))
        return combined
