"""The probe cache: probe results keyed by (chain, architecture spec, probe set, recall session).

Layout (relative to the store root, shared by every run that probes the same chain the same way)::

    probes/<chain-slug>/<seed>/<arch-key>/<set>/s<j>.parquet     one row per probe (with its step log)
    probes/<chain-slug>/<seed>/<arch-key>/<set>/s<j>.done.json   the unit's summary, written LAST

``<chain-slug>`` is the browsing back-end's trajectory slug (it names the model, the protocol,
the served images and the cue assignment); ``<arch-key>`` hashes the architecture's resolved spec
(components included, transport left out), the recalling VLM and the recall protocol;
``<set>`` is ``ex`` (exhaustive probes, shared by every chain length: a probe of recall session
``j`` sees only sessions ``0..j``) or ``mc<J>`` (a Monte Carlo draw of a chain of J sessions). The
done marker is the commit point: a unit without one is re-run from scratch and its object
overwritten, so a run killed at any point resumes with no duplicate rows.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Iterable

from vismem.core.store import parquet_bytes
from vismem.core.cache import UnitCache

if TYPE_CHECKING:
    from vismem.core.store import Store

PROBE_ROOT = "probes"
SCHEMA_VERSION = 1
#: Bump when the recall protocol (loop semantics, cache layout) changes what a unit produces.
#: v2: each step of the log records its memory block (``memory_text``) for the trajectory viewer.
#: v3: units committed under v2 may carry NoMemory rows with ``bank_size`` 0 (bank size was then the
#: architecture's, not the probe's) and probes whose recall call failed scored as wrong; the new key
#: makes every such unit be probed again instead of read back.
PROTOCOL_VERSION = "dmv-f2-recall.v3"

_DONE_RE = re.compile(r"/(ex|mc\d+)/s(\d+)\.done\.json$")


def arch_key(arch_spec: dict[str, Any], recaller: dict[str, Any], protocol: dict[str, Any]) -> str:
    """``<architecture name>--<10 hex>`` over the resolved architecture spec (its components'
    transport args removed), the recalling VLM's spec and the recall protocol settings."""
    from vismem.core.identity import content_digest, content_key

    rec = {"name": recaller["name"], "args": content_key(recaller.get("args") or {})}
    doc = {"v": PROTOCOL_VERSION, "arch": content_key(arch_spec["spec"]), "recaller": rec, **protocol}
    name = re.sub(r"[^a-z0-9._-]+", "-", str(arch_spec["name"]).lower()).strip("-") or "arch"
    return f"{name}--{content_digest(doc, 10)}"


def probe_rows_table(rows: list[dict[str, Any]]) -> Any:
    """A unit's probe rows as a Polars frame with fixed dtypes (the step log as JSON; ``scores``,
    JSON, per step and recalled item the channel scores, is a column of its own so the ``log``
    of a unit is what it was before scores were recorded: no protocol bump, and units written
    before have no ``scores`` column, which readers treat as not recorded)."""
    import polars as pl

    schema = {"probe_id": pl.String, "at_session": pl.Int64, "target_session": pl.Int64, "reach": pl.Int64,
              "target_hash": pl.String, "cue_color": pl.String, "cue_object": pl.String, "cue": pl.String,
              "target_url": pl.String, "final_url": pl.String, "correct": pl.Boolean, "steps": pl.Int64,
              "vlm_calls": pl.Int64, "failure": pl.String, "terminated_by": pl.String, "bank_size": pl.Int64,
              "encoding_position": pl.Int64, "log": pl.String, "scores": pl.String}
    data = [{**{k: r.get(k) for k in schema if k not in ("log", "scores")},
             "log": json.dumps(r.get("log", []), default=str), "scores": json.dumps(r.get("scores") or [])}
            for r in rows]
    return pl.DataFrame(data, schema=schema) if data else pl.DataFrame(schema=schema)


