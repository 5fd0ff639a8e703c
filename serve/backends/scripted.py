"""A scripted VLM stand-in: deterministic replies, and faults on demand for testing the HTTP path.

Results produced with it are stand-ins and are named as such (``scripted:<label>``). Replies come
from a list (cycled or exhausted), or from a function of the prompt (a callable, a
``"module:function"`` path, or a built-in: ``echo``, ``describe``). It can be told to misbehave:
``malformed`` replies, ``sleep_s`` before answering (to force client timeouts) and ``fail_first``
errors with an HTTP status (the local server turns them into that status code).
"""

from __future__ import annotations

import importlib
import itertools
import threading
import time
from typing import Callable

from vismem.serve.layouts import check_layout, model_view
from vismem.serve.registry import VLMS
from vismem.serve.vlm import ChatResult, Message

MALFORMED_TEXT = "\x00<<garbled>> }{ not-a-valid-reply"


class ScriptedFault(RuntimeError):
    """An injected failure; ``http_status`` is what the local OpenAI server answers with."""

    def __init__(self, message: str, http_status: int = 500) -> None:
        super().__init__(message)
        self.http_status = http_status


def _echo(messages: list[Message]) -> str:
    users = [m for m in messages if m.role == "user"]
    return users[-1].text if users else ""


def _describe(messages: list[Message]) -> str:
    n_img = sum(len(m.images) for m in messages)
    sizes = ",".join(str(len(b)) for m in messages for b in m.images)
    return f"images={n_img} bytes=[{sizes}] last_user={_echo(messages)!r}"


BUILTIN_FNS: dict[str, Callable[[list[Message]], str]] = {"echo": _echo, "describe": _describe}


def _resolve_fn(fn: Callable[[list[Message]], str] | str | None) -> Callable[[list[Message]], str] | None:
    if fn is None or callable(fn):
        return fn
    if fn in BUILTIN_FNS:
        return BUILTIN_FNS[fn]
    if ":" not in fn:
        raise ValueError(f"scripted fn {fn!r}: use a built-in ({', '.join(BUILTIN_FNS)}) or 'module:function'")
    mod, attr = fn.split(":", 1)
    return getattr(importlib.import_module(mod), attr)


@VLMS.register("scripted", stand_in=True)
class ScriptedVLM:
    """Deterministic stand-in VLM. Thread-safe: call counting is under a lock.

    Args:
        replies: replies in order; cycled when ``cycle`` (default), else the last one repeats.
        fn: reply as a function of the messages (overrides ``replies``).
        label: name suffix, ``scripted:<label>``.
        malformed: ``True`` → every reply is garbage; an int ``n`` → the first ``n`` replies are.
        sleep_s: seconds to sleep before replying, for the first ``sleep_first`` calls (all if None).
        fail_first: the first ``n`` calls raise :class:`ScriptedFault` with ``fail_status``.
        layout: the message layout (:mod:`vismem.serve.layouts`) whose model view ``fn`` and the token
            count read, so a stand-in sees a conversation the way the model it stands in for would.
    """

    def __init__(self, replies: list[str] | str | None = None, *, fn: Callable | str | None = None,
                 cycle: bool = True, label: str = "default", malformed: bool | int = False,
                 sleep_s: float = 0.0, sleep_first: int | None = None, fail_first: int = 0,
                 fail_status: int = 500, layout: str = "chat") -> None:
        if isinstance(replies, str):
            replies = [replies]
        self.replies = list(replies or ["OK"])
        self.fn = _resolve_fn(fn)
        self.cycle = cycle
        self.name = f"scripted:{label}"
        self.malformed = malformed
        self.sleep_s = float(sleep_s)
        self.sleep_first = sleep_first
        self.fail_first = int(fail_first)
        self.fail_status = int(fail_status)
        self.layout = check_layout(layout)
        self.calls = 0
        self._lock = threading.Lock()
        self._it = itertools.cycle(self.replies) if cycle else iter(self.replies)

    def _next_reply(self) -> str:
        try:
            return next(self._it)
        except StopIteration:
            return self.replies[-1]

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        t0 = time.perf_counter()
        messages = model_view(messages, self.layout)
        with self._lock:
            self.calls += 1
            n = self.calls
            reply = None if self.fn else self._next_reply()
        if self.sleep_s and (self.sleep_first is None or n <= self.sleep_first):
            time.sleep(self.sleep_s)
        if n <= self.fail_first:
            raise ScriptedFault(f"scripted failure {n}/{self.fail_first}", http_status=self.fail_status)
        if self.fn is not None:
            reply = self.fn(messages)
        bad = self.malformed is True or (not isinstance(self.malformed, bool) and n <= int(self.malformed))
        if bad:
            reply = MALFORMED_TEXT
        prompt_tokens = sum(len(m.text.split()) for m in messages)
        return ChatResult(text=reply, latency_s=time.perf_counter() - t0,
                          prompt_tokens=prompt_tokens, completion_tokens=len(reply.split()))
