"""The ``encode`` stage: DMV-Bench encoding chains as a Ray Data job over (backend, seed, j).

Usage::

    vismem run encode                                   # local default: 1 chain x J=2, scripted shopper
    vismem run encode --chains 5 --J 15                 # more chains / a longer horizon
    vismem run encode --backend scripted-shopper --backend '{"name": "openai", "args":
        {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "base_url": "http://vllm:8000/v1"}}'

Flags (also config fields ``encode.*``): ``--chains N`` (chain i has seed run.seed + i),
``--J J`` (sessions per chain), ``--backend NAME|JSON`` (repeatable; replaces
``encode.backends``). Backends: ``scripted-shopper`` (deterministic stand-in, named
``scripted-shopper (stand-in)`` in results), ``openai`` (any OpenAI-compatible endpoint: vLLM,
Ray Serve LLM, the local ``vismem.serve.openai_server``), ``transformers`` (a local checkpoint), or a
model variant from ``serve/models/`` by name: ``qwen2.5-vl-7b``, ``gemini-2.5-flash``,
``tiny-qwen2.5-vl``. Other knobs via ``--set encode.FIELD=VALUE``: ``first_seed``,
``observation`` (product_image|screenshot), ``page_text`` (url|page), ``env`` (browser|http),
``workers``, ``max_tokens``, ``temperature``, ``images``.

What it does: lists every ``(backend, seed, j)`` key, drops those whose trajectory is already
cached (``trajectories/<backend-slug>/<seed>/<j>.done.json``; a cached session whose steps record
a failed model call -- an outage cached before such sessions were browsed again -- is discarded and
browsed again, counted as ``outages_redone``), and runs the rest on a pool of
Ray actors (:class:`vismem.pipelines.dmv.encode_job.EncodeWorker`), each with its own storefront and
browser; sessions of one key never depend on J, so a longer chain runs only its new sessions and
a killed run resumes. Output: ``runs/<run_id>/results/encoding.parquet`` (the analysis
``encoding`` schema: one row per session, ``j`` 1-based = official index + 1, plus the backend's
display name, visited products and health counts) and a per-backend Table 3 summary.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING, Any

from vismem.pipelines.stage import Stage, count

log = logging.getLogger("vismem.encode")
from vismem.pipelines.dmv.protocol import fleet_shortfall, image_source, options, plan, storefront_inputs

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import RunContext

#: Columns of the Ray Data rows the workers return (one per input key).
WORKER_COLUMNS = ("backend", "seed", "j", "ok", "error", "summary")

#: dtypes of the ``encoding`` rows :func:`results_frame` writes (its shape when no session finished).
_ENCODING_DTYPES = {
    "backend": "String", "seed": "Int64", "j": "Int64", "steps": "Int64", "distinct_products": "Int64",
    "styles": "Int64", "category": "String", "invalid_actions": "Int64", "terminated": "String",
    "wall_s": "Float64", "backend_name": "String", "stand_in": "Boolean", "n_steps": "Int64", "visits": "Int64",
    "failed_calls": "Int64", "exec_errors": "Int64", "terminal_actions": "Int64", "visited": "List",
}


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """``vismem run`` flags of this stage."""
    g = parser.add_argument_group("encode (DMV-Bench encoding chains)")
    g.add_argument("--chains", type=int, metavar="N", help="number of chains (chain i has seed encode.first_seed + i)")
    g.add_argument("--J", dest="J", type=int, metavar="J", help="sessions per chain")
    g.add_argument("--backend", dest="encode_backends", action="append", metavar="NAME|JSON",
                   help="VLM backend that browses: scripted-shopper (stand-in), a model variant "
                        "(qwen2.5-vl-7b, gemini-2.5-flash, tiny-qwen2.5-vl), or a JSON {name, args} "
                        "spec for openai/transformers (repeatable)")


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Config overrides from the flags above."""
    over: dict[str, Any] = {}
    if getattr(args, "chains", None) is not None:
        over["chains"] = args.chains
    if getattr(args, "J", None) is not None:
        over["J"] = args.J
    specs = getattr(args, "encode_backends", None)
    if specs:
        from vismem.core.errors import ConfigError
        from vismem.core.unique import json_loads_unique

        try:
            over["backends"] = [json_loads_unique(s, "--backend", error=ConfigError) if s.strip().startswith("{") else s
                                for s in specs]
        except (json.JSONDecodeError, RecursionError) as err:
            raise ConfigError(f"--backend must be a name or a JSON object like {{\"name\": ..., \"args\": {{...}}}}: {err}") from None
    return {"encode": over} if over else {}


