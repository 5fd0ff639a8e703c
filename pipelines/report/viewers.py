"""The run's static viewers: read the caches a run used, hand frames and bytes to ``analysis``.

``write_viewers`` writes beside the report, under ``runs/<id>/report/``:

* ``trajectories.html`` (DMV-Bench): every encoding session of the run's ``encoding`` table from
  the trajectory cache (:mod:`vismem.pipelines.dmv.trajectories`), observation images from ``blobs/``
  (written as files under ``report/img/``), and the probes of the ``probes`` table -- a seeded
  sample per architecture x reach on a large run -- with their step logs and channel scores from
  the probe cache (:mod:`vismem.pipelines.dmv.probecache`) and each architecture's bank entries
  from the replay stage (``memory/bank_entries.parquet``);
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
#: Probe episodes (probe x architecture) in the trajectory viewer: a seeded sample per
#: architecture x reach beyond it (the page says how many).
MAX_PROBE_LOGS = 6_000
#: Store reads / writes a viewer does at once (each is a round trip on S3; a paper-sized run's
#: trajectory viewer reads thousands of probe units and images).
IO_THREADS = 16


def _pmap(fn: Any, items: list[Any]) -> list[Any]:
    """``[fn(x) for x in items]`` on :data:`IO_THREADS` threads (store calls are I/O bound)."""
    from concurrent.futures import ThreadPoolExecutor

    if len(items) < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(IO_THREADS, thread_name_prefix="viewer-io") as pool:
        return list(pool.map(fn, items))


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


def _probe_logs(store: "Store", probes: pl.DataFrame) -> dict[tuple, tuple[str, str | None, str | None]]:
    """``(chain_slug, seed, arch_key, probe_id, recall_session) -> (log JSON, target hash, scores
    JSON)`` for ``probes`` (only the cache units holding them are read; ``scores`` is None for
    units written before probe steps recorded per-channel scores)."""
    from vismem.pipelines.dmv.probecache import ProbeCache

    out: dict[tuple, tuple[str, str | None, str | None]] = {}
    wanted = set(probes.select("chain_slug", "seed", "arch_key", "probe_id", "recall_session").iter_rows())
    sessions = probes.group_by("chain_slug", "seed", "arch_key").agg(pl.col("recall_session").unique())
    caches = [(ProbeCache(store, slug, seed, key), set(recalls))
              for slug, seed, key, recalls in sessions.sort("chain_slug", "seed", "arch_key").iter_rows()]
    dones = _pmap(lambda cr: sorted(cr[0].done_units()), caches)  # one listing per cache
    units = [(c, u) for (c, recalls), done in zip(caches, dones) for u in done if u[1] + 1 in recalls]
    for (cache, _), rows in zip(units, _pmap(lambda cu: cu[0].read_rows(*cu[1]), units)):
        slug, seed, key = cache.slug, cache.seed, cache.key
        scores = rows["scores"] if "scores" in rows.columns else pl.Series([None] * rows.height, dtype=pl.String)
        for (pid, at, lg, th), sc in zip(rows.select("probe_id", "at_session", "log", "target_hash").iter_rows(),
                                         scores):
            if (slug, seed, key, pid, at + 1) in wanted:
                out.setdefault((slug, seed, key, pid, at + 1), (lg, th, sc))
    return out


def _bank_entries(store: "Store", run_id: str, probes: pl.DataFrame) -> dict[tuple, dict[str, Any]] | None:
    """``(architecture, chain slug, seed, product) -> entry`` from the replay stage's bank entries,
    for the products ``probes`` ask about or recalled (None: the run has none recorded)."""
    import json

    from vismem.pipelines.dmv.protocol import BANK_ENTRIES_KEY

    key = f"runs/{run_id}/{BANK_ENTRIES_KEY}"
    if probes.height == 0 or not store.exists(key):
        return None
    wanted = {u.rsplit("/", 1)[-1] for u in probes["target_url"].drop_nulls()}
    for lg in probes["log"].drop_nulls():
        wanted.update(h for st in json.loads(lg) for h in st.get("recalled") or [])
    chains = probes.select(pl.col("chain_slug").alias("backend"), "seed").unique()
    df = (store.read_table(key).join(chains, on=["backend", "seed"])
          .filter(pl.col("architecture").is_in(probes["architecture"].unique().to_list())
                  & pl.col("slug").is_in(list(wanted))))
    out = {}
    for r in df.iter_rows(named=True):
        cap = r["caption"] if r["caption"] and r["caption"] not in (r["written"] or "") else None
        out[(r["architecture"], r["backend"], r["seed"], r["slug"])] = {
            "session": r["session"], "position": r["position"], "text": r["written"], "caption": cap,
            "image": bool(r["images"])}
    return out


def trajectory_page(store: "Store", run_id: str, tables: dict[str, pl.DataFrame], *, seed: int = 0,
                    assets: dict[str, bytes] | None = None) -> str | None:
    """The trajectory viewer's HTML for a run (None: the run has no encoding table). Probes are a
    seeded sample (:func:`vismem.analysis.probe_page.sample_probes`, ``seed`` the run's); with
    ``assets``, images are put there as files for beside the page."""
    from vismem.analysis.probe_page import pair_counts, sample_note, sample_probes
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
        pairs = pair_counts(probes)  # over the whole run: the page holds a sample
        probes, info = sample_probes(probes, MAX_PROBE_LOGS, seed=seed)
        logs = _probe_logs(store, probes)
        keys = probes.select("chain_slug", "seed", "arch_key", "probe_id", "recall_session").rows()
        got = [logs.get(k, (None, None, None)) for k in keys]
        probes = probes.with_columns(
            pl.Series("log", [g[0] for g in got], dtype=pl.String),
            pl.Series("scores", [g[2] for g in got], dtype=pl.String),
            pl.Series("target_image", [products.get(g[1] or "") for g in got], dtype=pl.String),
            pl.col("backend").replace(names).alias("backend"),
            pl.col("chain_slug").replace(names).alias("chain_backend"))
        banks = _bank_entries(store, run_id, probes)
        note = sample_note(info)
    else:
        probes, banks, pairs = None, None, None
    blob_keys = set(steps["image_key"].drop_nulls().to_list()) | set(products.values())
    found = _pmap(lambda k: _image_or_none(store, k), sorted(blob_keys))
    images = {k: data for k, data in zip(sorted(blob_keys), found) if data is not None}
    return trajectory_viewer(steps, probes, images, product_images=products, run_id=run_id, note=note, assets=assets,
                             banks=banks, pairs=pairs)


def _image_or_none(store: "Store", key: str) -> bytes | None:
    """An image blob's bytes, or None when it is missing or damaged (the viewer shows it absent; the
    encode stage heals a damaged one -- a viewer never stops on it)."""
    from vismem.core.cache import CacheDamaged

    try:
        return store.get_bytes(key) if store.exists(key) else None
    except CacheDamaged as err:
        log.warning("%s (shown as missing in the trajectory viewer)", err)
        return None


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
    if manifest is None:
        from vismem.pipelines.manifest import read_manifest

        manifest = read_manifest(store, run_id)[0] or None  # a damaged one: viewers without it
    written: dict[str, str] = {}
    errors: dict[str, str] = {}
    assets: dict[str, bytes] = {}  # images beside the pages, {path relative to the report: bytes}
    seed = int(((manifest or {}).get("config") or {}).get("seed") or 0)
    for name, fname, build in (("trajectories", TRAJECTORIES,
                                lambda: trajectory_page(store, run_id, tables, seed=seed, assets=assets)),
                               ("samples", SAMPLES, lambda: sample_page(store, run_id, tables, manifest))):
        try:
            page = build()
        except Exception as err:  # noqa: BLE001 - reported in the stage summary, never fatal
            log.warning("viewer %s failed: %s: %s", name, type(err).__name__, err)
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        if page is not None:
            _pmap(lambda pd: store.put_bytes(f"{prefix}/report/{pd[0]}", pd[1]), sorted(assets.items()))
            assets.clear()
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
