"""The memory contract's data: what replay feeds an architecture, what it is asked, what it returns.

A leaf: the architecture base and registry (``base``), replay, the probe hook and the injectors
all import their types from here, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from vismem.agents.memory import MemoryContext
    from vismem.memory.agent.features import FeatureSpec

#: The official probe query (``f2_session_runner.py:342-343``).
PROBE_QUERY = "product with {cue} CURRENT: {url}"


def entry_url(slug: str) -> str:
    """``injection/base.entry_url``: the page a memory entry stands for."""
    if slug.startswith("col_"):
        return f"/collection/{slug[4:]}"
    if slug.startswith("cat_"):
        return f"/category/{slug[4:]}"
    if slug in ("", "blank") or slug.startswith("page_"):
        return ""
    return f"/product/{slug}"


@dataclass(frozen=True)
class Observation:
    """One product-page visit: the page a step *started* on, with the image the agent saw.

    ``category`` is the product's own category slug (``item`` when the hash is not in the
    catalogue, as the official registry lookup falls back); ``position`` is the visit's index in
    its chain's stream of visits (all sessions, repeats included).
    """

    url: str
    url_hash: str
    category: str
    style: str | None
    j: int
    step: int
    image_key: str | None
    position: int
    backend: str | None = None
    seed: int | None = None

    @property
    def encode_text(self) -> str:
        """What every bank stores as the verbal text: ``"a " + cat.replace("_", " ")``."""
        return f"a {self.category.replace('_', ' ')}"


@dataclass(frozen=True)
class Query:
    """A retrieval query (the official ``RetrievalQuery.recall_text``; ``anchor_slug`` is
    always None in F2)."""

    text: str

    @classmethod
    def probe(cls, cue: str, url: str) -> "Query":
        """The probe step's query: ``product with {cue} CURRENT: {url}``."""
        return cls(PROBE_QUERY.format(cue=cue, url=url))


@dataclass(frozen=True)
class MemoryItem:
    """One bank entry (``MemoryEntry``): ``position`` is its 0-based encode order, ``session``
    the replay clock when it was encoded, ``score`` what retrieval gave it."""

    slug: str
    image_key: str | None
    encode_text: str
    caption: str | None
    session: int
    position: int
    score: float = 0.0

    @property
    def url(self) -> str:
        return entry_url(self.slug)


@runtime_checkable
class MemoryArchitecture(Protocol):
    """What replay, the probe hook and the pipelines see of an architecture."""

    name: str

    def reset(self) -> None: ...
    def set_session(self, j: int) -> None: ...
    def encode(self, obs: Observation) -> None: ...
    def retrieve(self, query: Query, k: int) -> list[MemoryItem]: ...
    def inject(self, items: list[MemoryItem]) -> MemoryContext: ...
    def channel_scores(self, items: list[MemoryItem]) -> list[dict[str, float | None]]: ...
    def required_features(self) -> list[FeatureSpec]: ...
    def describe(self) -> dict[str, Any]: ...
    def __contains__(self, slug: object) -> bool: ...
    def __len__(self) -> int: ...
