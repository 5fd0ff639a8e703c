"""The trajectory cache: encoding sessions keyed by ``(backend, seed, j)`` in the object store.

Layout (relative to the store root, shared by every run that uses the same backend)::

    trajectories/<backend-slug>/<seed>/<j>.parquet     the step rows (``records.steps_table``)
    trajectories/<backend-slug>/<seed>/<j>.timing.parquet  per-step latency (varies run to run)
    trajectories/<backend-slug>/<seed>/<j>.done.json   the session summary, written LAST
    blobs/sha256/<hex>.<ext>                           observation images, content-addressed

A session is a function of ``(seed, j)`` only, never of the chain length J, so extending J runs
only the new sessions. A session is a unit of :class:`vismem.core.cache.UnitCache`: the
done marker is the commit point (a session without it is re-run from scratch and its Parquet
objects are overwritten; every write is atomic, so a run killed at any point resumes with no
duplicate rows) and records each object's size and digest, so a damaged object is never read.
A finished session whose steps record a failed model call (cached before the encode stage
re-browsed such sessions) is an outage, not a trajectory: :func:`outage_sessions` finds them and
the stage browses them again, while the stages that read chains without encoding refuse them
(:func:`vismem.pipelines.dmv.chains.outage_cached`), so no cached session scores an outage as a
memory failure while every good session stays cached (no protocol-version bump).

The backend slug names the model *and* the protocol settings that change trajectories
(:func:`vismem.pipelines.dmv.protocol.cache_slug`), so a different protocol never reads another's cache.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import TYPE_CHECKING, Any, Iterable

from vismem.agents.records import TRAJECTORY_SCHEMA_VERSION, SessionResult, steps_table, timing_table
from vismem.core.store import parquet_bytes
from vismem.core.cache import UnitCache

if TYPE_CHECKING:
    from vismem.core.store import Store

TRAJECTORY_ROOT = "trajectories"
BLOB_ROOT = "blobs/sha256"

#: Bump when the agent protocol (prompts, loop semantics, the shop's pages) changes what a
#: session produces. v2: breadcrumbs inside ``<main>`` (product-page ``click_index`` targets are
#: ``[collection, 9 siblings]``, as official) and per-backend message layouts.
PROTOCOL_VERSION = "dmv-f2-encode.v2"

_DONE_RE = re.compile(r"/(\d+)/(\d+)\.done\.json$")


def slugify(text: str) -> str:
    """A store-safe slug: lowercase, ``[a-z0-9._-]``, runs of anything else become ``-``."""
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.") or "backend"


def _image_ext(data: bytes) -> str:
    from vismem.serve.openai_format import image_kind

    kind = image_kind(data)
    return "bin" if kind is None else "jpg" if kind == "jpeg" else kind


class TrajectoryCache:
    """Read and write cached sessions of one backend. Picklable (ships to Ray workers)."""

    def __init__(self, store: "Store", backend: str) -> None:
        self.store = store
        self.backend = backend
        self.units = UnitCache(store, self.prefix())
        self._known_blobs: set[str] = set()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"store": self.store, "backend": self.backend}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["store"], state["backend"])  # type: ignore[misc]

    # -- keys ---------------------------------------------------------------------------------
    def prefix(self, seed: int | None = None) -> str:
        base = f"{TRAJECTORY_ROOT}/{self.backend}"
        return base if seed is None else f"{base}/{seed}"

    def steps_key(self, seed: int, j: int) -> str:
        return self.units.key(f"{seed}/{j}", ".parquet")

    def timing_key(self, seed: int, j: int) -> str:
        return self.units.key(f"{seed}/{j}", ".timing.parquet")

    def done_key(self, seed: int, j: int) -> str:
        return self.units.done_key(f"{seed}/{j}")

    # -- state --------------------------------------------------------------------------------
    def is_done(self, seed: int, j: int) -> bool:
        return self.units.is_done(f"{seed}/{j}")

    def pending(self, keys: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """The ``(seed, j)`` keys without a done marker, in the given order."""
        done = self.done_keys()
        return [(s, j) for s, j in keys if (s, j) not in done]

    def done_keys(self) -> set[tuple[int, int]]:
        """Every finished ``(seed, j)`` of this backend (one listing, not one request per key)."""
        return {(int(m.group(1)), int(m.group(2))) for m in self.units.done_units(_DONE_RE)}

    def verify(self, seed: int, j: int) -> list[str]:
        """One line per damaged object of a finished session (empty when whole)."""
        return self.units.verify(f"{seed}/{j}")

    def failed_calls(self, seed: int, j: int) -> int:
        """Model calls of a finished session that failed (an outage the runner turned into a
        forced navigation): the marker's count, or the steps' ``failed`` statuses for a marker
        that records none."""
        n = self.read_summary(seed, j).get("failed_calls")
        if n is None:
            steps = self.units.read_table(f"{seed}/{j}", ".parquet", columns=["status"])
            n = int((steps["status"] == "failed").sum())
        return int(n)

    def discard(self, seed: int, j: int) -> None:
        """Forget a finished session (a damaged one): the next encode run browses it again."""
        self.units.discard(f"{seed}/{j}")

    # -- blobs --------------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        """Store an image once under its content hash; returns its key."""
        key = f"{BLOB_ROOT}/{hashlib.sha256(data).hexdigest()}.{_image_ext(data)}"
        with self._lock:
            if key in self._known_blobs:
                return key
        if not self.store.exists(key):
            self.store.put_bytes(key, data)
        with self._lock:
            self._known_blobs.add(key)
        return key

    # -- sessions -----------------------------------------------------------------------------
    def write(self, result: SessionResult) -> dict[str, Any]:
        """Write the steps and their timings, then the done marker (the commit point).

        The steps object holds no wall-clock values, so a deterministic backend writes the same
        bytes every time. Returns the summary.
        """
        objects = {".parquet": parquet_bytes(steps_table(result.steps, timing=False),
                                             schema_version=TRAJECTORY_SCHEMA_VERSION),
                   ".timing.parquet": parquet_bytes(timing_table(result.steps), schema_version=TRAJECTORY_SCHEMA_VERSION)}
        return self.units.commit(f"{result.seed}/{result.j}", objects, result.summary())

    def read_summary(self, seed: int, j: int) -> dict[str, Any]:
        return self.units.read_summary(f"{seed}/{j}")

    def read_steps(self, seed: int, j: int) -> Any:
        """The step rows of a finished session as a Polars frame, with ``latency_s`` joined in
        (each object verified against the done marker: :class:`CacheDamaged` when damaged)."""
        if not self.is_done(seed, j):
            raise FileNotFoundError(f"session (seed={seed}, j={j}) of {self.backend} is not finished")
        unit = f"{seed}/{j}"
        steps = self.units.read_table(unit, ".parquet")
        timing = self.units.read_table(unit, ".timing.parquet")
        return steps.join(timing.select("step", "latency_s"), on="step", how="left", maintain_order="left")

    def image_keys(self, seed: int, j: int) -> set[str]:
        """The blob keys of the images a finished session observed (its steps verified)."""
        steps = self.units.read_table(f"{seed}/{j}", ".parquet", columns=["image_key"])
        return set(steps["image_key"].drop_nulls().to_list())

    def visited(self, seed: int, j: int) -> list[str]:
        """Distinct products the session visited, first-seen order (the recall probes)."""
        return list(self.read_summary(seed, j)["visited"])


def outage_sessions(caches: list["TrajectoryCache"], keys: Iterable[tuple[int, int, int]],
                    done: list[set[tuple[int, int]]], log: Any) -> list[tuple[int, int, int]]:
    """Discard every finished session among ``keys`` (``(backend index, seed, j)``, ``done`` the
    finished ``(seed, j)`` per back-end) whose steps record a failed model call, so the stage
    browses it again as :func:`vismem.core.cache.heal` redoes a damaged one, with every cached
    probe unit that read it (:func:`vismem.pipelines.dmv.probecache.discard_reading`: they scored
    the old session); returns those keys."""
    from vismem.pipelines.dmv.probecache import discard_reading

    out = []
    for b, s, j in keys:
        if (s, j) in done[b] and (n := caches[b].failed_calls(s, j)):
            caches[b].discard(s, j)
            units = discard_reading(caches[b].store, caches[b].backend, s, j)
            log.warning("trajectories/%s/%s/%s: %d failed model call(s) recorded (an outage, not a trajectory): "
                        "discarded with %d probe units that read it, browsing again", caches[b].backend, s, j, n, units)
            out.append((b, s, j))
    return out


def heal_blobs(caches: list["TrajectoryCache"], keys: Iterable[tuple[int, int, int]],
               done: list[set[tuple[int, int]]], log: Any) -> list[str]:
    """Verify every image blob the finished sessions among ``keys`` observed (``(backend index,
    seed, j)``, ``done`` the finished ``(seed, j)`` per back-end). A damaged (or missing) blob is
    named in one line and deleted, and every session that showed it is discarded with the probe
    units that read it, so the stage browses them again and rewrites the blob (its key is its
    content: every other reference is whole again once it is). Returns one line per blob healed."""
    shown: dict[str, set[tuple[str, int, int]]] = {}
    for b, s, j in keys:
        if (s, j) in done[b]:
            for key in caches[b].image_keys(s, j):
                shown.setdefault(key, set()).add((caches[b].backend, s, j))
    if not shown:
        return []
    dropped = drop_damaged_blobs(caches[0].store, shown)
    for key, line, units in dropped:
        log.warning("%s: discarded with %d session(s) that showed it and %d probe units that read them, browsing again",
                    line, len(shown[key]), units)
    return [line for _, line, _ in dropped]


def drop_damaged_blobs(store: "Store", shown: dict[str, set[tuple[str, int, int]]]) -> list[tuple[str, str, int]]:
    """Check the blobs ``shown`` maps to the sessions ``(slug, seed, j)`` that observed them; delete
    each damaged (or missing) one with those sessions and the probe units that read them (the next
    encode run browses them again and so writes the blob back). Returns ``(key, line, probe units
    discarded)`` per damaged blob."""
    from vismem.core.cache import damaged_blobs
    from vismem.pipelines.dmv.probecache import discard_reading

    out = []
    for key, line in damaged_blobs(store, shown).items():
        store.delete(key)
        units = 0
        for slug, s, j in sorted(shown[key]):
            TrajectoryCache(store, slug).discard(s, j)
            units += discard_reading(store, slug, s, j)
        out.append((key, line, units))
    return out


def verify_blobs(store: "Store", *, discard: bool = False) -> tuple[int, list[str]]:
    """Check every content-addressed blob in the store: ``(blobs checked, one line per damaged
    one)``. With ``discard`` each damaged blob is deleted with every cached session that showed it
    and the probe units that read them (the next encode run browses them again); each line then
    says what went."""
    from vismem.core.blobref import BLOB_ROOT as ROOT
    from vismem.core.cache import damaged_blobs

    keys = list(store.iter_keys(ROOT + "/"))
    bad = damaged_blobs(store, keys)
    if not bad or not discard:
        return len(keys), list(bad.values())
    # which sessions showed each damaged blob: every finished session of every back-end
    caches: dict[str, TrajectoryCache] = {}
    users: dict[str, set[tuple[str, int, int]]] = {k: set() for k in bad}
    for key in store.iter_keys(TRAJECTORY_ROOT + "/"):
        m = re.match(rf"{TRAJECTORY_ROOT}/(.+)/(\d+)/(\d+)\.done\.json$", key)
        if not m:
            continue
        cache = caches.setdefault(m[1], TrajectoryCache(store, m[1]))
        try:
            shown = cache.image_keys(int(m[2]), int(m[3]))
        except Exception:  # noqa: BLE001 - a damaged session: the unit check names and discards it
            continue
        for blob in shown & set(bad):
            users[blob].add((m[1], int(m[2]), int(m[3])))
    return len(keys), [f"{line}; with {len(users[key])} session(s) that showed it and {units} probe units "
                       "(the next encode run browses them again)" for key, line, units in drop_damaged_blobs(store, users)]
