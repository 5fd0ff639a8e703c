"""Building a run's report and viewers: shared by the ``report`` stage and ``vismem report``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.core.store import Store


def options_from(config: "RunConfig") -> Any:
    """``vismem.analysis.report.ReportOptions`` from a run config (the seed flows from the run's seed)."""
    from vismem.analysis.report import ReportOptions

    rc = config.report
    return ReportOptions(n_resamples=rc.n_resamples, seed=config.seed, n_bins=rc.n_bins,
                         compare=tuple(rc.compare) if rc.compare else None, common_probes=rc.common_probes,
                         exclude_categories=tuple(rc.exclude_categories))


def run_config(manifest: dict[str, Any] | None) -> "RunConfig | None":
    """The run's config from its manifest (None when it records none or no longer validates)."""
    from vismem.pipelines.config import RunConfig

    cfg = (manifest or {}).get("config")
    if not isinstance(cfg, dict):
        return None
    try:
        return RunConfig.model_validate(cfg)
    except Exception:  # noqa: BLE001 - an older run's config: the report goes without its side tables
        return None


def build_many(store: "Store", run_ids: list[str], *, options: Any, manifests: dict[str, Any],
               pool_first: tuple[int, ...] = ()) -> dict[str, Any]:
    """One report over several runs of one protocol (``vismem.analysis.report.report_runs``);
    ``ConfigError`` (one line, before any work) when their protocols differ."""
    from vismem.analysis.report import report_runs

    return report_runs(store, run_ids, manifests, options=options, pool_first=pool_first)


def build(store: "Store", run_id: str, *, options: Any, manifest: dict[str, Any] | None = None,
          viewers: bool = True, config: "RunConfig | None" = None) -> dict[str, Any]:
    """Write a run's viewers (unless ``viewers`` is False) and its report; returns the summary.

    Shared by the stage and ``vismem report``. The summary is ``vismem.analysis.report.report_run``'s
    plus ``viewers`` (store URLs) and ``viewer_errors``. ``config``: the run's config, for Table 7
    and the stored captions (:mod:`vismem.pipelines.report.dmv_extras`); a failure there is reported
    in ``extra_errors``, never fatal.
    """
    from vismem.analysis.report import load_results, report_run
    from vismem.core.progress import step
    from vismem.pipelines.report.viewers import write_viewers

    written: dict[str, str] = {}
    errors: dict[str, str] = {}
    # Each part under a progress step: on a paper-sized run each takes minutes (issue 43).
    with step("report: reading the result tables"):
        results = load_results(store, f"runs/{run_id}")  # read once, for the viewers and the report
    if viewers:
        with step("report: writing the viewers"):
            written, errors = write_viewers(store, run_id, manifest=manifest, tables=results[0])
    extras: dict[str, Any] = {}
    summary_extra: dict[str, Any] = {}
    if config is not None:
        from vismem.pipelines.report.dmv_extras import dmv_extras

        try:
            with step("report: side tables (architectures, captions)"):
                extras = dmv_extras(store, config)
        except Exception as e:  # noqa: BLE001 - side tables never cost the report
            summary_extra = {"extra_errors": {"dmv_extras": f"{type(e).__name__}: {e}"[:500]}}
    with step(f"report: scoring ({options.n_resamples:,} bootstrap resamples), figures and tables"):
        summary = report_run(store, run_id, options=options, manifest=manifest, viewers=written, results=results,
                             extra_tables=extras)
    if errors:
        summary["viewer_errors"] = errors
    summary.update(summary_extra)
    return summary
