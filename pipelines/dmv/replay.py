"""The ``replay`` stage: features computed once, then every architecture's banks from the chains.

Usage::

    vismem run replay                                  # after encode: every variant, local stand-ins
    vismem run replay --architecture dualmem --architecture textonly

1. **Chains**: the encode plan's (back-end, seed) chains, sessions ``0..encode.J-1`` read from the
   trajectory cache (a missing session is an error naming it: run ``encode`` first).
2. **Features** (:mod:`vismem.pipelines.dmv.features`, :mod:`vismem.pipelines.dmv.features_job`): the union of what the
   architectures read — captions (the one captioner), image embeddings, document-text embeddings
   — over the distinct observed images and texts, computed as Ray Data jobs (GPU replicas on a
   cluster) or in the driver for small inputs, and kept content-addressed in the store
   (``features/<spec_key>/``): 16 variants never caption or embed an image twice, and a second
   run computes nothing.
3. **Replay** (``vismem.memory.agent.replay``, the official rules): per chain and architecture, session by
   session; ``results/banks.parquet`` records each bank after each session (size, new entries)
   and ``memory/bank_entries.parquet`` what each architecture wrote per product (the session and
   position it was banked at, its encode text, caption and the entry as its injector renders it:
   the trajectory viewer shows it beside each probe).

The ``probes`` stage rebuilds the same banks in its workers from the stored features.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from vismem.core.progress import track
from vismem.pipelines.dmv.protocol import BANK_ENTRIES_KEY, storefront_inputs
from vismem.pipelines.stage import Stage, count
from vismem.pipelines.dmv.chains import load_run_chains

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import RunContext

BANKS_SCHEMA_VERSION = 1
ENTRIES_SCHEMA_VERSION = 1


def _entries_schema() -> dict[str, Any]:
    import polars as pl

    return {"backend": pl.String, "seed": pl.Int64, "architecture": pl.String, "slug": pl.String,
            "session": pl.Int64, "position": pl.Int64, "image_key": pl.String, "encode_text": pl.String,
            "caption": pl.String, "written": pl.String, "images": pl.Int64}


def bank_entries(arch: Any, backend: str, seed: int) -> list[dict[str, Any]]:
    """One row per entry of ``arch``'s bank: what the architecture wrote about each product."""
    out = []
    for item in arch.entries():
        r = arch.render(item)
        out.append({"backend": backend, "seed": seed, "architecture": arch.name, "slug": item.slug,
                    "session": item.session + 1, "position": item.position, "image_key": item.image_key,
                    "encode_text": item.encode_text, "caption": item.caption, "written": r.text,
                    "images": len(r.image_keys)})
    return out


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("replay (DMV-Bench memory architectures)")
    g.add_argument("--architecture", dest="architectures", action="append", metavar="NAME",
                   help="memory architecture variant to replay and probe (repeatable; memory/agent/variants/)")


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = getattr(args, "architectures", None)
    return {"memory": {"architectures": list(names)}} if names else {}


def check(config: "RunConfig") -> None:
    """Every architecture (and each component it nests) resolves."""
    from vismem.pipelines.dmv.chains import build_architectures

    if config.memory.enabled:
        build_architectures(config)


def feature_computer(ctx: "RunContext") -> Any:
    """``compute(fs, items)`` for :func:`vismem.pipelines.dmv.features.ensure_features` with the run's settings."""
    from vismem.pipelines.dmv.features_job import compute_features

    cfg = ctx.config.memory
    models: dict[str, Any] = {}

    def compute(fs: Any, items: list[dict[str, Any]]) -> Any:
        on_ray = cfg.features_on_ray if cfg.features_on_ray is not None else len(items) > 2000
        ctx.logger.info("features: %s %s over %d items (%s)", fs.kind, fs.label, len(items), "ray" if on_ray else "driver")
        kw = dict(store=ctx.store, batch_size=cfg.feature_batch_size, ray_cfg=ctx.config.ray,
                  actors=cfg.feature_actors, num_gpus=cfg.feature_gpus, models=models)
        if on_ray:  # Ray Data's bar on a terminal, progress lines off one (rayctx.collect)
            return compute_features(fs, items, on_ray=True, **kw)
        # On the driver, in chunks of a few batches, so the bar moves (same values, same order).
        step = max(1, cfg.feature_batch_size) * 4
        values: dict[str, Any] = {}
        failures: list[dict[str, Any]] = []
        starts = range(0, len(items), step)
        for i in track(starts, f"features: {fs.kind} {fs.label}", total=len(starts)):
            v, f = compute_features(fs, items[i:i + step], on_ray=False, **kw)
            values.update(v)
            failures += f
        return values, failures

    return compute


