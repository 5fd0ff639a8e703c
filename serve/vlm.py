"""The VLM protocol: chat with text and images in, text out (imports nothing else of serve).

Every backend (an OpenAI-compatible HTTP client for vLLM / Ray Serve LLM / hosted APIs, a local
``transformers`` model, a scripted stand-in for tests) implements :class:`VLM` and registers
itself in :data:`vismem.serve.registry.VLMS` so a run manifest's ``{"name", "args"}`` spec
rebuilds it anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat turn. ``images`` are encoded PNG/WebP/JPEG bytes, shown (in order) before the text."""

    role: Role
    text: str
    images: tuple[bytes, ...] = ()


class VLMError(Exception):
    """A call failed after all retries; callers record a failed step, never crash.

    ``reason`` is a short machine-friendly label (``timeout``, ``connect``, ``http_500``,
    ``malformed_response``, ...); ``str(err)`` carries the detail.
    """

    def __init__(self, message: str, *, reason: str = "error", attempts: int = 1) -> None:
        super().__init__(message)
        self.reason = reason
        self.attempts = attempts


@dataclass(frozen=True)
class ChatResult:
    """The reply text plus what it cost. Token counts are ``None`` when the backend omits usage."""

    text: str
    latency_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@runtime_checkable
class VLM(Protocol):
    """A vision-language chat model. ``name`` identifies backend and model, e.g. ``openai:qwen2.5-vl-7b``."""

    name: str

    def chat(self, messages: list[Message], *, max_tokens: int = 512,
             temperature: float = 0.0) -> ChatResult: ...

