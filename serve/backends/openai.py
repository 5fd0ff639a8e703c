"""OpenAI-compatible chat-completions client: the production path to vLLM, Ray Serve LLM and
hosted APIs (retries, backoff and the concurrency cap live in :mod:`vismem.serve.http_client`)."""

from __future__ import annotations

import time
from typing import Any

from vismem.serve.http_client import RetryingJSONClient
from vismem.serve.layouts import check_layout
from vismem.serve.openai_format import messages_to_openai, parse_completion
from vismem.serve.registry import VLMS
from vismem.serve.vlm import ChatResult, Message, VLMError


@VLMS.register("openai", stand_in=lambda args: bool(args.get("stand_in")))
class OpenAIChatVLM(RetryingJSONClient):
    """Chat over ``POST {base_url}/chat/completions``.

    Args:
        model: the served model id (``Qwen/Qwen2.5-VL-7B-Instruct``, ``gpt-4o``, ...).
        base_url: API root including ``/v1``.
        api_key_env: name of the env var holding the key (the key itself never enters a spec);
            no auth header when unset or empty.
        label: the short name in ``openai:<label>`` (defaults to the model id).
        timeout_s / connect_timeout_s: read and connect timeouts per attempt.
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts).
        backoff_s / backoff_max_s: first delay and cap of the exponential backoff.
        max_concurrency: in-flight requests allowed across threads sharing this client.
        extra_body: merged into every request body (e.g. ``{"top_k": 1}``, vLLM's
            ``mm_processor_kwargs``, ``chat_template_kwargs``).
        image_detail: OpenAI ``detail`` for image parts (``low``/``high``/``auto``), omitted if None.
        seed: sent as ``seed`` when set (vLLM and OpenAI honour it).
        layout: the message layout (:mod:`vismem.serve.layouts`): ``chat`` (system + user turns, images
            before text), ``merged-user`` (the official vLLM request), ``parts`` (the official
            Gemini request). A model argument: it changes what the model reads.
        stand_in: the endpoint serves a stand-in (a deployed scripted policy), so results
            name it as one.
    """

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", *,
                 api_key_env: str | None = "OPENAI_API_KEY", label: str | None = None,
                 timeout_s: float = 120.0, connect_timeout_s: float = 10.0, max_retries: int = 4,
                 backoff_s: float = 1.0, backoff_max_s: float = 30.0, max_concurrency: int = 8,
                 extra_body: dict[str, Any] | None = None, image_detail: str | None = None,
                 seed: int | None = None, layout: str = "chat", stand_in: bool = False) -> None:
        super().__init__(base_url, api_key_env=api_key_env, timeout_s=timeout_s,
                         connect_timeout_s=connect_timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                         backoff_max_s=backoff_max_s, max_concurrency=max_concurrency)
        self.model = model
        self.name = f"openai:{label or model}"
        self.extra_body = dict(extra_body or {})
        self.image_detail = image_detail
        self.seed = seed
        self.layout = check_layout(layout)
        self.stand_in = bool(stand_in)

    def sent_config(self) -> dict[str, Any]:
        return {**super().sent_config(), "extra_body": self.extra_body}

    def request_body(self, messages: list[Message], *, max_tokens: int, temperature: float) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages_to_openai(messages, layout=self.layout, image_detail=self.image_detail),
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
        }
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        return body

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        t0 = time.perf_counter()
        data = self.post("/chat/completions",
                         self.request_body(messages, max_tokens=max_tokens, temperature=temperature), who=self.name)
        try:
            text, pt, ct = parse_completion(data)
        except ValueError as e:
            raise VLMError(f"{self.name}: malformed response: {e}; body={self.scrub(str(data))[:300]!r}",
                           reason="malformed_response") from e
        # A reply can repeat what was sent too (an echoing proxy): it is stored, so it is scrubbed.
        text = self.scrub(text, reply=True) if text else text
        return ChatResult(text=text, latency_s=time.perf_counter() - t0, prompt_tokens=pt, completion_tokens=ct)
