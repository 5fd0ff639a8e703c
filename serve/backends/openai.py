"""OpenAI-compatible chat-completions client: the production path to vLLM, Ray Serve LLM and
hosted APIs.

Retries with exponential backoff (plus jitter, honouring ``Retry-After``) on connect errors,
timeouts, 429 and 5xx; other 4xx and malformed bodies fail at once. Concurrency is capped by a
semaphore shared by all threads using one client. After the last attempt a :class:`VLMError`
carries the reason. Clients pickle (for Ray workers) by dropping and lazily rebuilding the
connection pool.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from typing import Any

import httpx

from serve.openai_format import message_to_openai, parse_completion
from serve.vlm import VLMS, ChatResult, Message, VLMError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@VLMS.register("openai")
class OpenAIChatVLM:
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
    """

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", *,
                 api_key_env: str | None = "OPENAI_API_KEY", label: str | None = None,
                 timeout_s: float = 120.0, connect_timeout_s: float = 10.0, max_retries: int = 4,
                 backoff_s: float = 1.0, backoff_max_s: float = 30.0, max_concurrency: int = 8,
                 extra_body: dict[str, Any] | None = None, image_detail: str | None = None,
                 seed: int | None = None) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.name = f"openai:{label or model}"
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_concurrency = int(max_concurrency)
        self.extra_body = dict(extra_body or {})
        self.image_detail = image_detail
        self.seed = seed
        self._init_runtime()

    # -- pickling: locks and connection pools stay behind ------------------------------------
    def _init_runtime(self) -> None:
        self._sem = threading.BoundedSemaphore(max(1, self.max_concurrency))
        self._client_lock = threading.Lock()
        self._client: httpx.Client | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_sem", "_client_lock", "_client")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_runtime()

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"Content-Type": "application/json"}
                key = os.environ.get(self.api_key_env) if self.api_key_env else None
                if key:
                    headers["Authorization"] = f"Bearer {key}"
                limits = httpx.Limits(max_connections=max(1, self.max_concurrency),
                                      max_keepalive_connections=max(1, self.max_concurrency))
                self._client = httpx.Client(
                    base_url=self.base_url, headers=headers, limits=limits,
                    timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s))
            return self._client

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- the call ----------------------------------------------------------------------------
    def request_body(self, messages: list[Message], *, max_tokens: int, temperature: float) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m, image_detail=self.image_detail) for m in messages],
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
        }
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        return body

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.backoff_max_s)
            except ValueError:
                pass
        base = min(self.backoff_s * (2 ** attempt), self.backoff_max_s)
        # Jitter only spreads retries in time; it never touches what is generated.
        return base * (1.0 + 0.25 * random.random())

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        body = json.dumps(self.request_body(messages, max_tokens=max_tokens, temperature=temperature))
        attempts = self.max_retries + 1
        last_reason, last_detail = "error", ""
        t0 = time.perf_counter()
        for attempt in range(attempts):
            retry_after = None
            with self._sem:
                try:
                    resp = self._http().post("/chat/completions", content=body)
                except httpx.TimeoutException as e:
                    last_reason, last_detail = "timeout", f"{type(e).__name__}: {e}"
                except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError,
                        httpx.WriteError) as e:
                    last_reason, last_detail = "connect", f"{type(e).__name__}: {e}"
                else:
                    if resp.status_code == 200:
                        try:
                            text, pt, ct = parse_completion(resp.json())
                        except ValueError as e:  # includes JSON decode errors
                            raise VLMError(f"{self.name}: malformed response: {e}; body={resp.text[:300]!r}",
                                           reason="malformed_response", attempts=attempt + 1) from e
                        return ChatResult(text=text, latency_s=time.perf_counter() - t0,
                                          prompt_tokens=pt, completion_tokens=ct)
                    last_reason = f"http_{resp.status_code}"
                    last_detail = resp.text[:500]
                    if resp.status_code not in RETRY_STATUSES and resp.status_code < 500:
                        raise VLMError(f"{self.name}: HTTP {resp.status_code}: {last_detail}",
                                       reason=last_reason, attempts=attempt + 1)
                    retry_after = resp.headers.get("retry-after")
            if attempt + 1 < attempts:
                time.sleep(self._delay(attempt, retry_after))
        raise VLMError(f"{self.name}: failed after {attempts} attempts ({last_reason}): {last_detail}",
                       reason=last_reason, attempts=attempts)
