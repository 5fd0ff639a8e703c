"""The ``probes`` stage: recall probes for every architecture over every chain, as a Ray Data job.

Usage::

    vismem run probes                              # after encode + replay: every architecture, exhaustive
    vismem run probes --set probes.J=[5,10,15]     # score several chain lengths (shared exhaustive probes)
    vismem run probes --set probes.mc=10           # Monte Carlo probes (the J = 50 pilot)
    vismem run probes --set probes.ablation_chains=7   # Table 4's ablation variants on the first 7 chains only

Probe sets follow the official generator (``vismem.agents.probes``); each probe is one recall episode
(``vismem.agents.recall``) whose memory block comes from the architecture's bank after session ``j``
(``vismem.memory.agent.ArchitectureHook``). The work is split into units — (chain, architecture, recall
session, probe set) — run on a pool of Ray actors (:class:`vismem.pipelines.dmv.probes_job.ProbeWorker`),
each with its own storefront and page env, and cached per unit (:mod:`vismem.pipelines.dmv.probecache`):
a killed run resumes, adding an architecture runs only its units, and a second J reuses the
exhaustive probes it shares with the first. ``probes.ablation_architectures`` run only on the chains
of ``probes.ablation_chains`` (the paper's Table 4 subset); a unit does not depend on the subset, so
a subset run and a full run share every unit they both need. An outage is never scored as a memory failure: a probe
whose episode a failed recall call cut short is run again on its own (``probes.probe_retries``)
until it has model answers, and a unit with one still lacking them is not cached (the stage ends
partial; a re-run retries it).

Output: ``results/probes.parquet`` (the analysis ``probes`` schema: one row per (back-end, J,
architecture, probe); ``study`` main / ablation / alpha_sweep from the variant's YAML, with
reference rows repeated in the studies that show them), which the report's DMV-Bench sections
(Table 2, Table 4, Figs 5-7, Tables 8-10) read.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from vismem.pipelines.dmv.protocol import cue_lookup, fleet_shortfall, storefront_inputs
from vismem.pipelines.stage import Stage, count

log = logging.getLogger("vismem.probes")

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import RunContext


def recallers(config: "RunConfig") -> list[dict[str, Any]]:
    """The resolved recalling VLM of each encode back-end (``probes.backends`` or the back-ends)."""
    from vismem.pipelines.dmv.protocol import resolve_spec

    n = len(config.encode.backends)
    specs = config.probes.backends if config.probes.backends is not None else config.encode.backends
    field = "probes.backends" if config.probes.backends is not None else "encode.backends"
    if len(specs) == 1 and n > 1:  # one recalling VLM for every browsing back-end
        specs = tuple(specs) * n
    return [resolve_spec(s, config.seed, field=f"{field}[{i if len(set(map(id, specs))) > 1 else 0}]")
            for i, s in enumerate(specs)]


def check(config: "RunConfig") -> None:
    """The recalling VLMs and every architecture resolve."""
    from vismem.pipelines.dmv.chains import build_architectures

    if config.probes.enabled:
        recallers(config)
        names = {a.name for a in build_architectures(config)}
        if config.probes.ablation_chains is not None:
            _check_subset(config, names)
        pair = config.probes.adaptive.contrast
        if config.probes.mode == "adaptive" and pair is not None and not set(pair) <= names:
            from vismem.core.errors import ConfigError

            raise ConfigError(f"probes.adaptive.contrast: {sorted(set(pair) - names)} not among the probed "
                              f"architectures ({', '.join(sorted(names))})")
        workers = config.probes.workers or config.ray.concurrency
        raw = list(config.probes.backends or config.encode.backends)
        for line in fleet_shortfall(raw, config.probes.in_flight, workers):
            log.warning("probes: %s", line)


def subset_only(config: "RunConfig", names: list[str]) -> set[int]:
    """Indices (in ``names``, the built architectures' names) of the architectures probed only on
    the ablation chain subset (``probes.ablation_architectures``; none without ``ablation_chains``)."""
    if config.probes.ablation_chains is None:
        return set()
    return {i for i, n in enumerate(names) if n in config.probes.ablation_architectures}


def _check_subset(config: "RunConfig", names: set[str]) -> None:
    """The subset's chain indices exist and every ablation architecture is a known name."""
    from vismem.core.errors import ConfigError, did_you_mean
    from vismem.memory.agent.variants import list_variants
    from vismem.pipelines.dmv.protocol import ablation_seeds

    ablation_seeds(config)
    known = sorted(names | set(list_variants()))
    for i, n in enumerate(config.probes.ablation_architectures):
        if n not in known:
            raise ConfigError(f"probes.ablation_architectures[{i}]: unknown architecture {n!r}{did_you_mean(n, known)}")


def plan_units(config: "RunConfig", chains: list[Any], n_archs: int,
               subset_archs: set[int] = frozenset()) -> list[dict[str, Any]]:
    """Every (chain, architecture, recall session, set) unit the configured J values need; an
    architecture in ``subset_archs`` only on the chains of ``probes.ablation_chains``. A unit is
    the same whichever chains the run probes, so a subset run's units are a full run's."""
    from vismem.pipelines.dmv.protocol import ablation_seeds

    Js = config.probes.J or (config.encode.J,)
    seeds = ablation_seeds(config)
    units = []
    for ci in range(len(chains)):
        for ai in range(n_archs):
            if ai in subset_archs and seeds is not None and chains[ci].seed not in seeds:
                continue
            if config.probes.mc:
                for J in Js:
                    units += [{"chain": ci, "arch": ai, "j": j, "set": f"mc{J}"} for j in range(1, J)]
            else:
                units += [{"chain": ci, "arch": ai, "j": j, "set": "ex"} for j in range(1, max(Js))]
    return units


def _protocol(config: "RunConfig") -> dict[str, Any]:
    from vismem.agents import prompts

    p, proto = config.probes, config.encode.protocol
    out = {"prompts": prompts.fingerprint("recall", proto), "max_steps": p.max_steps, "fetch_k": p.fetch_k,
           "keep_k": p.keep_k, "max_tokens": p.max_tokens, "mc_seed": p.mc_seed if p.mc else None, "mc": p.mc}
    return out | ({"protocol": proto} if proto != "fixed" else {})


def worker_kwargs(ctx: "RunContext", chains: list[Any], archs: list[Any], keys: list[str],
                  recall: list[dict[str, Any]], *, episodes: int = 1) -> dict[str, Any]:
    from vismem.pipelines.dmv.chains import architecture_specs
    from vismem.pipelines.dmv.protocol import env_factory
    from vismem.pipelines.dmv.protocol import image_source

    cfg = ctx.config
    feature_specs = list({fs for a in archs for fs in a.required_features()})
    return {"store": ctx.store, "chains": [{"backend": c.backend, "slug": c.slug, "seed": c.seed} for c in chains],
            "recallers": recall, "archs": architecture_specs(cfg), "arch_keys": keys, "feature_specs": feature_specs,
            "cues": cue_lookup(cfg),
            "shop": {"data_dir": ctx.worker_data_dir, "seed": cfg.seed, "colour_order": cfg.catalog.colour_order,
                     "images": image_source(ctx)},
            "options": {"max_steps": cfg.probes.max_steps, "fetch_k": cfg.probes.fetch_k, "keep_k": cfg.probes.keep_k,
                        "max_tokens": cfg.probes.max_tokens, "J": max(cfg.probes.J or (cfg.encode.J,)),
                        "mc": cfg.probes.mc, "mc_seed": cfg.probes.mc_seed, "protocol": cfg.encode.protocol,
                        "max_failed_calls": cfg.probes.max_failed_calls, "probe_retries": cfg.probes.probe_retries},
            "env_factory": env_factory(cfg.probes.env or cfg.encode.env),
            "env_kwargs": {"observation": cfg.encode.observation, "step_timeout_s": cfg.encode.step_timeout_s},
            "episodes": episodes}


def results_frame(raw: Any, config: "RunConfig", chains: list[Any], archs: list[Any], recall_names: list[str]) -> Any:
    """The ``probes`` result rows: one per (back-end, J, architecture, study, probe)."""
    import polars as pl

    from vismem.pipelines.dmv.chains import variant_info

    Js = config.probes.J or (config.encode.J,)
    slug_backend = {c.slug: c.backend for c in chains}
    out = []
    for ai, a in enumerate(archs):
        info = variant_info(a)
        labels = info["labels"]
        variant = "default" if info["study"] == "main" else ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
        part = raw.filter(pl.col("arch") == ai)
        for J in Js:
            sel = part.filter(pl.col("at_session") < J) if not config.probes.mc else part.filter(pl.col("set") == f"mc{J}")
            for st in [info["study"], *info["also"]]:
                out.append(sel.with_columns(
                    pl.lit(J, pl.Int64).alias("J"), pl.lit(a.name).alias("architecture"), pl.lit(st).alias("study"),
                    pl.lit(variant if st != "main" else "default").alias("variant"),
                    pl.lit(labels.get("alpha"), pl.Float64).alias("alpha"),
                    pl.lit(labels.get("encoder"), pl.String).alias("encoder")))
    if not out:
        return None
    df = pl.concat(out, how="vertical_relaxed")
    names = {slug: recall_names[b] for slug, b in slug_backend.items()}
    return df.select(
        pl.col("chain_slug").replace_strict(names, return_dtype=pl.String).alias("backend"),
        "seed", "J", "architecture", "probe_id",
        (pl.col("target_session") + 1).alias("visit_session"), (pl.col("at_session") + 1).alias("recall_session"),
        "reach", "bank_size", pl.col("encoding_position").fill_null(-1), "target_url", "final_url", "correct",
        "steps", "study", "variant", "alpha", "encoder", pl.col("cue").alias("target_cue"), "failure",
        pl.col("chain_slug"), pl.col("arch_key"), pl.col("vlm_calls"),
    ).sort(["backend", "J", "architecture", "study", "seed", "recall_session", "reach", "probe_id"])


def _recall_label(chains: list[Any], config: "RunConfig", recall: list[dict[str, Any]]) -> list[str]:
    """How results name each back-end: the browsing slug's label, plus the recaller when it differs."""
    from vismem.pipelines.dmv.protocol import backend_label, is_stand_in

    names = []
    for b, spec in enumerate(recall):
        browse = next((c.slug.rsplit("--", 1)[0] for c in chains if c.backend == b), f"backend{b}")
        rec = backend_label(spec) + (" (stand-in)" if is_stand_in(spec) else "")
        names.append(browse if config.probes.backends is None else f"{browse} / {rec}")
    return names


def _scorer(ctx: "RunContext", chains: list[Any], keys: list[list[str]], kwargs: dict[str, Any],
            workers: int) -> tuple[Any, Any]:
    """``(score, cache)``: ``score(units)`` heals and reuses the finished units, runs the rest and
    returns ``{"ran", "failed", "finished" (units now cached), "finished_keys", "cached",
    "healed"}``; ``cache(unit)`` is the unit's :class:`ProbeCache`."""
    from vismem.core.cache import heal
    from vismem.pipelines.dmv.probecache import ProbeCache
    from vismem.pipelines.dmv.probes_job import run_units

    cfg = ctx.config

    def cache(u: dict[str, Any]) -> Any:
        c = chains[u["chain"]]
        return ProbeCache(ctx.store, c.slug, c.seed, keys[u["arch"]][c.backend])

    def score(units: list[dict[str, Any]]) -> dict[str, Any]:
        pairs = {(u["arch"], u["chain"]) for u in units}
        caches = {k: cache({"arch": k[0], "chain": k[1]}) for k in pairs}
        done = {k: c.done_units() for k, c in caches.items()}
        # A finished unit is trusted only whole: a damaged one is discarded and probed again.
        healed = heal(((caches[(u["arch"], u["chain"])].units, f"{u['set']}/s{u['j']}") for u in units
                       if (u["set"], u["j"]) in done[(u["arch"], u["chain"])]), ctx.logger)
        if healed:
            done = {k: c.done_units() for k, c in caches.items()}
        todo = [u for u in units if (u["set"], u["j"]) not in done[(u["arch"], u["chain"])]]
        rows = run_units(todo, kwargs, on_ray=cfg.probes.on_ray, ray_cfg=cfg.ray, workers=workers) if todo else []
        finished = [u for u in units if (u["set"], u["j"]) in done[(u["arch"], u["chain"])]
                    or cache(u).is_done(u["set"], u["j"])]
        return {"ran": rows, "failed": [r for r in rows if not r["ok"]], "finished": finished,
                "cached": len(units) - len(todo), "healed": healed,
                "finished_keys": [(chains[u["chain"]].slug, chains[u["chain"]].seed,
                                   keys[u["arch"]][chains[u["chain"]].backend], u["set"], u["j"]) for u in finished]}

    return score, cache


def _adaptive(ctx: "RunContext", units: list[dict[str, Any]], chains: list[Any], archs: list[Any],
              labels: list[str], scorer: tuple[Any, Any],
              observations: dict[Any, list[Any]]) -> tuple[dict[str, Any], Any]:
    """Score ``units`` in adaptive rounds (:mod:`vismem.pipelines.dmv.adaptive`); returns the
    merged scoring result and the cell status."""
    from vismem.pipelines.dmv import adaptive

    cfg = ctx.config
    cue_of = cue_lookup(cfg).get
    Jmax = max(cfg.probes.J or (cfg.encode.J,))
    sizes = {(ci, j): n for ci, c in enumerate(chains)
             for j, n in adaptive.unit_sizes(observations[c], cue_of, Jmax).items()}
    rule = adaptive.rule_of(cfg, [a.name for a in archs])
    frame = adaptive.eligible_frame(cfg, units, chains, archs, labels, sizes)
    results: list[dict[str, Any]] = []
    score, cache = scorer

    def scored(batch: list[dict[str, Any]]) -> dict[str, Any]:
        results.append(score(batch))
        return results[-1]

    def correct_of(u: dict[str, Any]) -> int:
        return int(cache(u).read_summary(u["set"], u["j"])["correct"])

    chosen, status, rounds = adaptive.run_rounds(cfg, frame, units, scored, correct_of, rule, ctx.logger)
    merged = {"ran": [r for x in results for r in x["ran"]], "failed": [r for x in results for r in x["failed"]],
              "finished_keys": [k for x in results for k in x["finished_keys"]],
              "cached": sum(x["cached"] for x in results), "healed": [h for x in results for h in x["healed"]],
              "units": chosen, "extra": adaptive.summary(status, rounds)}
    return merged, status


def run(ctx: "RunContext") -> dict[str, Any]:
    """Run every pending probe unit (or, adaptive, the rounds the stopping rule asks for), then
    write ``results/probes.parquet`` (and ``results/adaptive.parquet``)."""
    from vismem.analysis.schemas import write_results
    from vismem.pipelines.dmv.chains import build_architectures, load_run_chains, plan_chains
    from vismem.pipelines.dmv.probecache import arch_key, read_units
    from vismem.pipelines.dmv.protocol import episodes_per_actor

    cfg = ctx.config
    if not cfg.probes.enabled:
        return {"status": "disabled"}
    t0 = time.perf_counter()
    observations = load_run_chains(ctx)  # every session the probes read is cached (ConfigError otherwise)
    chains = plan_chains(cfg)
    archs = build_architectures(cfg)
    recall = recallers(cfg)
    proto = _protocol(cfg)
    # keys[arch][backend]: the architecture, its features, the chain's recalling VLM, the protocol.
    keys = [[arch_key({"name": a.name, "spec": a.spec}, rec,
                      {**proto, "features": sorted(fs.key for fs in a.required_features())}) for rec in recall]
            for a in archs]
    for i, spec in enumerate(recall):
        ctx.manifest.component(f"probes.recaller[{i}]", spec)
    subset = subset_only(cfg, [a.name for a in archs])
    units = plan_units(cfg, chains, len(archs), subset)
    workers = cfg.probes.workers or cfg.ray.concurrency
    episodes = episodes_per_actor(cfg.probes.in_flight, recall, workers)
    scorer = _scorer(ctx, chains, keys, worker_kwargs(ctx, chains, archs, keys, recall, episodes=episodes), workers)
    labels = _recall_label(chains, cfg, recall)
    status = None
    if cfg.probes.mode == "adaptive":
        res, status = _adaptive(ctx, units, chains, archs, labels, scorer, observations)
    else:
        res = scorer[0](units)
        res["units"] = units
    ctx.logger.info("probes: %d units, %d cached, %d ran", len(res["units"]), res["cached"], len(res["ran"]))
    rows, failed, finished = res["ran"], res["failed"], res["finished_keys"]
    raw = read_units(ctx.store, finished)
    summary: dict[str, Any] = {"units": len(res["units"]), "ran": len(rows) - len(failed), "cached": res["cached"],
                               "healed": len(res["healed"]), **_subset_summary(cfg, archs, subset),
                               **res.get("extra", {}),
                               "failed": [{"unit": {k: r[k] for k in ("chain", "arch", "j", "set")}, "error": r["error"]}
                                          for r in failed][:20]}
    if status is not None:
        write_results(ctx.store, ctx.run_prefix, "adaptive", status)
    if raw is not None:
        import polars as pl

        arch_of = {k: i for i, row in enumerate(keys) for k in row}
        raw = raw.with_columns(pl.col("arch_key").replace_strict(arch_of, return_dtype=pl.Int64).alias("arch"))
        df = results_frame(raw, cfg, chains, archs, labels)
        write_results(ctx.store, ctx.run_prefix, "probes", df)
        main = df.filter(pl.col("study") == "main")
        summary["tsr"] = {f"{r['architecture']}@J{r['J']}": round(r["tsr"], 4) for r in
                          main.group_by(["architecture", "J"]).agg(pl.col("correct").mean().alias("tsr"))
                          .sort(["J", "architecture"]).iter_rows(named=True)}
        summary["probes"] = int(raw.height)
        summary["vlm_calls_per_probe"] = round(float(raw["vlm_calls"].mean()), 3) if raw.height else None
        summary["results"] = f"{ctx.run_prefix}/results/probes.parquet"
    summary["status"] = "partial" if failed or len(finished) < len(res["units"]) else "done"
    if failed:
        from vismem.core.failures import failure_line

        summary["failure"] = failure_line([str(r["error"]) for r in failed], len(rows), "probe units run")
    summary["wall_s"] = round(time.perf_counter() - t0, 3)
    return summary


def _subset_summary(config: "RunConfig", archs: list[Any], subset: set[int]) -> dict[str, Any]:
    """The ablation chain subset as the summary records it (nothing when every chain is probed)."""
    from vismem.pipelines.dmv.protocol import ablation_seeds

    if not subset:
        return {}
    return {"ablation_chains": {"seeds": ablation_seeds(config), "architectures": [archs[i].name for i in sorted(subset)]}}


def describe(s: dict[str, Any]) -> str:
    """One line of what ran and what was reused (the end-of-run summary)."""
    return (f"{count(s.get('units'))} probe units: {count(s.get('ran'))} ran, {count(s.get('cached'))} reused; "
            f"{count(s.get('probes'))} probes" + (f"; {s['healed']} damaged units redone" if s.get("healed") else "")
            + (f"; {len(s['ablation_chains']['architectures'])} ablation architectures on chains (seeds) "
               f"{s['ablation_chains']['seeds']}" if s.get("ablation_chains") else "")
            + (f"; adaptive: {s['adaptive']['units_probed']} of {s['adaptive']['units_eligible']} units in "
               f"{s['adaptive']['rounds']} rounds" if s.get("adaptive") else ""))


STAGE = Stage(name="probes", describe=describe, inputs=storefront_inputs, section="probes", run=run, check=check)