def check(config: "RunConfig") -> None:
    """Every backend spec resolves and the env kind exists (ConfigError naming the field)."""
    from vismem.pipelines.dmv.protocol import resolve_spec

    if not config.encode.enabled:
        return
    for i, spec in enumerate(config.encode.backends):
        resolve_spec(spec, config.seed, field=f"encode.backends[{i}]")
    workers = config.encode.workers or config.ray.concurrency
    for line in fleet_shortfall(list(config.encode.backends), config.encode.in_flight, workers):
        log.warning("encode: %s", line)
    if config.encode.images != "catalog":
        from vismem.env.storefront.imagesource import IMAGE_SOURCES

        IMAGE_SOURCES.check(config.encode.images, field="encode.images", injected=("catalog",))


def worker_kwargs(ctx: "RunContext", specs: list[dict[str, Any]], slugs: list[str], *,
                  episodes: int = 1) -> dict[str, Any]:
    """Constructor kwargs of :class:`EncodeWorker` for this run."""
    from vismem.pipelines.dmv.protocol import env_factory

    cfg = ctx.config
    return {"store": ctx.store, "backends": specs, "slugs": slugs, "data_dir": ctx.worker_data_dir,
            "catalog_seed": cfg.seed, "colour_order": cfg.catalog.colour_order, "images": image_source(ctx),
            "options": options(cfg), "observation": cfg.encode.observation,
            "step_timeout_s": cfg.encode.step_timeout_s, "env_factory": env_factory(cfg.encode.env),
            "max_failed_calls": cfg.encode.max_failed_calls, "session_retries": cfg.encode.session_retries,
            "episodes": episodes}


