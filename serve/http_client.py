"""A retrying JSON-over-HTTP client shared by the OpenAI-compatible chat and embeddings clients.

Retries with exponential backoff (plus jitter, honouring ``Retry-After``) on connect errors,
timeouts, 408/409/425/429 and 5xx; other 4xx fail at once. A semaphore shared by all threads
using one client caps in-flight requests. Failures raise :class:`vismem.serve.vlm.VLMError` with a
``reason`` (``timeout``, ``connect``, ``http_<status>``, ``malformed_response``). Pickles (for Ray
workers) by dropping and lazily rebuilding the connection pool and locks.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from typing import Any

import httpx

from vismem.serve.vlm import VLMError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class RetryingJSONClient:
    """``post(path, body) -> dict`` with retries; subclasses add the API on top."""

    def __init__(self, base_url: str, *, api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 120.0,
                 connect_timeout_s: float = 10.0, max_retries: int = 4, backoff_s: float = 1.0,
                 backoff_max_s: float = 30.0, max_concurrency: int = 8) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_concurrency = int(max_concurrency)
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
                n = max(1, self.max_concurrency)
                self._client = httpx.Client(
                    base_url=self.base_url, headers=headers,
                    limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
                    timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s))
            return self._client

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.backoff_max_s)
            except ValueError:
                pass
        base = min(self.backoff_s * (2 ** attempt), self.backoff_max_s)
        # Jitter only spreads retries in time; it never touches what is generated.
        return base * (1.0 + 0.25 * random.random())

    def post(self, path: str, body: dict[str, Any], *, who: str) -> dict[str, Any]:
        """POST JSON and return the decoded object; ``who`` prefixes error messages."""
        payload = json.dumps(body)
        attempts = self.max_retries + 1
        reason, detail = "error", ""
        for attempt in range(attempts):
            retry_after = None
            with self._sem:
                try:
                    resp = self._http().post(path, content=payload)
                except httpx.TimeoutException as e:
                    reason, detail = "timeout", f"{type(e).__name__}: {e}"
                except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
                    reason, detail = "connect", f"{type(e).__name__}: {e}"
                else:
                    if resp.status_code == 200:
                        try:
                            data = resp.json()
                        except ValueError as e:
                            raise VLMError(f"{who}: malformed response (not JSON): {resp.text[:300]!r}",
                                           reason="malformed_response", attempts=attempt + 1) from e
                        if not isinstance(data, dict):
                            raise VLMError(f"{who}: malformed response (not an object): {resp.text[:300]!r}",
                                           reason="malformed_response", attempts=attempt + 1)
                        return data
                    reason, detail = f"http_{resp.status_code}", resp.text[:500]
                    if resp.status_code not in RETRY_STATUSES and resp.status_code < 500:
                        raise VLMError(f"{who}: HTTP {resp.status_code}: {detail}", reason=reason,
                                       attempts=attempt + 1)
                    retry_after = resp.headers.get("retry-after")
            if attempt + 1 < attempts:
                time.sleep(self._delay(attempt, retry_after))
        raise VLMError(f"{who}: failed after {attempts} attempts ({reason}): {detail}", reason=reason,
                       attempts=attempts)
