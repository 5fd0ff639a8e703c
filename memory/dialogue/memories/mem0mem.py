"""mem0 (``mem0ai``, the most used agent-memory library) behind the DialogueMemory protocol,
through its own API (``mem0.Memory``): ``add`` per session, ``search`` per question.

Its LLM (fact extraction) and its embedder are OpenAI-compatible endpoints (any served or hosted
model: ``llm`` / ``embedder`` = ``{model, base_url, api_key_env}``); its vector store is Qdrant
in-process (a temporary folder, nothing listens) and its history database a temporary SQLite
file. Telemetry is off. Each session is added as its turns (``speaker: text``, the session's date
in the metadata), scoped to the conversation (``user_id``); construction latency is the time of
all ``add`` calls (LLM extraction and embedding included). mem0 stores extracted facts, not turns:
its units are not tied to dialogue turns, so evidence recall is not scored (``scores_recall``
False), Acc and F1 are.

mem0 has only run here with a scripted extraction LLM (the tests' loopback endpoint), so its
rows are named a stand-in (``mem0 (stand-in)``) unless the spec says ``stand_in: false`` -- for
a run whose ``llm`` is a real model, once one has run it.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from vismem.core.errors import ConfigError
from vismem.memory.dialogue.memories import MEMORIES, MemoryUnit


def _endpoint(spec: Any, field: str) -> dict[str, Any]:
    if not isinstance(spec, dict) or not spec.get("model") or not spec.get("base_url"):
        raise ConfigError(f"mem0 {field} must be {{model, base_url[, api_key_env]}} of an OpenAI-compatible endpoint, "
                          f"got {spec!r}")
    key_env = spec.get("api_key_env")
    return {"model": spec["model"], "base_url": spec["base_url"],
            "api_key": (os.environ.get(key_env, "") if key_env else "") or "EMPTY"}


@MEMORIES.register("mem0", stand_in=lambda args: args.get("stand_in", True))
class Mem0Memory:
    """mem0 ``Memory`` with OpenAI-compatible LLM and embedder, Qdrant in-process; ``stand_in``
    (default True) names its rows a stand-in (the module docstring says why)."""

    name = "mem0"
    modality = "text"
    scores_recall = False

    def __init__(self, *, llm: dict[str, Any] | None = None, embedder: dict[str, Any] | None = None,
                 embedding_dims: int = 384, label: str | None = None, stand_in: bool = True,
                 text_embedder: Any = None, image_embedder: Any = None) -> None:
        llm_ep, emb_ep = _endpoint(llm, "llm"), _endpoint(embedder, "embedder")
        self._dir = tempfile.TemporaryDirectory(prefix="vismem-mem0-")
        os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is imported: no calls home
        os.environ.setdefault("MEM0_DIR", self._dir.name)  # its user-id file, not in the home folder
        try:
            import mem0.memory.main as mem0_main
            import mem0.memory.telemetry as mem0_telemetry
            from mem0 import Memory
        except ImportError as err:
            raise ConfigError("memory 'mem0' needs the mem0ai package (pip install mem0ai==2.2.1)") from err
        # mem0 imported earlier, before the variable was set, would still send events
        mem0_telemetry.MEM0_TELEMETRY = mem0_main.MEM0_TELEMETRY = False
        self.stand_in = bool(stand_in)
        self.name = (label or "mem0") + (" (stand-in)" if self.stand_in else "")
        self.spec = {"name": "mem0", "args": {"llm": dict(llm), "embedder": dict(embedder),
                                              "embedding_dims": embedding_dims,
                                              **({} if self.stand_in else {"stand_in": False})}}
        self.memory = Memory.from_config({
            "llm": {"provider": "openai", "config": {"model": llm_ep["model"], "openai_base_url": llm_ep["base_url"],
                                                     "api_key": llm_ep["api_key"], "temperature": 0.0}},
            "embedder": {"provider": "openai", "config": {"model": emb_ep["model"], "openai_base_url": emb_ep["base_url"],
                                                          "api_key": emb_ep["api_key"], "embedding_dims": embedding_dims}},
            "vector_store": {"provider": "qdrant", "config": {"collection_name": "vismem", "path": self._dir.name,
                                                              "embedding_model_dims": embedding_dims, "on_disk": False}},
            "history_db_path": os.path.join(self._dir.name, "history.db"),
        })
        self._units: dict[str, list[MemoryUnit]] = {}

    def ingest(self, conversation: Any) -> float:
        """``add`` every session (its turns as messages); returns the seconds spent."""
        cid = conversation.conversation_id
        t0 = time.perf_counter()
        for s in conversation.sessions:
            msgs = [{"role": "assistant" if t.role == "assistant" else "user",
                     "content": f"{t.speaker}: {t.text}" + (f" [shared {t.image_caption}]" if t.image_caption else "")}
                    for t in s.turns]
            if msgs:
                self.memory.add(msgs, user_id=cid, metadata={"session": s.session_id, "date": s.date_text})
        seconds = time.perf_counter() - t0
        got = self.memory.get_all(filters={"user_id": cid}, top_k=10_000)
        self._units[cid] = [self._unit(cid, r) for r in _results(got)]
        return seconds

    @staticmethod
    def _unit(cid: str, r: dict[str, Any]) -> MemoryUnit:
        meta = r.get("metadata") or {}
        date = f"DATE: {meta['date']}\n" if meta.get("date") else ""
        return MemoryUnit(f"{cid}:mem0:{r['id']}", cid, 0, (), "text", date + str(r.get("memory", "")))

    def units(self, conversation_id: str) -> list[MemoryUnit]:
        return list(self._units.get(conversation_id, []))

    def retrieve(self, conversation_id: str, question: str, k: int) -> list[MemoryUnit]:
        """mem0's ``search`` within the conversation, best first."""
        if conversation_id not in self._units:
            return []
        got = self.memory.search(question, top_k=k, filters={"user_id": conversation_id}, threshold=0.0)
        return [self._unit(conversation_id, r) for r in _results(got)][:k]


def _results(got: Any) -> list[dict[str, Any]]:
    return list(got.get("results", []) if isinstance(got, dict) else got or [])
