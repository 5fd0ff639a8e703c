"""The run's static viewers: read the caches a run used, hand frames and bytes to ``analysis``.

``write_viewers`` writes beside the report, under ``runs/<id>/report/``:

* ``trajectories.html`` (DMV-Bench): every encoding session of the run's ``encoding`` table from
  the trajectory cache (:mod:`vismem.pipelines.dmv.trajectories`), observation images from ``blobs/``, and
  every probe of the ``probes`` table with its step log from the probe cache
  (:mod:`vismem.pipelines.dmv.probecache`);
* ``samples.html`` (MemShot): every variant's ranking, units, answers and verdicts side by side
  per question, the OCR text and embedded text behind each ranking, and the shots as files
  beside it under ``samples/`` (:mod:`vismem.pipelines.report.samples`).

``copy_report`` brings a run's report folder (viewers included) out of the store to a local
folder, so ``file://`` links open in a browser even when the store was a private S3 server.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from vismem.core.paths import local_dir

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.core.store import Store

log = logging.getLogger("vismem")

TRAJECTORIES = "trajectories.html"
SAMPLES = "samples.html"
#: Probe episodes whose step logs go into the page (beyond it: outcome only, said on the page).
MAX_PROBE_LOGS = 20_000


def _steps(store: "Store", enc: pl.DataFrame, names: dict[str, str]) -> pl.DataFrame | None:
    """Every step of the run's encoding sessions, ``j`` 1-based as in the encoding table."""
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    parts = []
    for slug, seed, j in enc.select("backend", "seed", "j").unique().sort("backend", "seed", "j").iter_rows():
        cache = TrajectoryCache(store, slug)
        try:
            df = cache.read_steps(seed, j - 1)  # the cache counts sessions from 0
        except FileNotFoundError:
            continue
        parts.append(df.with_columns(pl.lit(names.get(slug, slug)).alias("backend"), pl.lit(j, pl.Int64).alias("j"),
                                     pl.lit(slug).alias("slug")))
    return pl.concat(parts, how="diagonal_relaxed") if parts else None


def _probe_logs(store: "Store", probes: pl.DataFrame) -> dict[tuple, tuple[str, str | None]]:
    """``(chain_slug, seed, arch_key, probe_id, recall_session) -> (log JSON, target hash)``."""
    from vismem.pipelines.dmv.probecache import ProbeCache

    out: dict[tuple, tuple[str, str | None]] = {}
    for slug, seed, key in probes.select("chain_slug", "seed", "arch_key").unique().sort(pl.all()).iter_rows():
        cache = ProbeCache(store, slug, seed, key)
        for set_name, j in sorted(cache.done_units()):
            rows = cache.read_rows(set_name, j)
            for pid, at, lg, th in rows.select("probe_id", "at_session", "log", "target_hash").iter_rows():
                out.setdefault((slug, seed, key, pid, at + 1), (lg, th))
    return out


def trajectory_page(store: "Store", run_id: str, tables: dict[str, pl.DataFrame]) -> str | None:
    """The trajectory viewer's HTML for a run (None: the run has no encoding table)."""
    from vismem.analysis.report import display_names
    from vismem.analysis.viewer import trajectory_viewer

    enc = tables.get("encoding")
    if enc is None or enc.height == 0:
        return None
    names = display_names(tables)
    steps = _steps(store, enc, names)
    if steps is None:
        return None
    # First image per product in step order: the same viewer bytes every time.
    first = steps.select("url_hash", "image_key").drop_nulls().unique("url_hash", keep="first", maintain_order=True)
    products = dict(first.iter_rows())
    probes = tables.get("probes")
    note = ""
    if probes is not None and {"chain_slug", "arch_key"} <= set(probes.columns):
        # One episode per (chain, architecture, probe): the J and study columns repeat rows.
        probes = probes.unique(["chain_slug", "seed", "arch_key", "probe_id", "recall_session"], keep="first",
                               maintain_order=True)
        logs = _probe_logs(store, probes.head(MAX_PROBE_LOGS))
        keys = probes.select("chain_slug", "seed", "arch_key", "probe_id", "recall_session").rows()
        probes = probes.with_columns(
            pl.Series("log", [logs.get(k, (None, None))[0] for k in keys], dtype=pl.String),
            pl.Series("target_image", [products.get(logs.get(k, (None, None))[1] or "") for k in keys], dtype=pl.String),
            pl.col("backend").replace(names).alias("backend"),
            pl.col("chain_slug").replace(names).alias("chain_backend"))
        if probes.height > MAX_PROBE_LOGS:
            note = f"Step logs of the first {MAX_PROBE_LOGS:,} of {probes.height:,} probes only."
    else:
        probes = None
    blob_keys = set(steps["image_key"].drop_nulls().to_list()) | set(products.values())
    images = {k: store.get_bytes(k) for k in sorted(blob_keys) if store.exists(k)}
    return trajectory_viewer(steps, probes, images, product_images=products, run_id=run_id, note=note)