def run(ctx: "RunContext") -> dict[str, Any]:
    """Compute missing features, replay every chain into every architecture, write the bank table."""
    import polars as pl

    from vismem.memory.agent import replay_chain
    from vismem.memory.agent.tables import TableFeatures
    from vismem.pipelines.dmv.chains import build_architectures
    from vismem.pipelines.dmv.features import ensure_features, spec_list

    if not ctx.config.memory.enabled:
        return {"status": "disabled"}
    t0 = time.perf_counter()
    chains = load_run_chains(ctx)
    archs = build_architectures(ctx.config)
    all_obs = [o for obs in chains.values() for o in obs]
    tables, stats = ensure_features(ctx.store, archs, all_obs, compute=feature_computer(ctx))
    for a in archs:
        ctx.manifest.component(f"memory.{a.name}", {"spec": a.spec, **a.describe()})
    feats = TableFeatures(tables, read_blob=ctx.store.get_bytes)
    rows, entries = [], []
    t1 = time.perf_counter()
    J = ctx.config.encode.J
    # Chain by chain, every architecture (the order the bank table has always had).
    pairs = [(chain, obs, a) for chain, obs in chains.items() for a in archs]
    for chain, obs, a in track(pairs, "replay: chains x architectures", total=len(pairs)):
        a.bind(feats)
        before = 0
        for j in replay_chain(a, obs, sessions=range(J)):
            rows.append({"backend": chain.slug, "seed": chain.seed, "architecture": a.name, "j": j + 1,
                         "bank_size": len(a), "new_entries": len(a) - before, "label": a.label,
                         "stand_in": a.stand_in})
            before = len(a)
        entries += bank_entries(a, chain.slug, chain.seed)
    replay_s = time.perf_counter() - t1
    banks = pl.DataFrame(rows, schema={"backend": pl.String, "seed": pl.Int64, "architecture": pl.String,
                                       "j": pl.Int64, "bank_size": pl.Int64, "new_entries": pl.Int64,
                                       "label": pl.String, "stand_in": pl.Boolean})
    key = f"{ctx.run_prefix}/results/banks.parquet"
    ctx.store.write_table(key, banks, schema_version=BANKS_SCHEMA_VERSION)
    ctx.store.write_table(f"{ctx.run_prefix}/{BANK_ENTRIES_KEY}", pl.DataFrame(entries, schema=_entries_schema()),
                          schema_version=ENTRIES_SCHEMA_VERSION)
    failed = stats.failed
    return {"status": "partial" if failed else "done", "chains": len(chains), "architectures": [a.name for a in archs],
            "observations": len(all_obs), "features": {"computed": stats.computed, "reused": stats.reused,
                                                       "failed": len(failed), "healed": len(stats.healed),
                                                       "specs": spec_list(stats)},
            "failed": failed[:20], "replay_s": round(replay_s, 3), "wall_s": round(time.perf_counter() - t0, 3),
            "results": key}


def describe(s: dict[str, Any]) -> str:
    """One line of what ran and what was reused (the end-of-run summary)."""
    f = s.get("features") or {}
    comp, reu = sum((f.get("computed") or {}).values()), sum((f.get("reused") or {}).values())
    return (f"{count(s.get('chains'))} chains x {len(s.get('architectures') or [])} architectures; "
            f"features {count(comp)} computed, {count(reu)} reused"
            + (f"; {f['healed']} damaged feature parts redone" if f.get("healed") else ""))


STAGE = Stage(name="replay", describe=describe, inputs=storefront_inputs, section="memory", run=run, add_cli_args=add_cli_args, cli_overrides=cli_overrides,
              check=check)
