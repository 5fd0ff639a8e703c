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

import io
import json
import re
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from vismem.core.store import Store

PROBE_ROOT = "probes"
SCHEMA_VERSION = 1
#: Bump when the recall protocol (loop semantics, cache layout) changes what a unit produces.
#: v2: each step of the log records its memory block (``memory_text``) for the trajectory viewer.
PROTOCOL_VERSION = "dmv-f2-recall.v2"

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
    """A unit's probe rows as a Polars frame with fixed dtypes (the step log as JSON)."""
    import polars as pl

    schema = {"probe_id": pl.String, "at_session": pl.Int64, "target_session": pl.Int64, "reach": pl.Int64,
              "target_hash": pl.String, "cue_color": pl.String, "cue_object": pl.String, "cue": pl.String,
              "target_url": pl.String, "final_url": pl.String, "correct": pl.Boolean, "steps": pl.Int64,
              "vlm_calls": pl.Int64, "failure": pl.String, "terminated_by": pl.String, "bank_size": pl.Int64,
              "encoding_position": pl.Int64, "log": pl.String}
    data = [{**{k: r.get(k) for k in schema if k != "log"}, "log": json.dumps(r.get("log", []), default=str)}
            for r in rows]
    return pl.DataFrame(data, schema=schema) if data else pl.DataFrame(schema=schema)


class ProbeCache:
    """Read and write the probe units of one (chain, architecture key). Picklable."""

    def __init__(self, store: "Store", slug: str, seed: int, key: str) -> None:
        self.store, self.slug, self.seed, self.key = store, slug, int(seed), key

    def prefix(self) -> str:
        return f"{PROBE_ROOT}/{self.slug}/{self.seed}/{self.key}"

    def rows_key(self, set_name: str, j: int) -> str:
        return f"{self.prefix()}/{set_name}/s{j}.parquet"

    def done_key(self, set_name: str, j: int) -> str:
        return f"{self.prefix()}/{set_name}/s{j}.done.json"

    def is_done(self, set_name: str, j: int) -> bool:
        return self.store.exists(self.done_key(set_name, j))

    def done_units(self) -> set[tuple[str, int]]:
        """Every finished ``(set, j)`` (one listing)."""
        out = set()
        for key in self.store.iter_keys(self.prefix()):
            m = _DONE_RE.search(key)
            if m:
                out.add((m.group(1), int(m.group(2))))
        return out

    def write(self, set_name: str, j: int, rows: list[dict[str, Any]], *, meta: dict[str, Any]) -> dict[str, Any]:
        """Write the rows, then the done marker; returns the summary."""
        self.store.write_table(self.rows_key(set_name, j), probe_rows_table(rows), schema_version=SCHEMA_VERSION)
        summary = {"slug": self.slug, "seed": self.seed, "arch_key": self.key, "set": set_name, "j": j,
                   "probes": len(rows), "correct": sum(1 for r in rows if r.get("correct")),
                   "vlm_calls": sum(int(r.get("vlm_calls") or 0) for r in rows), **meta}
        self.store.put_json(self.done_key(set_name, j), summary)
        return summary

    def read_summary(self, set_name: str, j: int) -> dict[str, Any]:
        return self.store.get_json(self.done_key(set_name, j))

    def read_rows(self, set_name: str, j: int) -> Any:
        import polars as pl

        return pl.read_parquet(io.BytesIO(self.store.get_bytes(self.rows_key(set_name, j))))


def read_units(store: "Store", units: Iterable[tuple[str, int, str, str, int]]) -> Any:
    """Concatenate the rows of finished units ``(slug, seed, arch_key, set, j)``."""
    import polars as pl

    parts = [ProbeCache(store, slug, seed, key).read_rows(set_name, j).with_columns(
        pl.lit(slug).alias("chain_slug"), pl.lit(int(seed)).alias("seed"), pl.lit(key).alias("arch_key"),
        pl.lit(set_name).alias("set"))
        for slug, seed, key, set_name, j in units]
    return pl.concat(parts, how="vertical_relaxed") if parts else None
