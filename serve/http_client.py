"""A retrying JSON-over-HTTP client shared by the OpenAI-compatible chat and embeddings clients.

Retries with exponential backoff (plus jitter, honouring ``Retry-After``) on connect errors,
timeouts, 408/409/425/429 and 5xx; other 4xx fail at once. A semaphore shared by all threads
using one client caps in-flight requests. Failures raise :class:`vismem.serve.vlm.VLMError` with a
``reason`` (``timeout``, ``connect``, ``http_<status>``, ``malformed_response``). Pickles (for Ray
workers) by dropping and lazily rebuilding the connection pool and locks.

Whatever the client sent can come back: some proxies repeat the request's key in an error
(``Invalid API key provided: Bearer sk-...``). Every error message and reply text leaves the client
through :meth:`RetryingJSONClient.scrub` -- the rule of :mod:`vismem.core.secrets` over what this
client sends (its key, the URL's user-info, secret-named entries of :meth:`sent_config`) -- so
no stored answer, judge reason or failure line carries a credential.
"""

from __future__ import annotations

import base64
import json
import math
import os
import random
import threading
import time
import uuid
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from vismem.core.secrets import Scrubber, secret_values
from vismem.serve.vlm import VLMError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

#: Largest reply body read (bytes): a chat or embeddings reply is kB to a few MB (a batch of
#: 64 embeddings of 4,096 floats as JSON text is ~5 MB); an endless body stops here.
MAX_REPLY_BYTES = 64 << 20
#: Longest wait a ``Retry-After`` header may ask for before the client's own backoff_max_s cap.
RETRY_AFTER_MAX_S = 3600.0


