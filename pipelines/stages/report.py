"""The ``report`` stage: score whatever result tables the run has and write the report.

Reads ``runs/<run_id>/results/<kind>.parquet`` (kinds and columns: ``analysis.schemas``),
writes ``runs/<run_id>/report/index.html``, ``summary.md``, ``figures/`` and ``tables/``.
Sections without data say so; a malformed table is reported, not fatal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipelines.stages import Stage

if TYPE_CHECKING:
    from pipelines.context import RunContext


def options_from(config: Any) -> Any:
    """``analysis.report.ReportOptions`` from a run config (the seed flows from the run's seed)."""
    from analysis.report import ReportOptions

    rc = config.report
    return ReportOptions(n_resamples=rc.n_resamples, seed=config.seed, n_bins=rc.n_bins,
                         compare=tuple(rc.compare) if rc.compare else None, common_probes=rc.common_probes,
                         exclude_categories=tuple(rc.exclude_categories))


def run(ctx: "RunContext") -> dict[str, Any]:
    """Build and write the run's report; returns what was found and where the report is."""
    from analysis.report import report_run

    if not ctx.config.report.enabled:
        return {"status": "disabled"}
    manifest = getattr(ctx.manifest, "data", None)
    summary = report_run(ctx.store, ctx.run_id, options=options_from(ctx.config), manifest=manifest)
    ctx.logger.info("report: %s (found %s)", summary["html"], ", ".join(summary["found"]) or "no results")
    return summary


STAGE = Stage(name="report", section="report", run=run)
