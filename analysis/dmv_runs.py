"""DMV-Bench runs in a report: the dialogue protocol each table was measured under, and one
report over several runs that share it.

The protocol (``encode.protocol``: ``official`` = the published prompts, ``fixed`` = the project's
corrections) changes what a number means, so every DMV-Bench table caption names it.

Several runs (e.g. the main J = 5, 10, 15 run and the J = 50 Monte Carlo pilot) are combined by
:func:`combine_runs`: their probe and encoding rows are concatenated, each probe id prefixed with
its run (probes of different runs never pair), and for each J in ``pool_first`` a run without
that J contributes the first J sessions of its longer chains (probes issued after session J or
earlier, relabelled J), as the paper's J = 5 cell pools the main run's 20 chains and the pilot's
first 5 sessions. :func:`pooling_table` says which cells pool which chains.
"""

from __future__ import annotations

from typing import Any, Sequence

import polars as pl

#: ``encode.protocol`` of a run whose manifest config predates the choice (it ran the fixes).
DEFAULT_PROTOCOL = "fixed"


def run_protocol(manifest: dict[str, Any] | None) -> str | None:
    """The dialogue protocol of a run from its manifest config; None when no config is recorded."""
    cfg = (manifest or {}).get("config")
    if not isinstance(cfg, dict):
        return None
    enc = cfg.get("encode") if isinstance(cfg.get("encode"), dict) else {}
    return str(enc.get("protocol") or DEFAULT_PROTOCOL)


def protocol_caption(protocol: str | None) -> str:
    """The caption prefix every DMV-Bench table carries."""
    meaning = {"official": "the published prompts and rules", "fixed": "the project's corrected prompts"}
    if protocol is None:
        return "Protocol: not recorded (no manifest config)."
    return f"Protocol: {protocol} ({meaning.get(protocol, 'unknown')})."


def common_protocol(protocols: dict[str, str | None]) -> str | None:
    """The one protocol ``{run: protocol}`` share; :class:`vismem.core.errors.ConfigError` (one
    line) naming each run's when they differ."""
    from vismem.core.errors import ConfigError

    known = {r: p for r, p in protocols.items() if p is not None}
    if len(set(known.values())) > 1:
        raise ConfigError("runs with different protocols cannot share a report: "
                         + ", ".join(f"{r} ({p})" for r, p in known.items()))
    return next(iter(known.values()), None)


def _tag(df: pl.DataFrame, run: str) -> pl.DataFrame:
    return df.with_columns(pl.lit(run).alias("run"))


def combine_runs(tables: dict[str, dict[str, pl.DataFrame]], pool_first: Sequence[int] = ()) -> dict[str, pl.DataFrame]:
    """One set of result tables from ``{run: {kind: frame}}`` (run order kept).

    Probe ids become ``<run>:<id>``; each row gets ``run`` (adaptive cell marks too) and ``source_J`` (the J it was
    measured at). For each J in ``pool_first``, a run with no main-grid rows at J for a
    back-end but rows at a longer J' adds its rows of the shortest such J' issued by session J,
    as J (the chain's first J sessions)."""
    probes, enc, adaptive = [], [], []
    seen: dict[tuple[str, int], Any] = {}  # (backend, seed) -> the chain's slug in the first run that has it
    for i, (run, t) in enumerate(tables.items()):
        p = t.get("probes")
        if p is not None and p.height:
            p = _distinct_chains(p, i, seen)
            p = _tag(p, run).with_columns((pl.lit(run + ":") + pl.col("probe_id")).alias("probe_id"),
                                          pl.col("J").alias("source_J"))
            probes.append(p)
            for J in sorted(set(pool_first)):
                probes.extend(_first_sessions(p, J))
        e = t.get("encoding")
        if e is not None and e.height:
            enc.append(_tag(e, run))
        a = t.get("adaptive")  # an adaptive run's cell marks, named by run
        if a is not None and a.height:
            adaptive.append(_tag(a, run))
    out: dict[str, pl.DataFrame] = {}
    if adaptive:
        out["adaptive"] = pl.concat(adaptive, how="diagonal_relaxed")
    if probes:
        out["probes"] = pl.concat(probes, how="diagonal_relaxed")
    if enc:
        out["encoding"] = pl.concat(enc, how="diagonal_relaxed")
    return out