class _TooLong(Exception):
    """A reply body past MAX_REPLY_BYTES (its length so far in ``args[0]``)."""


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait: delta-seconds or an HTTP date, clamped to
    ``[0, RETRY_AFTER_MAX_S]``; None for a value that is neither (negative, ``nan``, ``inf``,
    garbage), so the client falls back to its own backoff instead of dying on ``time.sleep``."""
    if not value:
        return None
    text = value.strip()[:64]
    try:
        secs = float(text)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        secs = when.timestamp() - time.time()
        return min(max(secs, 0.0), RETRY_AFTER_MAX_S)
    if not math.isfinite(secs) or secs < 0:
        return None
    return min(secs, RETRY_AFTER_MAX_S)


#: Strings at least this long are spliced into the payload as they are (see :func:`dumps_body`).
SPLICE_MIN = 1024


#: The characters ``json.dumps`` writes as themselves: printable ASCII but ``"`` and ``\\``.
_VERBATIM = bytes(c for c in range(0x20, 0x7F) if c not in (0x22, 0x5C))


def _verbatim(s: str) -> bool:
    """Whether ``json.dumps`` writes ``s`` as itself between quotes (a base64 data URL always
    does); deleting the verbatim bytes leaves nothing (C speed: ~5x a dump of the same text)."""
    return s.isascii() and not s.encode("ascii").translate(None, _VERBATIM)


def dumps_body(body: Any) -> str:
    """``json.dumps(body)``, byte for byte, without scanning long strings that need no escaping.

    A request with images carries each as a base64 data URL of ~100 KB; ``json.dumps`` checks
    every character of them for escapes (~1 ms of client CPU for a 6-image probe step, the
    largest single cost of building a request). Such strings are swapped for short tokens, the
    rest is dumped, and the strings are put back where their tokens are.
    """
    longs: list[str] = []
    token = f"@vismem-splice-{uuid.uuid4().hex}-"

    def swap(x: Any) -> Any:
        if isinstance(x, str):
            if len(x) >= SPLICE_MIN and _verbatim(x):
                longs.append(x)
                return f"{token}{len(longs) - 1}@"
            return x
        if isinstance(x, dict):
            return {k: swap(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [swap(v) for v in x]
        return x

    skeleton = json.dumps(swap(body))
    if not longs:
        return skeleton
    out: list[str] = []
    pos = 0
    for i, s in enumerate(longs):  # tokens appear once each, in the order they were made
        at = skeleton.index(f"{token}{i}@", pos)
        out += [skeleton[pos:at], s]
        pos = at + len(f"{token}{i}@")
    out.append(skeleton[pos:])
    return "".join(out)


def _basic_auth(url: str) -> set[str]:
    """The ``Authorization: Basic`` value httpx sends for a URL's user-info (it can be echoed too)."""
    parts = urlsplit(url)
    if parts.username is None:
        return set()
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return {base64.b64encode(pair.encode()).decode()}


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
        self._scrubber: Scrubber | None = None

    def sent_config(self) -> dict[str, Any]:
        """What of this client's configuration reaches the endpoint (subclasses add body fields)."""
        return {"base_url": self.base_url}

    def _api_key(self) -> str | None:
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None

    def scrubber(self) -> Scrubber:
        """The values of this client's credentials, as a :class:`Scrubber` (its key, secrets in
        what it sends, the base URL's user-info and the Basic header made of it)."""
        if self._scrubber is None:
            # Built on first use in the process that sends (the key is read from its environment).
            self._scrubber = Scrubber(secret_values(self.sent_config()) | {self._api_key() or ""}
                                      | _basic_auth(self.base_url))
        return self._scrubber

    def scrub(self, text: str, *, reply: bool = False) -> str:
        """``text`` without this client's credentials (``***`` in their place); a ``reply`` keeps
        URLs it holds and loses only the credential values themselves."""
        return self.scrubber().known(text) if reply else self.scrubber().text(text)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_sem", "_client_lock", "_client", "_scrubber")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_runtime()

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"Content-Type": "application/json"}
                key = self._api_key()
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
        wait = retry_after_seconds(retry_after)
        if wait is not None:
            return min(wait, self.backoff_max_s)
        base = min(self.backoff_s * (2 ** attempt), self.backoff_max_s)
        # Jitter only spreads retries in time; it never touches what is generated.
        return base * (1.0 + 0.25 * random.random())

    def _send(self, path: str, payload: str) -> tuple[int, bytes, str | None]:
        """POST and read the reply, at most :data:`MAX_REPLY_BYTES` of it: ``(status, body,
        Retry-After)``. A longer reply stops being read there (VLMError ``malformed_response``)."""
        with self._http().stream("POST", path, content=payload) as resp:
            length = resp.headers.get("content-length", "")
            if length.isdigit() and int(length) > MAX_REPLY_BYTES:
                raise _TooLong(int(length))
            body = bytearray()
            for block in resp.iter_bytes():
                body += block
                if len(body) > MAX_REPLY_BYTES:
                    raise _TooLong(len(body))
            return resp.status_code, bytes(body), resp.headers.get("retry-after")

    def post(self, path: str, body: dict[str, Any], *, who: str) -> dict[str, Any]:
        """POST JSON and return the decoded object; ``who`` prefixes error messages."""
        payload = dumps_body(body)
        attempts = self.max_retries + 1
        reason, detail = "error", ""
        for attempt in range(attempts):
            retry_after = None
            with self._sem:
                try:
                    status, raw, retry_after = self._send(path, payload)
                except _TooLong as e:
                    raise VLMError(f"{who}: malformed response (more than {MAX_REPLY_BYTES:,} bytes: {e.args[0]:,} "
                                   "read when reading stopped)", reason="malformed_response", attempts=attempt + 1) from None
                except httpx.TimeoutException as e:
                    reason, detail = "timeout", self.scrub(f"{type(e).__name__}: {e}")
                except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
                    reason, detail = "connect", self.scrub(f"{type(e).__name__}: {e}")
                else:
                    text = raw.decode("utf-8", "replace")
                    if status == 200:
                        try:
                            data = json.loads(raw)
                        except (ValueError, RecursionError) as e:  # nesting past the parser's stack too
                            raise VLMError(f"{who}: malformed response (not JSON): {self.scrub(text)[:300]!r}",
                                           reason="malformed_response", attempts=attempt + 1) from e
                        if not isinstance(data, dict):
                            raise VLMError(f"{who}: malformed response (not an object): {self.scrub(text)[:300]!r}",
                                           reason="malformed_response", attempts=attempt + 1)
                        return data
                    # Scrubbed before the cut, so no part of a credential is left at the edge.
                    reason, detail = f"http_{status}", self.scrub(text)[:500]
                    if status not in RETRY_STATUSES and status < 500:
                        raise VLMError(f"{who}: HTTP {status}: {detail}", reason=reason,
                                       attempts=attempt + 1)
            if attempt + 1 < attempts:
                time.sleep(self._delay(attempt, retry_after))
        raise VLMError(f"{who}: failed after {attempts} attempts ({reason}): {detail}", reason=reason,
                       attempts=attempts)
