"""A capacity model for the local OpenAI-compatible server: a simulated GPU fleet.

``N`` concurrent slots (a replica's batch, or a fleet's ``replicas x ongoing requests``); each
chat request holds a slot for a service time computed from the request itself::

    service_s = (base_s + per_image_s * images + per_token_s * tokens) * jitter

``tokens`` are the reply's completion tokens (``tokens="completion"``) or the request's
``max_tokens`` cap (``tokens="max_tokens"``); ``jitter`` is uniform in ``[1 - jitter, 1 + jitter]``
from a generator seeded by ``seed``. Requests beyond ``N`` wait for a slot (an asyncio semaphore,
first come first served). :class:`FleetStats` integrates what happened so that a benchmark can ask
``GET /v1/stats``: calls, busy slot-seconds, utilisation = busy slot-seconds / (N x wall), mean and
max requests in flight (queued or served) and in service, and the queue wait.

The wall runs from the first arrival after the last reset to the last departure (to now while
requests are in flight), so idle time before a workload starts does not count against it.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

from vismem.core.errors import ConfigError


@dataclass(frozen=True)
class CapacityModel:
    """Slots and the service time per request (see the module doc)."""

    slots: int = 64
    base_s: float = 0.4
    per_image_s: float = 0.0
    per_token_s: float = 0.0
    tokens: Literal["completion", "max_tokens"] = "completion"
    jitter: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if int(self.slots) < 1:
            raise ConfigError(f"capacity model: slots must be >= 1, got {self.slots}")
        for name in ("base_s", "per_image_s", "per_token_s"):
            if float(getattr(self, name)) < 0:
                raise ConfigError(f"capacity model: {name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= float(self.jitter) < 1:
            raise ConfigError(f"capacity model: jitter must be in [0, 1), got {self.jitter}")
        if self.tokens not in ("completion", "max_tokens"):
            raise ConfigError(f"capacity model: tokens must be 'completion' or 'max_tokens', got {self.tokens!r}")

    def service_s(self, images: int, tokens: int, u: float = 0.5) -> float:
        """Seconds one request holds a slot; ``u`` in [0, 1) draws the jitter (0.5: none)."""
        mean = self.base_s + self.per_image_s * images + self.per_token_s * tokens
        return mean * (1.0 + self.jitter * (2.0 * u - 1.0))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_images(body: Any) -> int:
    """Image parts in an OpenAI chat body (``image_url`` content parts of every message)."""
    n = 0
    for m in (body.get("messages") or []) if isinstance(body, dict) else []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            n += sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    return n


def requested_tokens(body: Any) -> int:
    """The request's completion cap (``max_completion_tokens`` / ``max_tokens``; 512 when absent)."""
    try:
        return int(body.get("max_completion_tokens") or body.get("max_tokens") or 512)
    except (AttributeError, TypeError, ValueError):
        return 512


class FleetStats:
    """Time integrals of requests in the system and in service (thread-safe; see the module doc)."""

    def __init__(self, slots: int) -> None:
        self.slots = int(slots)
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.calls = self.errors = 0
            self.in_flight = self.busy = self.max_in_flight = self.max_busy = 0
            self.first: float | None = None
            self.last = 0.0
            self._t = 0.0
            self.flight_area = self.busy_area = 0.0
            self.wait_sum = self.wait_max = self.service_sum = 0.0

    def _advance(self, now: float) -> None:
        if self.first is not None:
            dt = now - self._t
            self.flight_area += self.in_flight * dt
            self.busy_area += self.busy * dt
        self._t = now

    def arrive(self) -> float:
        now = time.monotonic()
        with self._lock:
            if self.first is None:
                self.first = now
            self._advance(now)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return now

    def start(self, arrived: float) -> float:
        now = time.monotonic()
        with self._lock:
            self._advance(now)
            self.busy += 1
            self.max_busy = max(self.max_busy, self.busy)
            wait = now - arrived
            self.wait_sum += wait
            self.wait_max = max(self.wait_max, wait)
        return now

    def finish(self, started: float | None, ok: bool) -> None:
        now = time.monotonic()
        with self._lock:
            self._advance(now)
            self.in_flight -= 1
            if started is not None:
                self.busy -= 1
                self.service_sum += now - started
            self.calls += 1
            self.errors += 0 if ok else 1
            self.last = now

    def snapshot(self) -> dict[str, Any]:
        """The figures ``GET /v1/stats`` returns."""
        now = time.monotonic()
        with self._lock:
            self._advance(now)
            end = now if self.in_flight else self.last
            wall = max(0.0, end - self.first) if self.first is not None else 0.0
            calls = self.calls
            return {"slots": self.slots, "calls": calls, "errors": self.errors, "in_flight": self.in_flight,
                    "wall_s": wall, "busy_slot_s": self.busy_area,
                    "utilisation": self.busy_area / (self.slots * wall) if wall > 0 else 0.0,
                    "calls_per_s": calls / wall if wall > 0 else 0.0,
                    "mean_in_flight": self.flight_area / wall if wall > 0 else 0.0,
                    "max_in_flight": self.max_in_flight,
                    "mean_busy": self.busy_area / wall if wall > 0 else 0.0, "max_busy": self.max_busy,
                    "mean_service_s": self.service_sum / calls if calls else 0.0,
                    "mean_queue_wait_s": self.wait_sum / calls if calls else 0.0,
                    "max_queue_wait_s": self.wait_max}


class SimulatedFleet:
    """A :class:`CapacityModel` at work: slots (created on the server's loop), jitter and stats."""

    def __init__(self, model: CapacityModel) -> None:
        self.model = model
        self.stats = FleetStats(model.slots)
        self._rng = random.Random(model.seed)
        self._rng_lock = threading.Lock()
        self._sem: asyncio.Semaphore | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        if self._sem is None:  # bound to the serving loop, which exists only once requests arrive
            self._sem = asyncio.Semaphore(self.model.slots)
        return self._sem

    def _u(self) -> float:
        with self._rng_lock:
            return self._rng.random()

    async def serve(self, body: Any, call: Any) -> tuple[int, dict[str, Any]]:
        """Queue for a slot, run ``call()`` (the backend, in a thread) and hold the slot until the
        modelled service time has passed (a backend slower than the model holds it longer)."""
        arrived = self.stats.arrive()
        started = None
        ok = False
        try:
            async with self._semaphore():
                started = self.stats.start(arrived)
                status, content = await asyncio.to_thread(call)
                ok = status == 200
                if self.model.tokens == "completion" and ok:
                    tokens = int(((content.get("usage") or {}).get("completion_tokens")) or 0)
                else:
                    tokens = requested_tokens(body)
                service = self.model.service_s(count_images(body), tokens, self._u())
                remaining = service - (time.monotonic() - started)
                if remaining > 0:
                    await asyncio.sleep(remaining)
                return status, content
        finally:
            self.stats.finish(started, ok)
