"""The probe loop's :class:`vismem.agents.memory.MemoryHook` over a memory architecture.

At every probe step (official ``dmvbench_live_runner``, spec §3.2 and §3.4): the query is
``product with {cue} CURRENT: {url}`` for the page the step starts on (path only), the
architecture retrieves 10, duplicates by product are dropped and the first 5 kept, and the
architecture's injector writes the memory block; its images follow the current page's image.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from vismem.agents.memory import MemoryContext
from vismem.memory.agent.types import MemoryArchitecture, MemoryItem, Query

if TYPE_CHECKING:
    from vismem.agents.chains import SessionSpec


#: Fetched from the architecture, then kept after de-duplication (official constants).
FETCH_K, KEEP_K = 10, 5


def recall(arch: MemoryArchitecture, query: Query, *, fetch_k: int = FETCH_K, keep_k: int = KEEP_K) -> list[MemoryItem]:
    """The official ``retrieve``: top ``fetch_k``, first occurrence of each product, ``keep_k`` of them."""
    seen: set[str] = set()
    out: list[MemoryItem] = []
    for item in arch.retrieve(query, fetch_k):
        if item.slug in seen:
            continue
        seen.add(item.slug)
        out.append(item)
        if len(out) >= keep_k:
            break
    return out


_LOCKS_GUARD = threading.Lock()


def recall_lock(arch: MemoryArchitecture) -> "threading.Lock":
    """The lock held while ``arch`` retrieves (one per architecture instance): a retrieval
    leaves per-channel scores on the architecture (``last_channels``) that the next one replaces."""
    with _LOCKS_GUARD:
        lock = arch.__dict__.get("_recall_lock")
        if lock is None:
            lock = arch.__dict__["_recall_lock"] = threading.Lock()
    return lock


def _path(url: str) -> str:
    # The official observation URL is site-relative with the query string stripped (``_rel``).
    if "://" in url:
        url = "/" + url.split("://", 1)[1].partition("/")[2]
    return url.split("?", 1)[0]


class ArchitectureHook:
    """A :class:`vismem.agents.memory.MemoryHook` for one probe (the cue it asks about).

    ``last_query`` / ``last_items`` keep what the latest step recalled (for the probe log's
    ``retrieved=[...]``), ``last_scores`` each recalled item's scores per channel (the viewer's).
    """

    def __init__(self, arch: MemoryArchitecture, cue: str, *, fetch_k: int = FETCH_K, keep_k: int = KEEP_K) -> None:
        self.arch, self.cue = arch, cue
        self.fetch_k, self.keep_k = fetch_k, keep_k
        self.last_query: Query | None = None
        self.last_items: list[MemoryItem] = []
        self.last_scores: list[dict[str, float | None]] = []

    def context(self, *, spec: SessionSpec | None = None, step: int = 0, url: str = "/",
                subtask: str = "") -> MemoryContext:
        """The memory block for the step that starts on ``url``."""
        self.last_query = Query.probe(self.cue, _path(url))
        # Probes of one bank may run at once: a retrieval and the channel scores it leaves on
        # the architecture are read together.
        with recall_lock(self.arch):
            self.last_items = recall(self.arch, self.last_query, fetch_k=self.fetch_k, keep_k=self.keep_k)
            self.last_scores = self.arch.channel_scores(self.last_items)
        return self.arch.inject(self.last_items)
