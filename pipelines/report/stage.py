"""The ``report`` stage: score whatever result tables the run has, write the viewers and the report.

Reads ``runs/<run_id>/results/<kind>.parquet`` (kinds and columns: ``vismem.analysis.schemas``), writes
the static viewers (``vismem.pipelines.report.viewers``: ``trajectories.html`` for DMV-Bench sessions and
probes, ``samples.html`` for MemShot questions) and then ``runs/<run_id>/report/index.html``,
``summary.md``, ``figures/`` and ``tables/``; report rows link to the viewers. Sections without
data are listed in one line at the end; a malformed table or a failed viewer is reported, not
fatal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vismem.pipelines.report.build import build, options_from
from vismem.pipelines.stage import Stage, count

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext


def run(ctx: "RunContext") -> dict[str, Any]:
    """Build and write the run's viewers and report; returns what was found and where it is."""
    if not ctx.config.report.enabled:
        return {"status": "disabled"}
    import copy

    # The manifest as the report will be read: by then its own stage is done (it says "running"
    # while this stage writes it).
    manifest = copy.deepcopy(ctx.manifest.data)
    if isinstance((manifest.get("stages") or {}).get("report"), dict):
        manifest["stages"]["report"]["status"] = "done"
    summary = build(ctx.store, ctx.run_id, options=options_from(ctx.config), manifest=manifest, config=ctx.config)
    ctx.logger.info("report: %s (found %s; viewers %s)", summary["html"], ", ".join(summary["found"]) or "no results",
                    ", ".join(summary.get("viewers", {})) or "none")
    return summary


def describe(s: dict[str, Any]) -> str:
    """One line of what ran and what was reused (the end-of-run summary)."""
    v = ", ".join(s.get("viewers") or {}) or "none"
    return f"{count(s.get('tables'))} tables, {count(s.get('figures'))} figures; viewers: {v}"


STAGE = Stage(name="report", describe=describe, section="report", run=run, needs_ray=False)
