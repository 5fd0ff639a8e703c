"""A scripted recall policy: a deterministic stand-in for the probing VLM.

Registered in :data:`vismem.serve.registry.VLMS` as ``scripted-recall`` (a ``vismem.vlm`` entry point) and
named ``scripted-recall (stand-in)`` in every result. It reads only what a real VLM reads: the
last user message's ``[Memory context retrieved this step]`` block and ``[Current page]`` URL.
It trusts memory completely: it opens the first recalled product, and once on it, adds it to
the wishlist; with nothing recalled it gives up (``done``). So with this policy a probe succeeds
exactly when the target is the architecture's top recalled product at the first step: local task
success measures the memory machinery (retrieval and injection), not a model's judgement, and
NoMemory scores 0 by construction.
"""

from __future__ import annotations

import re
import time

from vismem.serve.registry import VLMS
from vismem.serve.vlm import ChatResult, Message

STAND_IN_NAME = "scripted-recall (stand-in)"

_MEMORY_RE = re.compile(r"\[Memory context retrieved this step\]\n(.*?)\n\n\[Current page\]", re.S)
_ITEM_RE = re.compile(r"^\s*\((\d+)\)\s.*?(/product/[0-9a-f]{6,16})", re.M)
_URL_RE = re.compile(r"^\s*URL:\s*(\S+)\s*$", re.M)


def recall_decision(text: str) -> tuple[str, str]:
    """``(thought, action)`` for one step message (pure)."""
    block = _MEMORY_RE.search(text)
    items = _ITEM_RE.findall(block.group(1)) if block else []
    url = _URL_RE.findall(text)
    here = url[-1] if url else "/"
    if not items:
        return "Memory recalled nothing I can use, so I cannot find it.", "done"
    first = items[0][1]
    if here.split("?", 1)[0] == first:
        return "This is the product memory recalled first.", "add_to_wishlist"
    return "Memory item (1) is the best match; go straight to it.", f'navigate("{first}")'


@VLMS.register("scripted-recall", stand_in=True)
class ScriptedRecall:
    """Stand-in probing agent (see module docstring); stateless, so any host can serve it."""

    def __init__(self, *, sleep_s: float = 0.0) -> None:
        self.sleep_s = float(sleep_s)
        self.name = "scripted-recall"
        self.display_name = STAND_IN_NAME
        self.stand_in = True

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        t0 = time.perf_counter()
        if self.sleep_s:
            time.sleep(self.sleep_s)
        users = [m for m in messages if m.role == "user"]
        thought, action = recall_decision(users[-1].text if users else "")
        text = f"Thought: {thought}\nAction: {action}"
        return ChatResult(text=text, latency_s=time.perf_counter() - t0,
                          prompt_tokens=sum(len(m.text.split()) for m in messages), completion_tokens=len(text.split()))
