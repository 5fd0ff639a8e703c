"""Trajectory records: one row per agent step, one summary per session, and their tables.

Step rows are what the memory architectures replay (URL, title, image reference) plus what the
agent did (thought, raw reply, parsed action, validity) and what it cost (latency, tokens).
``j`` is the official 0-based session index (the one the seeding formulas use); the analysis
``encoding`` table reports sessions 1-based (``j + 1``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from typing import Any

from vismem.env.storefront.catalog import CATEGORIES, STYLES, url_hash

#: Bump when a column changes meaning or type; readers check it.
TRAJECTORY_SCHEMA_VERSION = 1

PRODUCT_RE = re.compile(r"^/product/([0-9a-f]{6,16})$")

#: Step status values: ``ok`` (a valid action), ``invalid`` (the reply had no valid action),
#: ``failed`` (the model call failed after retries; no reply).
STATUSES = ("ok", "invalid", "failed")


@lru_cache(maxsize=1)
def style_of_hash() -> dict[str, str]:
    """Product hash → collection style, from the frozen v2 hash formula (no data files needed)."""
    return {url_hash(c, s, i): s for c in CATEGORIES for s in STYLES for i in range(10)}


def product_hash(url: str) -> str | None:
    """The product hash of a ``/product/<hash>`` URL (query string ignored), else None."""
    m = PRODUCT_RE.match(url.split("?", 1)[0])
    return m.group(1) if m else None


@dataclass
class StepRecord:
    """One agent step. ``url``/``title``/``image_key`` describe the page observed at its start."""

    backend: str
    seed: int
    j: int
    category: str
    n_steps: int
    step: int
    url: str
    title: str
    description: str
    url_hash: str | None
    style: str | None
    image_key: str | None          # blobs/sha256/<hex>.<ext> in the store, None without image
    n_images: int                  # images sent to the model this step (observation + memory)
    status: str                    # ok | invalid | failed
    action_type: str | None
    action_arg: str | None         # navigate URL, card index or product hash
    action_text: str | None        # the Action line the parser read
    thought: str | None
    reply: str | None              # the raw model reply, cut to REPLY_CAP chars (None when the call failed)
    error: str | None              # model-call failure, invalid-reply reason, or that the reply was cut
    exec_error: str | None         # the environment failed to execute the action
    forced_nav: bool               # terminal action during encoding -> nudge + back to category
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None

    @property
    def valid(self) -> bool:
        return self.status == "ok"


#: Column order of a trajectory table (``valid`` is derived from ``status``).
STEP_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(StepRecord)) + ("valid",)


@dataclass
class SessionResult:
    """A finished session: its steps, the products it visited and summary statistics."""

    backend: str
    backend_name: str             # display name, e.g. ``scripted-shopper (stand-in)``
    stand_in: bool
    seed: int
    j: int
    category: str
    n_steps: int
    steps: list[StepRecord] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def visits(self) -> list[str]:
        """Product hashes of every step that started on a product page (with repeats)."""
        return [s.url_hash for s in self.steps if s.url_hash]

    @property
    def visited(self) -> list[str]:
        """Distinct visited products in first-seen order (the session's recall probes)."""
        return list(dict.fromkeys(self.visits))

    @property
    def styles(self) -> list[str]:
        """Distinct styles of the visited products, in first-seen order."""
        return list(dict.fromkeys(s.style for s in self.steps if s.url_hash and s.style))

    def summary(self) -> dict[str, Any]:
        """JSON-able per-session statistics (the paper's Table 3 quantities and health counts)."""
        statuses = [s.status for s in self.steps]
        lat = [s.latency_s for s in self.steps if s.status != "failed"]
        return {
            "backend": self.backend, "backend_name": self.backend_name, "stand_in": self.stand_in,
            "seed": self.seed, "j": self.j, "category": self.category, "n_steps": self.n_steps,
            "steps": len(self.steps), "visits": len(self.visits),
            "distinct_products": len(self.visited), "styles": len(self.styles),
            "visited": self.visited, "style_list": self.styles,
            "invalid_actions": statuses.count("invalid"), "failed_calls": statuses.count("failed"),
            "exec_errors": sum(1 for s in self.steps if s.exec_error),
            "terminal_actions": sum(1 for s in self.steps if s.forced_nav),
            "terminated": "step_cap",
            "mean_latency_s": (sum(lat) / len(lat)) if lat else None,
            "prompt_tokens": sum(s.prompt_tokens or 0 for s in self.steps),
            "completion_tokens": sum(s.completion_tokens or 0 for s in self.steps),
            "wall_s": self.wall_s,
            "trajectory_schema_version": TRAJECTORY_SCHEMA_VERSION,
        }


#: Columns that vary from run to run (wall-clock measurements). They live in a sidecar table so
#: the trajectory itself is byte-identical for deterministic backends.
TIMING_COLUMNS: tuple[str, ...] = ("latency_s",)

_SCHEMA_NAMES = {
    "backend": "String", "seed": "Int64", "j": "Int64", "category": "String", "n_steps": "Int64",
    "step": "Int64", "url": "String", "title": "String", "description": "String",
    "url_hash": "String", "style": "String", "image_key": "String", "n_images": "Int64",
    "status": "String", "action_type": "String", "action_arg": "String", "action_text": "String",
    "thought": "String", "reply": "String", "error": "String", "exec_error": "String",
    "forced_nav": "Boolean", "latency_s": "Float64", "prompt_tokens": "Int64",
    "completion_tokens": "Int64", "valid": "Boolean",
}


def steps_table(steps: list[StepRecord], *, timing: bool = True) -> Any:
    """The steps as a Polars frame with fixed dtypes (empty sessions keep the schema).

    ``timing=False`` leaves out :data:`TIMING_COLUMNS` (what the cache stores as the trajectory).
    """
    import polars as pl

    schema = {k: getattr(pl, v) for k, v in _SCHEMA_NAMES.items() if timing or k not in TIMING_COLUMNS}
    rows = [{k: v for k, v in {**asdict(s), "valid": s.valid}.items() if k in schema} for s in steps]
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def timing_table(steps: list[StepRecord]) -> Any:
    """``step`` plus :data:`TIMING_COLUMNS` of every step."""
    import polars as pl

    return pl.DataFrame({"step": [s.step for s in steps], "latency_s": [float(s.latency_s) for s in steps]},
                        schema={"step": pl.Int64, "latency_s": pl.Float64})


def steps_from_table(df: Any) -> list[StepRecord]:
    """Rebuild step records from a trajectory table (timing columns default to 0 when absent)."""
    names = [f.name for f in fields(StepRecord)]
    return [StepRecord(**{k: row.get(k, 0.0 if k in TIMING_COLUMNS else None) for k in names})
            for row in df.iter_rows(named=True)]