#: Added (times the run's index) to the seed of a chain that shares (back-end, seed) with a chain
#: of an earlier run but not its trajectories (another slug): seeds are the chains (clusters).
SEED_OFFSET = 1_000_000_000


def _distinct_chains(p: pl.DataFrame, i: int, seen: dict[tuple[str, int], Any]) -> pl.DataFrame:
    """``p`` with the seeds of chains that collide with an earlier run's different chain moved
    by ``i * SEED_OFFSET``; the same (back-end, seed, chain slug) in two runs is one chain."""
    slug = "chain_slug" in p.columns
    ids = p.select("backend", "seed", *(["chain_slug"] if slug else [])).unique()
    clash = []
    for row in ids.iter_rows(named=True):
        key, chain = (row["backend"], int(row["seed"])), row.get("chain_slug")
        if key in seen and (seen[key] is None or seen[key] != chain):
            clash.append(key)
        seen.setdefault(key, chain)
    if not clash:
        return p
    by_backend: dict[str, list[int]] = {}
    for b, sd in clash:
        by_backend.setdefault(b, []).append(sd)
    hit = pl.any_horizontal([(pl.col("backend") == b) & pl.col("seed").is_in(sds) for b, sds in by_backend.items()])
    return p.with_columns(pl.when(hit).then(pl.col("seed") + i * SEED_OFFSET).otherwise(pl.col("seed")).alias("seed"))


def _first_sessions(p: pl.DataFrame, J: int) -> list[pl.DataFrame]:
    """Per back-end without main rows at ``J``: its shortest longer chains cut to their first J sessions."""
    parts = []
    main = p.filter(pl.col("study") == "main")
    for backend in main["backend"].unique().sort().to_list():
        rows = main.filter(pl.col("backend") == backend)
        Js = set(rows["J"].unique().to_list())
        longer = sorted(j for j in Js if j > J)
        if J in Js or not longer:
            continue
        parts.append(rows.filter((pl.col("J") == longer[0]) & (pl.col("recall_session") <= J))
                     .with_columns(pl.lit(J, pl.Int64).alias("J")))
    return parts


def pooling_table(probes: pl.DataFrame) -> pl.DataFrame:
    """Which chains each main-grid (back-end, J) cell pools: one row per (cell, run, source J)."""
    if "run" not in probes.columns:
        return pl.DataFrame()
    main = probes.filter(pl.col("study") == "main")
    t = (main.group_by("backend", "J", "run", "source_J")
         .agg(pl.col("seed").n_unique().alias("chains"))
         .sort("backend", "J", "run", "source_J"))
    return t.with_columns(pl.when(pl.col("source_J") == pl.col("J")).then(pl.lit("whole chains"))
                          .otherwise(pl.format("first {} sessions of J={} chains", "J", "source_J")).alias("rows"))


def pooling_caption(pool: pl.DataFrame) -> str:
    """One sentence per (back-end, J) cell that pools more than one run or source."""
    if not pool.height:
        return ""
    lines = []
    for (backend, J), g in pool.group_by("backend", "J", maintain_order=True):
        if g.height < 2:
            continue
        parts = [f"{r['run']} {r['chains']} chains" + ("" if r["source_J"] == J else f" (first {J} sessions of J={r['source_J']})")
                 for r in g.iter_rows(named=True)]
        lines.append(f"{backend} J={J} pools {' + '.join(parts)}.")
    return " ".join(lines)


__all__ = ["combine_runs", "common_protocol", "pooling_caption", "pooling_table", "protocol_caption", "run_protocol"]
