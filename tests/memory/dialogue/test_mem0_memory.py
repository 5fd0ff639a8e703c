"""mem0 through its own API behind DialogueMemory: its LLM a local OpenAI-compatible server that
replies in mem0's extraction format, its embedder MiniLM served on the same loopback server,
Qdrant in-process. The adapter path is real; the LLM is a stand-in."""

from __future__ import annotations

import json
import os
import tempfile
from types import SimpleNamespace

import pytest

from vismem.core.errors import ConfigError
from vismem.env.dialogue.model import Session, Turn
from vismem.memory.dialogue.memories import MEMORIES, DialogueMemory, build_memory

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is first imported (the adapter also turns it off)
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="vismem-mem0-test-"))  # not the home folder
pytest.importorskip("mem0", reason="mem0ai is not installed")


def _conv():
    s1 = Session("s1", 1, "2023/05/20 (Sat) 02:21", None, (
        Turn("s1:1", "User", "I adopted a grey cat named Miso last week.", role="user"),
        Turn("s1:2", "Assistant", "Congratulations on Miso!", role="assistant")))
    s2 = Session("s2", 2, "2023/06/02 (Fri) 10:00", None, (
        Turn("s2:1", "User", "My sister Ana moved to Lisbon for work.", role="user"),))
    return SimpleNamespace(conversation_id="c1", sessions=(s1, s2))  # what a memory reads of a Conversation


def test_mem0_ingests_with_its_extraction_format_and_searches():
    from vismem.serve.backends.scripted import ScriptedVLM
    from vismem.serve.build import build_embedder
    from vismem.serve.openai_server import LocalOpenAIServer

    replies = [json.dumps({"memory": [{"text": "User adopted a grey cat named Miso", "attributed_to": "user"}]}),
               json.dumps({"memory": [{"text": "User's sister Ana moved to Lisbon for work", "attributed_to": "user"}]})]
    llm = ScriptedVLM(replies, cycle=False)
    with LocalOpenAIServer(llm, build_embedder({"name": "minilm"}), model_id="extractor") as srv:
        ep = {"model": srv.model_id, "base_url": srv.base_url}
        mem = build_memory({"name": "mem0", "args": {"llm": ep, "embedder": ep}}, text_embedder={"name": "minilm"})
        assert isinstance(mem, DialogueMemory) and mem.scores_recall is False
        # only a scripted extraction LLM has run mem0 here: its rows say stand-in until a real one does
        assert mem.name == "mem0 (stand-in)" and MEMORIES.is_stand_in({"name": "mem0", "args": {"llm": ep}})
        assert not MEMORIES.is_stand_in({"name": "mem0", "args": {"llm": ep, "stand_in": False}})
        secs = mem.ingest(_conv())
        assert secs > 0
        texts = sorted(u.text for u in mem.units("c1"))
        assert len(texts) == 2 and any("Miso" in t for t in texts) and all(t.startswith("DATE: 2023/") for t in texts)
        top = mem.retrieve("c1", "What is the name of my cat?", 1)
        assert len(top) == 1 and "Miso" in top[0].text
        where = mem.retrieve("c1", "Where does my sister live now?", 1)
        assert "Lisbon" in where[0].text
    assert mem.retrieve("nope", "x", 3) == []
    import mem0.memory.main as mem0_main

    assert mem0_main.MEM0_TELEMETRY is False


def test_mem0_names_a_missing_endpoint():
    with pytest.raises(ConfigError, match="llm"):
        build_memory({"name": "mem0", "args": {"embedder": {"model": "m", "base_url": "http://127.0.0.1:1/v1"}}})
