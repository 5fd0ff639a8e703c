"""One run of a run id at a time per store: a lease beside its manifest.

Two processes running the same config on one store would write the same manifest and caches
at once (each printing the other's stage times). A run takes ``runs/<run_id>/lease.json`` before
it writes anything, keeps it fresh while it runs (a heartbeat thread) and gives it back when it
ends; a second run finds it held and stops with one line. A lease whose heartbeat is older than
:data:`STALE_S` belongs to a run that died without giving it back (SIGKILL, a lost node) and is
taken over, and so is one whose process on this host is gone. Timestamps here decide liveness
only, never what a run computes.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from vismem.core.errors import StoreError
from vismem.core.lifeline import alive

if TYPE_CHECKING:
    from vismem.core.store import Store

#: Seconds between heartbeats, and after which a silent lease counts as abandoned.
HEARTBEAT_S = 20.0
STALE_S = 90.0
#: Seconds between writing the lease and reading it back. A store has no compare-and-swap: two
#: runs that both found it free both write it, and the later write wins. Reading back at once
#: would let the first writer go on before the second had written; after this wait it sees the
#: other's lease and stops (two runs still both go on only if one took longer than this from
#: finding the lease free to writing it).
SETTLE_S = 0.5


class RunBusy(StoreError):
    """Another live process holds the run's lease in this store."""


class RunLease:
    """Context manager holding ``runs/<run_id>/lease.json`` for the duration of a run."""

    def __init__(self, store: "Store", run_id: str, *, heartbeat_s: float = HEARTBEAT_S,
                 stale_s: float = STALE_S, settle_s: float = SETTLE_S) -> None:
        self.store, self.run_id = store, run_id
        self.key = f"runs/{run_id}/lease.json"
        self.heartbeat_s, self.stale_s, self.settle_s = heartbeat_s, stale_s, settle_s
        self.me = {"owner": uuid.uuid4().hex, "pid": os.getpid(), "host": socket.gethostname()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _current(self) -> dict[str, Any] | None:
        try:
            lease = self.store.get_json(self.key)
        except (FileNotFoundError, ValueError):  # none, or torn: nobody holds it
            return None
        return lease if isinstance(lease, dict) else None

    def _live(self, held: dict[str, Any]) -> bool:
        """Whether the holder still runs: its process on this host, else a fresh heartbeat."""
        if held.get("host") == self.me["host"] and isinstance(held.get("pid"), int):
            return alive(held["pid"])  # a killed run gives its lease up at once, not after STALE_S
        return time.time() - float(held.get("heartbeat", 0)) < self.stale_s

    def _write(self) -> None:
        self.store.put_json(self.key, {**self.me, "heartbeat": time.time()})

    def __enter__(self) -> "RunLease":
        held = self._current()
        if held and held.get("owner") != self.me["owner"] and self._live(held):
            raise RunBusy(f"run {self.run_id} is already running in this store (pid {held.get('pid')} on "
                          f"{held.get('host')}, alive {time.time() - float(held['heartbeat']):.0f} s ago): wait for "
                          "it to finish, or run under another name (--set name=...)")
        self._write()
        time.sleep(self.settle_s)
        if (self._current() or {}).get("owner") != self.me["owner"]:  # two runs took it at once: one yields
            raise RunBusy(f"run {self.run_id} was started twice at once in this store: this one stops")
        self._thread = threading.Thread(target=self._beat, name="vismem-lease", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self._write()
            except Exception:  # noqa: BLE001 - a store hiccup: the next beat tries again
                pass

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            if (self._current() or {}).get("owner") == self.me["owner"]:
                self.store.delete(self.key)
        except Exception:  # noqa: BLE001 - a store that died keeps the lease: our pid is gone by the
            pass  # next run (taken over at once on this host), its heartbeat goes stale elsewhere