def sample_page(store: "Store", run_id: str, tables: dict[str, pl.DataFrame],
                manifest: dict[str, Any] | None) -> str | None:
    """The sample viewer's HTML for a run (None: the run has no MemShot ranking); its shots are
    written beside it (:mod:`vismem.pipelines.report.samples`)."""
    from vismem.pipelines.report.samples import sample_page as build

    return build(store, run_id, tables, manifest)


def write_viewers(store: "Store", run_id: str, *, manifest: dict[str, Any] | None = None,
                  tables: dict[str, pl.DataFrame] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """Write the run's viewers under ``runs/<id>/report/``.

    Returns ``(viewers, errors)``: ``{"trajectories": "trajectories.html", ...}`` for those
    written (hrefs relative to the report) and ``{name: message}`` for any that failed (a
    viewer never fails the report).
    """
    from vismem.analysis.report import load_results

    prefix = f"runs/{run_id}"
    if tables is None:
        tables, _ = load_results(store, prefix)
    if manifest is None and store.exists(f"{prefix}/manifest.json"):
        manifest = store.get_json(f"{prefix}/manifest.json")
    written: dict[str, str] = {}
    errors: dict[str, str] = {}
    for name, fname, build in (("trajectories", TRAJECTORIES, lambda: trajectory_page(store, run_id, tables)),
                               ("samples", SAMPLES, lambda: sample_page(store, run_id, tables, manifest))):
        try:
            page = build()
        except Exception as err:  # noqa: BLE001 - reported in the stage summary, never fatal
            log.warning("viewer %s failed: %s: %s", name, type(err).__name__, err)
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        if page is not None:
            store.put_bytes(f"{prefix}/report/{fname}", page.encode(), content_type="text/html")
            written[name] = fname
    return written, errors


def local_report(store: "Store", config: "RunConfig", run_id: str, out: str | Path | None = None, *,
                 prefix: str | None = None) -> Path | None:
    """The run's ``report/index.html`` as a local file: in place for a ``file://`` store (unless
    ``out`` asks for a copy), else copied to ``out`` or ``<runs_dir>/<run_id>/report/`` (the
    private S3 server is gone once the run ends; a bucket does not open in a browser). None when
    the run has no report. ``prefix``: where the report lies when not ``runs/<run_id>`` (a report
    over several runs: ``reports/<A+B>``)."""
    prefix = prefix or f"runs/{run_id}"
    if out is None and store.uri.startswith("file://"):
        index = Path(store.url(f"{prefix}/report/index.html")[len("file://"):])
        return index if index.is_file() else None
    return copy_report(store, run_id, out if out is not None else local_report_dir(config, run_id), prefix=prefix)


def copy_report(store: "Store", run_id: str, dest: str | Path, *, prefix: str | None = None) -> Path | None:
    """Copy ``runs/<id>/report/`` (or ``<prefix>/report/``) from the store into ``dest``; returns
    ``dest/index.html`` (None when the run has no report)."""
    prefix = f"{prefix or f'runs/{run_id}'}/report/"
    keys = store.list(prefix)
    if not keys:
        return None
    dest = Path(dest)
    for key in keys:
        out = dest / key[len(prefix):]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(store.get_bytes(key))
    return (dest / "index.html").resolve()


def local_report_dir(config: "RunConfig", run_id: str) -> Path:
    """Where ``vismem run`` puts a run's report locally: ``<runs_dir>/<run_id>/report``."""
    return local_dir(config.runs_dir) / run_id / "report"


__all__ = ["copy_report", "local_report", "local_report_dir", "sample_page", "trajectory_page", "write_viewers"]