def run_keys(ctx: "RunContext", specs: list[dict[str, Any]], slugs: list[str],
             todo: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    """Run the pending keys on Ray actors, each browsing its share of ``encode.in_flight``
    sessions at once; one output row per key."""
    import ray.data

    from vismem.pipelines.dmv.encode_job import EncodeWorker
    from vismem.pipelines.dmv.protocol import episodes_per_actor
    from vismem.pipelines.rayctx import actor_pool, collect

    if not todo:
        return []
    n = min(ctx.config.encode.workers or ctx.config.ray.concurrency, len(todo))
    episodes = min(episodes_per_actor(ctx.config.encode.in_flight, specs, n), -(-len(todo) // n))
    ds = ray.data.from_items([{"backend": b, "seed": s, "j": j} for b, s, j in todo],
                             override_num_blocks=-(-len(todo) // episodes))
    ds = ds.map_batches(EncodeWorker, fn_constructor_kwargs=worker_kwargs(ctx, specs, slugs, episodes=episodes),
                        batch_size=episodes, **actor_pool(ctx.config.ray, size=n, overlap=2))
    return collect(ds, "encode: sessions", total=len(todo))


def results_frame(summaries: list[dict[str, Any]]) -> Any:
    """The ``encoding`` result rows (analysis schema; ``j`` is 1-based)."""
    import polars as pl

    if not summaries:  # every session failed: an empty table of the right shape
        return pl.DataFrame(schema={k: pl.List(pl.String) if v == "List" else getattr(pl, v)
                                    for k, v in _ENCODING_DTYPES.items()})
    rows = [{
        "backend": s["backend"], "seed": s["seed"], "j": s["j"] + 1, "steps": s["steps"],
        "distinct_products": s["distinct_products"], "styles": s["styles"], "category": s["category"],
        "invalid_actions": s["invalid_actions"], "terminated": s["terminated"], "wall_s": s["wall_s"],
        "backend_name": s["backend_name"], "stand_in": s["stand_in"], "n_steps": s["n_steps"],
        "visits": s["visits"], "failed_calls": s["failed_calls"], "exec_errors": s["exec_errors"],
        "terminal_actions": s["terminal_actions"], "visited": s["visited"],
    } for s in summaries]
    return pl.DataFrame(rows, infer_schema_length=None).sort(["backend", "seed", "j"])


def table3(df: Any) -> list[dict[str, Any]]:
    """Per-backend session statistics (the paper's Table 3 quantities)."""
    import polars as pl

    if df.is_empty():
        return []
    agg = df.group_by(["backend", "backend_name"]).agg(
        pl.len().alias("sessions"),
        pl.col("steps").mean().alias("mean_steps"),
        pl.col("distinct_products").mean().alias("mean_distinct_products"),
        pl.col("styles").mean().alias("mean_styles"),
        (pl.col("styles") < 3).mean().alias("share_below_3_styles"),
        pl.col("invalid_actions").sum().alias("invalid_actions"),
        pl.col("failed_calls").sum().alias("failed_calls"),
    ).sort("backend")
    return agg.to_dicts()


def run(ctx: "RunContext") -> dict[str, Any]:
    """Encode every pending session, then write the run's ``encoding`` result table."""
    from vismem.analysis.schemas import result_key, write_results
    from vismem.core.cache import heal
    from vismem.pipelines.dmv.trajectories import TrajectoryCache, heal_blobs, outage_sessions

    enc = ctx.config.encode
    if not enc.enabled:
        return {"status": "disabled"}
    specs, slugs, keys = plan(ctx.config)
    caches = [TrajectoryCache(ctx.store, s) for s in slugs]
    done = [c.done_keys() for c in caches]
    # A finished session is trusted only whole: a damaged one is discarded and browsed again.
    healed = heal(((caches[b].units, f"{s}/{j}") for b, s, j in keys if (s, j) in done[b]), ctx.logger)
    # An image a finished session observed is trusted only whole (its key is its digest): a
    # damaged one goes with every session that showed it, and they are browsed again.
    healed_blobs = heal_blobs(caches, keys, [c.done_keys() for c in caches] if healed else done, ctx.logger)
    if healed or healed_blobs:
        done = [c.done_keys() for c in caches]
    # A session cached with a failed model call is an outage, not a trajectory: browsed again.
    outages = outage_sessions(caches, keys, done, ctx.logger)
    if outages:
        done = [c.done_keys() for c in caches]
    todo = [(b, s, j) for b, s, j in keys if (s, j) not in done[b]]
    for spec, slug in zip(specs, slugs):
        ctx.manifest.component("encode.backend", {**spec, "cache_slug": slug})
    ctx.logger.info("encode: %d sessions, %d cached, %d to run", len(keys), len(keys) - len(todo), len(todo))
    rows = run_keys(ctx, specs, slugs, todo)
    failed = [r for r in rows if not r["ok"]]
    summaries = [caches[b].read_summary(s, j) for b, s, j in keys if caches[b].is_done(s, j)]
    df = results_frame(summaries)
    key = result_key(ctx.run_prefix, "encoding")
    write_results(ctx.store, ctx.run_prefix, "encoding", df)
    out = {
        "status": "done" if not failed else "partial",
        "sessions": len(keys), "ran": len(rows) - len(failed), "cached": len(keys) - len(todo),
        "failed_sessions": len(failed),
        "failed": [{k: r[k] for k in ("backend", "seed", "j", "error")} for r in failed],
        "results": key, "backends": slugs, "table3": table3(df), "healed": len(healed),
        "workers": min(enc.workers or ctx.config.ray.concurrency, max(1, len(todo))),
    }
    if healed_blobs:  # damaged observation images: the sessions that showed them browsed again
        out["healed_blobs"] = len(healed_blobs)
    if outages:  # sessions cached with a failed call (before the retry rule), browsed again
        out["outages_redone"] = len(outages)
    if failed:
        from vismem.core.failures import failure_line

        out["failure"] = failure_line([str(r["error"]) for r in failed], len(rows), "sessions run")
    return out


def describe(s: dict[str, Any]) -> str:
    """One line of what ran and what was reused (the end-of-run summary)."""
    failed = len(s.get("failed") or [])
    return (f"{count(s.get('sessions'))} sessions: {count(s.get('ran'))} browsed, {count(s.get('cached'))} reused"
            + (f", {failed} failed" if failed else "") + (f", {s['healed']} damaged redone" if s.get("healed") else "")
            + (f", {s['healed_blobs']} damaged images redone" if s.get("healed_blobs") else "")
            + (f", {s['outages_redone']} cached with a failed call browsed again" if s.get("outages_redone") else ""))


STAGE = Stage(name="encode", describe=describe, inputs=storefront_inputs, section="encode", run=run, add_cli_args=add_cli_args,
              cli_overrides=cli_overrides, check=check)
