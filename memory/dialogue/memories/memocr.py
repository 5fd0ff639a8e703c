"""The MemOCR-style baseline, ``session-summary-shots``: each session summarised into memory
text, then drawn as a shot by MemShot's renderer.

It is *not* MemOCR's memory. MemOCR (Shi et al., 2026) keeps a rich-text memory written and
laid out by an LLM and reads it as an image; the MemShot paper reproduces it by keeping its
*summarise-then-render* procedure (App. A.2). Here each session is summarised (``summarizer``:
any VLM spec, given ``prompts/memocr_summarize.txt``) and the memory text is drawn by MemShot's
own renderer -- header band (session label, date) over one "Memory" bubble, as tall as the text
needs -- so the comparison with MemShot changes the memory content (a per-session summary vs raw
turns) and nothing else; results name it ``session-summary-shots`` so that no one reads its
rows as MemOCR's (nor sets MemOCR's quoted number beside them). Units are one shot per
session, retrieved with the run's image embedder.

Locally (``summarizer`` unset) an **extractive stand-in** writes the memory: the most
informative turns (content words, numbers and names), cut to their first sentences, in
dialogue order -- named as a stand-in in results. Its units show exactly the turns it kept
(``dia_ids``); an LLM summary's units are credited with the whole session (which of its turns
survive in the summary cannot be known), as Text RAG's session units are.

``memocr`` is kept as another name of this memory (configs written before the rename); runs
recorded under it keep the name they ran with.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vismem.memory.dialogue.memories import MEMORIES, MemoryUnit
from vismem.memory.dialogue.memories.base import RetrievingMemory

SPEAKER = "Memory"
_WORD = re.compile(r"[A-Za-z0-9']+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_STOP = frozenset("""a an the and or but so to of in on at for with from by about as is are was were be been am
i you he she it we they me him her us them my your his its our their this that these those do does did have has
had not no yes just really so very too also oh hey hi wow thanks thank great good nice cool awesome lol yeah
what how when where who why which can could would will shall should may might must i'm you're it's that's""".split())


def informative(text: str, ignore: frozenset[str] = frozenset()) -> float:
    """A turn's information score: content words, plus numbers and capitalised names (the
    speakers' own names, in every greeting, are ``ignore``d)."""
    words = [w for w in _WORD.findall(text) if w.lower() not in ignore]
    content = [w for w in words if w.lower() not in _STOP and len(w) > 2]
    return len(content) + sum(w[0].isdigit() for w in words) + 0.5 * sum(w[0].isupper() for w in words[1:])


def extractive_memory(session: Any, *, ratio: float = 0.35, max_words: int = 30) -> tuple[str, tuple[str, ...]]:
    """The stand-in summary of a session and the dia_ids of the turns it kept.

    Keeps the top ``ratio`` of turns by :func:`informative` (at least one), in dialogue order,
    each as ``Speaker: first sentences`` cut at ``max_words`` words.
    """
    turns = list(session.turns)
    n = max(1, round(len(turns) * ratio))
    names = frozenset(w.lower() for t in turns for w in t.speaker.split())
    ranked = sorted(range(len(turns)), key=lambda i: (-informative(turns[i].text, names), i))[:n]
    lines, kept = [], []
    for i in sorted(ranked):
        t = turns[i]
        words, out = 0, []
        for sent in _SENTENCE.split(t.text.strip()):
            out.append(sent)
            words += len(sent.split())
            if words >= max_words:
                break
        text = " ".join(" ".join(out).split()[:max_words])
        if t.image_caption:
            text += f" (shared {t.image_caption})"
        lines.append(f"• {t.speaker}: {text}")
        kept.append(t.dia_id)
    return "\n".join(lines), tuple(kept)


#: What results call this memory (not MemOCR's own memory: see the module docstring).
NAME = "session-summary-shots"


@MEMORIES.register(NAME, stand_in=lambda args: not args.get("summarizer"))
class MemOCRMemory(RetrievingMemory):
    """Args:
        summarizer: VLM spec that writes each session's memory (None: the extractive stand-in).
        ratio / max_words: the stand-in's share of turns kept and words per kept turn.
        concurrency: summaries requested at once (LLM summarizer).
        max_tokens: summary length cap (LLM summarizer).
        text_embedder / image_embedder: injected by the stage; shots use the image embedder.
    """

    name = NAME
    modality = "image"

    def __init__(self, *, summarizer: Any = None, ratio: float = 0.35, max_words: int = 30, concurrency: int = 8,
                 max_tokens: int = 512, **kw: Any) -> None:
        super().__init__(**kw)
        from vismem.memory.dialogue.variants import load_variant

        self.variant = load_variant("full-session")  # one shot per session, as tall as its memory
        self.ratio, self.max_words = float(ratio), int(max_words)
        self.concurrency, self.max_tokens = int(concurrency), int(max_tokens)
        self.summarizer = None
        if summarizer is not None and hasattr(summarizer, "chat"):  # an already built VLM
            self.summarizer = summarizer
        elif summarizer:
            from vismem.serve.build import build_vlm

            self.summarizer = build_vlm(summarizer)
        self.stand_in = self.summarizer is None
        if self.stand_in:
            self.name = f"{NAME} (stand-in extractive)"

    def summarise(self, conversation: Any, session: Any) -> tuple[str, tuple[str, ...]]:
        """``(memory text, dia_ids credited)`` of one session."""
        if self.summarizer is None:
            return extractive_memory(session, ratio=self.ratio, max_words=self.max_words)
        from vismem.memory.dialogue.scoring import fill, load_prompt
        from vismem.memory.dialogue.text import session_text
        from vismem.serve.vlm import Message, VLMError

        prompt = fill(load_prompt("memocr_summarize"), speaker_a=conversation.speakers[0],
                      speaker_b=conversation.speakers[1], date=session.date_text,
                      session=session_text(session).split("CONVERSATION:\n", 1)[-1])
        try:
            text = self.summarizer.chat([Message(role="user", text=prompt)], max_tokens=self.max_tokens,
                                        temperature=0.0).text.strip()
        except VLMError:
            text = ""  # a failed summary is an empty memory for that session, not a crash
        return text, tuple(t.dia_id for t in session.turns)

    def build_units(self, conversation: Any) -> list[MemoryUnit]:
        sessions = [s for s in conversation.sessions if s.turns]
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(sessions) or 1))) as pool:
            memories = list(pool.map(lambda s: self.summarise(conversation, s), sessions))
        return [unit for s, (text, dia) in zip(sessions, memories) if text.strip()
                for unit in [self.render(conversation, s, text, dia)]]

    def render(self, conversation: Any, session: Any, text: str, dia_ids: tuple[str, ...]) -> MemoryUnit:
        """The memory text as a MemShot shot: the session's header over one "Memory" bubble."""
        from dataclasses import replace

        from vismem.env.dialogue.model import Conversation, Turn
        from vismem.memory.dialogue.render import session_units

        memo = replace(session, turns=(Turn(dia_id=f"{session.session_id}:memory", speaker=SPEAKER, text=text),))
        conv = Conversation(conversation.dataset, conversation.conversation_id, (SPEAKER, ""), (memo,),
                            source=conversation.source)
        (u,) = session_units(conv, memo, self.variant)
        return MemoryUnit(f"{conversation.conversation_id}/{session.session_id}/memocr", conversation.conversation_id,
                          session.index, dia_ids, "image", text, u.image)


MEMORIES.register("memocr", stand_in=lambda args: not args.get("summarizer"))(MemOCRMemory)
