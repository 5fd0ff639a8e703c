"""The ``report`` stage: score whatever result tables the run has, write the viewers and the report.

Reads ``runs/<run_id>/results/<kind>.parquet`` (kinds and columns: ``vismem.analysis.schemas``), writes
the static viewers (``vismem.pipelines.viewers``: ``trajectories.html`` for DMV-Bench sessions and
probes, ``samples.html`` for MemShot questions) and then ``runs/<run_id>/report/index.html``,
``summary.md``, ``figures/`` and ``tables/``; report rows link to the viewers. Sections without
data are listed in one line at the end; a malformed table or a failed viewer is reported, not
fatal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vismem.pipelines.stages import Stage

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext


def options_from(config: Any) -> Any:
    """``vismem.analysis.report.ReportOptions`` from a run config (the seed flows from the run's seed)."""
    from vismem.analysis.report import ReportOptions

    rc = config.report
    return ReportOptions(n_resamples=rc.n_resamples, seed=config.seed, n_bins=rc.n_bins,
                         compare=tuple(rc.compare) if rc.compare else None, common_probes=rc.common_probes,
                         exclude_categories=tuple(rc.exclude_categories))


def build(store: Any, run_id: str, *, options: Any, manifest: dict[str, Any] | None = None,
          viewers: bool = True) -> dict[str, Any]:
    """Write a run's viewers (unless ``viewers`` is False) and its report; returns the summary.

    Shared by the stage and ``vismem report``. The summary is ``vismem.analysis.report.report_run``'s
    plus ``viewers`` (store URLs) and ``viewer_errors``.
    """
    from vismem.analysis.report import load_results, report_run
    from vismem.pipelines.viewers import write_viewers

    written: dict[str, str] = {}
    errors: dict[str, str] = {}
    results = load_results(store, f"runs/{run_id}")  # read once, for the viewers and the report
    if viewers:
        written, errors = write_viewers(store, run_id, manifest=manifest, tables=results[0])
    summary = report_run(store, run_id, options=options, manifest=manifest, viewers=written, results=results)
    if errors:
        summary["viewer_errors"] = errors
    return summary


def run(ctx: "RunContext") -> dict[str, Any]:
    """Build and write the run's viewers and report; returns what was found and where it is."""
    if not ctx.config.report.enabled:
        return {"status": "disabled"}
    manifest = getattr(ctx.manifest, "data", None)
    summary = build(ctx.store, ctx.run_id, options=options_from(ctx.config), manifest=manifest)
    ctx.logger.info("report: %s (found %s; viewers %s)", summary["html"], ", ".join(summary["found"]) or "no results",
                    ", ".join(summary.get("viewers", {})) or "none")
    return summary


STAGE = Stage(name="report", section="report", run=run)