class ProbeCache:
    """Read and write the probe units of one (chain, architecture key). Picklable.

    A unit ``(set, j)`` is a :class:`vismem.core.cache.UnitCache` unit: its rows object, then
    its done marker recording the rows' size and digest (a damaged object is never read).
    """

    def __init__(self, store: "Store", slug: str, seed: int, key: str) -> None:
        self.store, self.slug, self.seed, self.key = store, slug, int(seed), key
        self.units = UnitCache(store, self.prefix())

    def prefix(self) -> str:
        return f"{PROBE_ROOT}/{self.slug}/{self.seed}/{self.key}"

    def rows_key(self, set_name: str, j: int) -> str:
        return self.units.key(f"{set_name}/s{j}", ".parquet")

    def done_key(self, set_name: str, j: int) -> str:
        return self.units.done_key(f"{set_name}/s{j}")

    def is_done(self, set_name: str, j: int) -> bool:
        return self.units.is_done(f"{set_name}/s{j}")

    def done_units(self) -> set[tuple[str, int]]:
        """Every finished ``(set, j)`` (one listing)."""
        return {(m.group(1), int(m.group(2))) for m in self.units.done_units(_DONE_RE)}

    def write(self, set_name: str, j: int, rows: list[dict[str, Any]], *, meta: dict[str, Any]) -> dict[str, Any]:
        """Write the rows, then the done marker; returns the summary."""
        summary = {"slug": self.slug, "seed": self.seed, "arch_key": self.key, "set": set_name, "j": j,
                   "probes": len(rows), "correct": sum(1 for r in rows if r.get("correct")),
                   "vlm_calls": sum(int(r.get("vlm_calls") or 0) for r in rows), **meta}
        data = parquet_bytes(probe_rows_table(rows), schema_version=SCHEMA_VERSION)
        return self.units.commit(f"{set_name}/s{j}", {".parquet": data}, summary)

    def read_summary(self, set_name: str, j: int) -> dict[str, Any]:
        return self.units.read_summary(f"{set_name}/s{j}")

    def read_rows(self, set_name: str, j: int) -> Any:
        """A finished unit's rows, verified against its done marker (``CacheDamaged`` when damaged)."""
        return self.units.read_table(f"{set_name}/s{j}", ".parquet")

    def verify(self, set_name: str, j: int) -> list[str]:
        """One line per damaged object of a finished unit (empty when whole)."""
        return self.units.verify(f"{set_name}/s{j}")

    def discard(self, set_name: str, j: int) -> None:
        """Forget a finished unit (a damaged one): the next probes run redoes it."""
        self.units.discard(f"{set_name}/s{j}")


def discard_reading(store: "Store", slug: str, seed: int, j: int) -> int:
    """Forget every finished probe unit of chain ``(slug, seed)``, any architecture, that read
    session ``j``: exhaustive units recalled at session ``j`` or later (they replay sessions
    ``0..j'``) and every Monte Carlo unit (its draw reads the whole chain). Used when session ``j``
    is browsed again (an outage cached before the retry rule), so no unit scores the old session;
    returns how many were discarded."""
    n = 0
    for m in UnitCache(store, f"{PROBE_ROOT}/{slug}/{int(seed)}").done_units(_DONE_RE):
        if m.group(1).startswith("mc") or int(m.group(2)) >= j:
            store.delete(m.string)
            n += 1
    return n


def read_units(store: "Store", units: Iterable[tuple[str, int, str, str, int]]) -> Any:
    """Concatenate the rows of finished units ``(slug, seed, arch_key, set, j)``."""
    import polars as pl

    parts = [ProbeCache(store, slug, seed, key).read_rows(set_name, j).with_columns(
        pl.lit(slug).alias("chain_slug"), pl.lit(int(seed)).alias("seed"), pl.lit(key).alias("arch_key"),
        pl.lit(set_name).alias("set"))
        for slug, seed, key, set_name, j in units]
    # diagonal: units written before the ``scores`` column sit beside those with it.
    return pl.concat(parts, how="diagonal_relaxed") if parts else None
