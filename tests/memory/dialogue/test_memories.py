"""DialogueMemory adapters: the protocol, Text RAG / MemShot in-process, MemOCR's
summarise-then-render (extractive stand-in and an LLM summarizer), external systems' plug-in."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vismem.core.errors import ConfigError
from vismem.env.dialogue import load_locomo
from vismem.memory.dialogue.memories import MEMORIES, DialogueMemory, MemoryUnit, build_memory


class BagOfWords:
    """A toy embedder (hashed word counts): enough to rank units by shared words."""

    name, dim = "bow", 512

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for w in text.lower().split():
            v[sum(map(ord, w.strip(".,!?\"'"))) % self.dim] += 1
        return v

    def embed_texts(self, texts):
        return np.stack([self._vec(t) for t in texts])

    def embed_images(self, images, texts=None):  # "reads" a shot by its size only: enough to run
        return np.stack([self._vec(f"w{Image.open(io.BytesIO(b)).height}") for b in images])


@pytest.fixture(scope="module")
def conv(data_dir):
    return load_locomo(data_dir / "locomo/locomo10.json")[0]


def test_text_rag_and_memshot_behind_the_protocol(conv):
    rag = build_memory("text-rag", text_embedder=BagOfWords())
    assert isinstance(rag, DialogueMemory)
    secs = rag.ingest(conv)
    assert secs > 0 and len(rag.units(conv.conversation_id)) == len(conv.sessions)
    top = rag.retrieve(conv.conversation_id, "Caroline LGBTQ support group", 3)
    assert len(top) == 3 and all(isinstance(u, MemoryUnit) and u.modality == "text" for u in top)
    shots = build_memory({"name": "memshot", "args": {"variant": "memshot"}}, image_embedder=BagOfWords())
    shots.ingest(conv)
    units = shots.units(conv.conversation_id)
    assert len(units) == 130 and all(u.image and u.image.startswith(b"\x89PNG") for u in units)
    assert shots.retrieve(conv.conversation_id, "anything", 10)[0] in units
    with pytest.raises(ConfigError, match="needs an image_embedder"):
        build_memory("memshot", text_embedder=BagOfWords())


def test_memocr_extractive_stand_in_summarises_then_renders(conv):
    mem = build_memory("session-summary-shots", image_embedder=BagOfWords())
    assert mem.stand_in and MEMORIES.is_stand_in({"name": "session-summary-shots", "args": {}})
    # named for what it is (per-session summaries drawn by MemShot's renderer), not MemOCR's memory
    assert mem.name == "session-summary-shots (stand-in extractive)"
    old = build_memory("memocr", image_embedder=BagOfWords())  # configs from before the rename still build it
    assert type(old) is type(mem) and old.name == mem.name and MEMORIES.is_stand_in({"name": "memocr", "args": {}})
    mem.ingest(conv)
    units = mem.units(conv.conversation_id)
    assert len(units) == len(conv.sessions)  # one memory shot per session
    s1 = conv.sessions[0]
    u = units[0]
    assert u.unit_id.endswith("/memocr") and set(u.dia_ids) < {t.dia_id for t in s1.turns}  # the kept turns only
    img = Image.open(io.BytesIO(u.image)).convert("RGB")
    assert img.width == 948 and img.getpixel((5, 5)) == (0x1F, 0x2A, 0x44)  # MemShot's header band
    assert u.text.count("\n") + 1 == len(u.dia_ids) and u.text.startswith("• ")
    shown = {t.dia_id: t for t in s1.turns}
    for line, d in zip(u.text.splitlines(), u.dia_ids):  # each memory line is its turn, shortened
        assert line.startswith(f"• {shown[d].speaker}: ") and line.split(": ", 1)[1].split()[0] in shown[d].text


def test_memocr_with_an_llm_summarizer(conv):
    from vismem.serve.backends.scripted import ScriptedVLM

    prompts: list[str] = []
    llm = ScriptedVLM(fn=lambda msgs: (prompts.append(msgs[-1].text),
                                       "• Caroline went to an LGBTQ support group on 7 May 2023.")[1], label="sum")
    mem = build_memory({"name": "memocr", "args": {"summarizer": llm, "concurrency": 2}},
                       image_embedder=BagOfWords())
    assert not mem.stand_in and mem.name == "session-summary-shots"
    mem.ingest(conv)
    u = mem.units(conv.conversation_id)[0]
    assert u.text.startswith("• Caroline went") and set(u.dia_ids) == {t.dia_id for t in conv.sessions[0].turns}
    assert len(prompts) == len(conv.sessions)
    assert any("Memory:" in p and conv.sessions[0].date_text in p and "Caroline said" in p for p in prompts)


def test_external_systems_need_a_plugged_in_backend(conv):
    for name in ("lightmem", "memos", "memoryos", "evermemos"):
        assert name in MEMORIES.names()
        with pytest.raises(ConfigError, match="needs a backend"):
            build_memory(name)
    mem = build_memory({"name": "memoryos", "args": {"backend": "tests.memory.dialogue.test_memories:toy_backend"}})
    assert mem.ingest(conv) >= 0 and mem.units(conv.conversation_id) == []
    got = mem.retrieve(conv.conversation_id, "Where did Caroline go?", 2)
    assert [u.text for u in got] == ["s1 has 18 turns", "s2 has 17 turns"] and got[0].dia_ids == ()
    assert mem.retrieve(conv.conversation_id, "again", 1)[0].unit_id == got[0].unit_id  # content-addressed
    with pytest.raises(ConfigError, match="cannot be loaded"):
        build_memory({"name": "lightmem", "args": {"backend": "no.such.module:make"}})


class _Toy:
    def __init__(self):
        self.sessions = {}

    def add(self, conversation_id, session):
        self.sessions.setdefault(conversation_id, []).append(f"s{session['index']} has {len(session['turns'])} turns")

    def search(self, conversation_id, query, k):
        return self.sessions[conversation_id][:k]


def toy_backend():
    return _Toy()


class FakePixelReader(BagOfWords):
    """A pixel reader's surface (read_images + embed_ocr_texts): "reads" each shot's height."""

    def read_images(self, images):
        return [f"read {Image.open(io.BytesIO(b)).height}" for b in images]

    def embed_ocr_texts(self, texts):
        return self.embed_texts(texts)


def test_a_pixel_readers_text_is_kept_per_conversation_in_unit_order(conv):
    """What a pixel reader read at ingest stays with the memory (the stage's read rate of MemOCR's
    shots); a text embedder reads nothing."""
    from dataclasses import replace

    mem = build_memory("memocr", image_embedder=FakePixelReader())
    short = replace(conv, conversation_id="short", sessions=conv.sessions[:2])
    mem.ingest(conv)
    mem.ingest(short)
    for c in (conv, short):
        units, read = mem.units(c.conversation_id), mem.ocr_texts(c.conversation_id)
        assert read == [f"read {Image.open(io.BytesIO(u.image)).height}" for u in units] and len(read) == len(c.sessions)
    assert mem.ocr_texts("unknown") == []
    rag = build_memory("text-rag", text_embedder=BagOfWords())
    rag.ingest(conv)
    assert rag.ocr_texts(conv.conversation_id) == []
