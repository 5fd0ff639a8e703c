"""Adapters for the external text-memory systems of Tables 1-2: LightMem, MemOS, MemoryOS, EverMemOS.

None of them is installed by this project: their packages are heavy (LLM pipelines, vector
stores, services) and their APIs differ. What exists on PyPI (checked against the package
index list, 2026):

* **LightMem** (Fang et al., 2025) — ``lightmem`` on PyPI is a 0.0.0 placeholder; the system is
  installed from its repository (zjunlp/LightMem).
* **MemOS** (Li et al., 2025b; MemTensor) — no package of that project in the list (``memos``
  on PyPI is Pensieve, an unrelated tool); installed from its repository.
* **MemoryOS** (Kang et al., 2025; BAI-LAB) — ``memoryos-pro``.
* **EverMemOS** (Hu et al., 2026) — ``evermemos``: the client of the hosted EverMemOS API
  (needs an account and key).

So each name here is an adapter around a **backend you plug in**: ``{"name": "memoryos",
"args": {"backend": "my_pkg.memoryos_backend:make"}}`` where ``make(**backend_args)`` returns an
object with

    add(conversation_id: str, session: dict) -> None
        session = {"session_id", "index", "date": "<as the dataset writes it>",
                   "turns": [{"dia_id", "speaker", "text", "image_caption"}]}, in dialogue order
    search(conversation_id: str, query: str, k: int) -> list[str]   (memory texts, best first)

Ingest time (all ``add`` calls) is the construction latency of Table 1. The memories are text
the answering VLM reads; they are not tied to dialogue turns, so evidence recall@k is not
scored for them (``scores_recall = False``) — Acc and F1 are. Until a backend is plugged in the
report keeps these systems' rows with the paper's numbers, marked quoted
(:mod:`vismem.analysis.memshot_paper`).
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

from vismem.core.errors import ConfigError
from vismem.memory.dialogue.memories import MEMORIES, MemoryUnit

#: name -> (paper label, how to get the system)
SYSTEMS: dict[str, tuple[str, str]] = {
    "lightmem": ("LightMem", "install LightMem from its repository (PyPI 'lightmem' is a 0.0.0 placeholder)"),
    "memos": ("MemOS", "install MemTensor's MemOS from its repository (PyPI 'memos' is an unrelated project)"),
    "memoryos": ("MemoryOS", "pip install memoryos-pro (BAI-LAB's MemoryOS)"),
    "evermemos": ("EverMemOS", "pip install evermemos (client of the hosted EverMemOS API; needs an API key)"),
}


def load_backend(path: str) -> Callable[..., Any]:
    """``"package.module:callable"`` → the callable (ConfigError naming what failed)."""
    mod, _, attr = path.partition(":")
    if not mod or not attr:
        raise ConfigError(f"backend must look like 'package.module:factory', got {path!r}")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"backend {path!r} cannot be loaded: {err}") from None


def session_payload(session: Any) -> dict[str, Any]:
    """What ``add`` receives for one session (see the module docstring)."""
    return {"session_id": session.session_id, "index": session.index, "date": session.date_text,
            "turns": [{"dia_id": t.dia_id, "speaker": t.speaker, "text": t.text, "image_caption": t.image_caption}
                      for t in session.turns]}


class ExternalMemory:
    """A plugged-in text-memory system behind the DialogueMemory protocol."""

    scores_recall = False  # its memories are not tied to dialogue turns

    def __init__(self, system: str, *, backend: str | None = None, backend_args: dict[str, Any] | None = None,
                 text_embedder: Any = None, image_embedder: Any = None) -> None:
        label, how = SYSTEMS[system]
        if not backend:
            raise ConfigError(f"memory {system!r} ({label}) needs a backend: {how}, then give "
                              f"memshot.memories: [{{name: {system}, args: {{backend: 'pkg.module:factory'}}}}] "
                              "(see memory/dialogue/memories/external.py for the add/search interface)")
        self.name, self.system = system, label
        self.backend = load_backend(backend)(**dict(backend_args or {}))
        for method in ("add", "search"):
            if not callable(getattr(self.backend, method, None)):
                raise ConfigError(f"backend {backend!r} for {label} has no {method}() method")
        self._counts: dict[str, int] = {}

    def ingest(self, conversation: Any) -> float:
        t0 = time.perf_counter()
        for s in conversation.sessions:
            if s.turns:
                self.backend.add(conversation.conversation_id, session_payload(s))
        self._counts[conversation.conversation_id] = len(conversation.sessions)
        return time.perf_counter() - t0

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        return []  # the system's store is its own; units appear as they are retrieved

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        texts = list(self.backend.search(conversation_id, question, k))[:k]
        import hashlib

        # Content-addressed ids: the same memory text retrieved twice is one unit.
        return [MemoryUnit(f"{conversation_id}/{self.name}/{hashlib.sha256(str(t).encode()).hexdigest()[:12]}",
                           conversation_id, 0, (), "text", str(t)) for t in texts]


def _factory(system: str) -> Callable[..., ExternalMemory]:
    def make(*, backend: str | None = None, backend_args: dict[str, Any] | None = None,
             text_embedder: Any = None, image_embedder: Any = None) -> ExternalMemory:
        return ExternalMemory(system, backend=backend, backend_args=backend_args)

    make.__doc__ = f"{SYSTEMS[system][0]} through a plugged-in backend ({SYSTEMS[system][1]})."
    return make


for _name in SYSTEMS:
    MEMORIES.register(_name)(_factory(_name))
