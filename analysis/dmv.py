"""DMV-Bench scoring: pure functions from validated probe/encoding frames to result tables.

Every rate is a proportion in [0, 1] (the report shows percent). A *cell* is
(backend, J, architecture); its chains (clusters) are its seeds. Unless told otherwise the
main-grid functions score the *common probe set* of each (backend, J): probes answered by
every architecture of that block, so rows within a cell are comparable (paper §5, App. G).
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import polars as pl

from vismem.analysis.bootstrap import N_RESAMPLES, seeded_rng, cluster_ci_many, naive_ci_many, resample_counts
from vismem.analysis.permutation import chain_sum_test

CELL = ["backend", "J", "architecture"]
BLOCK = ["backend", "J"]
PROBE_KEY = ["backend", "J", "seed", "probe_id"]


def study(probes: pl.DataFrame, name: str) -> pl.DataFrame:
    """Rows of one study (``main``, ``ablation``, ``alpha_sweep``)."""
    return probes.filter(pl.col("study") == name)


def common_probes(probes: pl.DataFrame, by: Sequence[str] = BLOCK) -> pl.DataFrame:
    """Keep probes answered by every architecture present in their ``by`` block."""
    if probes.height == 0:
        return probes
    # Window counts instead of group-by + joins: one pass, row order kept.
    arch = pl.col("architecture").n_unique()
    return probes.filter(arch.over(PROBE_KEY) == arch.over(list(by)))


def _chain_table(probes: pl.DataFrame, cell: Sequence[str]) -> pl.DataFrame:
    return (probes.group_by([*cell, "seed"])
            .agg(pl.len().alias("n"), pl.col("correct").cast(pl.Int64).sum().alias("s"))
            .sort([*cell, "seed"]))


_CELL_SCHEMA = {"n_probes": pl.Int64, "n_chains": pl.Int64, "n_correct": pl.Int64, "tsr": pl.Float64,
                "naive_low": pl.Float64, "naive_high": pl.Float64, "cluster_low": pl.Float64,
                "cluster_high": pl.Float64, "note": pl.String}


def rate_cells(probes: pl.DataFrame, cell: Sequence[str] = CELL, *, n_resamples: int = N_RESAMPLES,
               seed: int = 0) -> pl.DataFrame:
    """TSR per cell with naive (probe iid) and cluster (chain) bootstrap 95% CIs.

    Vectorised: cells with the same chain set share one ``(B, K)`` chain-count matrix drawn
    from ``(seed, K)`` and are computed in one matrix product; naive CIs draw binomials.
    Degenerate cells get NaN bounds and a ``note`` (single chain, all correct/wrong).
    """
    cell = list(cell)
    schema = {c: probes.schema[c] for c in cell} | _CELL_SCHEMA
    if probes.height == 0:
        return pl.DataFrame(schema=schema)
    chains = _chain_table(probes, cell)
    per_cell = (chains.group_by(cell, maintain_order=True)
                .agg(pl.col("seed"), pl.col("n"), pl.col("s")))
    keys = per_cell.select(cell).rows()
    seeds = per_cell["seed"].to_list()
    ns = per_cell["n"].to_list()
    ss = per_cell["s"].to_list()
    n_tot = np.array([sum(n) for n in ns], dtype=np.int64)
    s_tot = np.array([sum(s) for s in ss], dtype=np.int64)
    naive_lo, naive_hi = naive_ci_many(s_tot, n_tot, n_resamples=n_resamples, seed=seeded_rng(seed, 1))
    cl_lo = np.full(len(keys), np.nan)
    cl_hi = np.full(len(keys), np.nan)
    groups: dict[tuple, list[int]] = {}
    for i, sd in enumerate(seeds):
        groups.setdefault(tuple(sd), []).append(i)
    weights: dict[int, np.ndarray] = {}
    for chain_set, idx in groups.items():
        k = len(chain_set)
        if k < 2:
            continue
        if k not in weights:
            weights[k] = resample_counts(k, n_resamples, seeded_rng(seed, 2, k))
        S = np.array([ss[i] for i in idx], dtype=np.float64).T
        N = np.array([ns[i] for i in idx], dtype=np.float64).T
        lo, hi = cluster_ci_many(S, N, weights=weights[k])
        cl_lo[idx], cl_hi[idx] = lo, hi
    notes = []
    for i in range(len(keys)):
        k = len(seeds[i])
        note = []
        if k < 2:
            note.append("single chain: cluster CI undefined")
        if s_tot[i] == n_tot[i]:
            note.append("all correct")
        elif s_tot[i] == 0:
            note.append("all wrong")
        notes.append("; ".join(note))
    data = {c: [k[j] for k in keys] for j, c in enumerate(cell)}
    data |= {"n_probes": n_tot, "n_chains": [len(s) for s in seeds], "n_correct": s_tot,
             "tsr": s_tot / np.maximum(n_tot, 1), "naive_low": naive_lo, "naive_high": naive_hi,
             "cluster_low": cl_lo, "cluster_high": cl_hi, "note": notes}
    return pl.DataFrame(data, schema=schema).sort(cell)


def tsr_cells(probes: pl.DataFrame, *, common: bool = True, n_resamples: int = N_RESAMPLES,
              seed: int = 0) -> pl.DataFrame:
    """Main-grid TSR per (backend, J, architecture) with naive and cluster CIs (Tables 2, 8, 9)."""
    main = study(probes, "main")
    if common:
        main = common_probes(main)
    return rate_cells(main, CELL, n_resamples=n_resamples, seed=seed)


def table2(cells: pl.DataFrame) -> pl.DataFrame:
    """Paper Table 2 layout: one row per architecture, one TSR column per ``backend J=..``.

    A last row ``n_r`` gives the probes per column (max over architectures: the common set).
    Missing cells are null.
    """
    if cells.height == 0:
        return pl.DataFrame(schema={"architecture": pl.String})
    c = cells.with_columns((pl.col("backend") + " J=" + pl.col("J").cast(pl.String)).alias("column"))
    order = c.select("backend", "J", "column").unique().sort("backend", "J")["column"].to_list()
    wide = c.pivot(on="column", index="architecture", values="tsr").sort("architecture")
    n_r = c.group_by("column").agg(pl.col("n_probes").max().cast(pl.Float64))
    n_row = pl.DataFrame({"architecture": ["n_r"]} | {col: n_r.filter(pl.col("column") == col)["n_probes"].to_list()
                                                      for col in order})
    return pl.concat([wide.select("architecture", *order), n_row], how="vertical_relaxed")


def retention(probes: pl.DataFrame, *, common: bool = True, n_resamples: int = N_RESAMPLES,
              seed: int = 0) -> pl.DataFrame:
    """TSR by recall reach per (backend, J, architecture) with CIs (retention curves, App. G)."""
    main = study(probes, "main")
    if common:
        main = common_probes(main)
    return rate_cells(main, [*CELL, "reach"], n_resamples=n_resamples, seed=seed)


def reach_table(ret: pl.DataFrame) -> pl.DataFrame:
    """Per-reach breakdown (App. G layout): one row per (backend, J, architecture), columns ``r=1..``."""
    if ret.height == 0:
        return pl.DataFrame(schema={"backend": pl.String, "J": pl.Int64, "architecture": pl.String})
    reaches = sorted(ret["reach"].unique().to_list())
    wide = ret.pivot(on="reach", index=CELL, values="tsr")
    return wide.select(*CELL, *[pl.col(str(r)).alias(f"r={r}") for r in reaches]).sort(CELL)


_BIN_SCHEMA = {"backend": pl.String, "J": pl.Int64, "architecture": pl.String, "bin": pl.Int64,
               "bin_low": pl.Float64, "bin_high": pl.Float64, "n": pl.Int64, "tsr": pl.Float64}


def _main_rows(probes: pl.DataFrame, common: bool) -> pl.DataFrame:
    main = study(probes, "main")
    return common_probes(main) if common else main


def binned(probes: pl.DataFrame, column: str, *, n_bins: int = 8, common: bool = True) -> pl.DataFrame:
    """TSR by equal-width bins of ``column`` (Figs 5-6 top row: ``bank_size``, 8 bins).

    Bins are set per (backend, J) over that block's range, so every architecture of a block
    shares them. Columns: backend, J, architecture, bin, bin_low, bin_high, n, tsr.
    """
    main = _main_rows(probes, common)
    schema = _BIN_SCHEMA
    if main.height == 0:
        return pl.DataFrame(schema=schema)
    parts = []
    for (backend, j), block in main.group_by(BLOCK, maintain_order=True):
        x = block[column].cast(pl.Float64).to_numpy()
        lo, hi = float(x.min()), float(x.max())
        edges = np.linspace(lo, hi, n_bins + 1) if hi > lo else np.array([lo, lo + 1.0])
        idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
        b = block.with_columns(pl.Series("bin", idx, dtype=pl.Int64), pl.Series("bin_low", edges[idx]),
                               pl.Series("bin_high", edges[idx + 1]))
        agg = (b.group_by("architecture", "bin", "bin_low", "bin_high")
               .agg(pl.len().alias("n"), pl.col("correct").cast(pl.Float64).mean().alias("tsr")))
        parts.append(agg.with_columns(pl.lit(backend).alias("backend"), pl.lit(j, pl.Int64).alias("J")))
    return pl.concat(parts).select(list(schema)).cast(schema).sort("backend", "J", "architecture", "bin")


def position_bins(probes: pl.DataFrame, *, common: bool = True) -> pl.DataFrame:
    """TSR by encoding position as the paper bins it (Figs 5-6 bottom row): one bin per visit
    session of each (backend, J), i.e. sessions 1..J-1 (the last session is never a target), so
    J in {5, 10, 15} gives 4 + 9 + 14 bins per back-end (the paper's 53 over two back-ends: a bin
    without probes is absent). ``bin`` = ``bin_low`` = ``bin_high`` = the visit session; columns as
    :func:`binned`.
    """
    main = _main_rows(probes, common)
    if main.height == 0:
        return pl.DataFrame(schema=_BIN_SCHEMA)
    return (main.group_by("backend", "J", "architecture", pl.col("visit_session").alias("bin"))
            .agg(pl.len().alias("n"), pl.col("correct").cast(pl.Float64).mean().alias("tsr"))
            .with_columns(*[pl.col("bin").cast(pl.Float64).alias(c) for c in ("bin_low", "bin_high")])
            .select(list(_BIN_SCHEMA)).cast(_BIN_SCHEMA).sort("backend", "J", "architecture", "bin"))


def leader_bins(bins: pl.DataFrame, leader: str) -> pl.DataFrame:
    """Per (backend, J): bins where ``leader`` is strictly above / tied with every other architecture."""
    schema = {"backend": pl.String, "J": pl.Int64, "bins": pl.Int64, "leads": pl.Int64, "ties": pl.Int64}
    if bins.height == 0 or leader not in bins["architecture"].to_list():
        return pl.DataFrame(schema=schema)
    lead = bins.filter(pl.col("architecture") == leader).select("backend", "J", "bin", pl.col("tsr").alias("lt"))
    best_other = (bins.filter(pl.col("architecture") != leader).group_by("backend", "J", "bin")
                  .agg(pl.col("tsr").max().alias("ot")))
    j = lead.join(best_other, on=["backend", "J", "bin"], how="inner")
    return (j.group_by("backend", "J")
            .agg(pl.len().alias("bins"), (pl.col("lt") > pl.col("ot")).sum().alias("leads"),
                 (pl.col("lt") == pl.col("ot")).sum().alias("ties"))
            .cast(schema).sort("backend", "J"))


#: How a variant of a hybrid family is named: ``<family>-a<alpha>`` (a sweep point), ``<family>-verb``
#: (verbal-only retrieval, the alpha = 0 endpoint) or ``<family>-vis`` (visual-only, alpha = 1).
_SWEEP_SUFFIX = re.compile(r"-(a\d+(?:\.\d+)?|verb|vis)$")
_ENDPOINTS = {"verb": 0.0, "vis": 1.0}


def sweep_family(architecture: str) -> str:
    """The family an alpha-sweep variant belongs to (``dualmem-a0.25``, ``dualmem-verb`` -> ``dualmem``)."""
    return _SWEEP_SUFFIX.sub("", architecture)


def alpha_sweep(probes: pl.DataFrame, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> pl.DataFrame:
    """TSR by hybrid-retrieval weight alpha (Fig. 7), with CIs: one curve per family and back-end.

    The points are the ``study == alpha_sweep`` rows (every alpha its own variant, e.g.
    ``dualmem-a0.25``, ``dualmem-a0.5``, ``dualmem``) plus the family's single-channel ablations as the
    endpoints the paper plots: ``<family>-verb`` at alpha 0 and ``<family>-vis`` at alpha 1 (unless
    the sweep has its own point there). ``architecture`` is the family; ``source`` the variant.
    """
    sweep = study(probes, "alpha_sweep").filter(pl.col("alpha").is_not_null())
    fam = pl.col("architecture").str.replace(_SWEEP_SUFFIX.pattern, "")
    sweep = sweep.with_columns(pl.col("architecture").alias("source"), fam.alias("architecture"))
    ablation, ends = study(probes, "ablation"), []
    for family in sweep["architecture"].unique().sort().to_list():
        have = set(sweep.filter(pl.col("architecture") == family)["alpha"].to_list())
        for suffix, a in _ENDPOINTS.items():
            if a not in have:
                ends.append(ablation.filter(pl.col("architecture") == f"{family}-{suffix}").with_columns(
                    pl.col("architecture").alias("source"), pl.lit(family).alias("architecture"),
                    pl.lit(a, pl.Float64).alias("alpha")))
    rows = pl.concat([sweep, *ends], how="vertical_relaxed") if ends else sweep
    # One curve, one chain set: where some points were probed only on an ablation chain subset
    # (probes.ablation_chains, as the paper's Fig. 7), every point of the curve is scored on the
    # chains all its points have (with every point on every chain, nothing changes).
    keep: dict[tuple[str, int, str], set[int]] = {}
    for b, J, a, _source, seeds in rows.group_by(*CELL, "source").agg(pl.col("seed").unique()).iter_rows():
        keep[(b, J, a)] = keep.get((b, J, a), set(seeds)) & set(seeds)
    if keep:
        rows = rows.filter(pl.any_horizontal([(pl.col("backend") == b) & (pl.col("J") == J)
                                              & (pl.col("architecture") == a) & pl.col("seed").is_in(sorted(s))
                                              for (b, J, a), s in keep.items()]))
    return rate_cells(rows, [*CELL, "alpha", "source"], n_resamples=n_resamples, seed=seed)


def ablations(probes: pl.DataFrame, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> pl.DataFrame:
    """TSR per ablation variant (Table 4), with CIs, from ``study == ablation``."""
    return rate_cells(study(probes, "ablation"), [*CELL, "variant"], n_resamples=n_resamples, seed=seed)


def encoding_stats(encoding: pl.DataFrame, *, min_styles: int = 3) -> pl.DataFrame:
    """Per-session encoding statistics per back-end (Table 3): means, SDs, compliance."""
    schema = {"backend": pl.String, "sessions": pl.Int64, "chains": pl.Int64, "steps_mean": pl.Float64,
              "steps_sd": pl.Float64, "products_mean": pl.Float64, "products_sd": pl.Float64,
              "styles_mean": pl.Float64, "styles_sd": pl.Float64, f"share_styles_ge{min_styles}": pl.Float64}
    if encoding.height == 0:
        return pl.DataFrame(schema=schema | {"invalid_actions_mean": pl.Float64})
    if "invalid_actions" not in encoding.columns:
        encoding = encoding.with_columns(pl.lit(None, pl.Int64).alias("invalid_actions"))
    return (encoding.group_by("backend")
            .agg(pl.len().alias("sessions"), pl.col("seed").n_unique().alias("chains"),
                 pl.col("steps").mean().alias("steps_mean"), pl.col("steps").std().alias("steps_sd"),
                 pl.col("distinct_products").mean().alias("products_mean"),
                 pl.col("distinct_products").std().alias("products_sd"),
                 pl.col("styles").mean().alias("styles_mean"), pl.col("styles").std().alias("styles_sd"),
                 (pl.col("styles") >= min_styles).mean().alias(f"share_styles_ge{min_styles}"),
                 pl.col("invalid_actions").mean().alias("invalid_actions_mean"))
            .cast(schema | {"invalid_actions_mean": pl.Float64}).sort("backend"))


def paired_test(probes: pl.DataFrame, a: str, b: str, block: Sequence[str] = BLOCK, *,
                seed: int = 0) -> pl.DataFrame:
    """Exact paired cluster sign-permutation test of ``a`` vs ``b`` per block (Table 10).

    Pairs main-grid probes by (backend, J, seed, probe_id); d = correct_a - correct_b.
    """
    schema = {"backend": pl.String, "J": pl.Int64, "a": pl.String, "b": pl.String, "n_chains": pl.Int64,
              "n_probes": pl.Int64, "d_bar": pl.Float64, "p_value": pl.Float64, "min_p": pl.Float64,
              "note": pl.String}
    main = study(probes, "main")
    pa = main.filter(pl.col("architecture") == a).select(PROBE_KEY + [pl.col("correct").alias("ca")])
    pb = main.filter(pl.col("architecture") == b).select(PROBE_KEY + [pl.col("correct").alias("cb")])
    pairs = pa.join(pb, on=PROBE_KEY, how="inner")
    rows = []
    blocks = main.filter(pl.col("architecture").is_in([a, b])).select(list(block)).unique().sort(list(block)).rows()
    for key in blocks:
        sel = pairs.filter(pl.all_horizontal([pl.col(c) == v for c, v in zip(block, key)]))
        d = (sel["ca"].cast(pl.Int64) - sel["cb"].cast(pl.Int64))
        sums = (sel.with_columns(d.alias("d")).group_by("seed").agg(pl.col("d").sum()).sort("seed")["d"].to_numpy())
        res = chain_sum_test(sums, n_probes=sel.height, seed=seed)
        rows.append(dict(zip(block, key)) | {"a": a, "b": b, "n_chains": res.n_chains, "n_probes": res.n_probes,
                                              "d_bar": res.d_bar, "p_value": res.p_value, "min_p": res.min_p,
                                              "note": res.note})
    return pl.DataFrame(rows, schema=schema)


def top_two(cells: pl.DataFrame) -> tuple[str, str] | None:
    """The two architectures with the highest mean TSR over the main grid (best, runner-up)."""
    if cells.height == 0:
        return None
    ranked = cells.group_by("architecture").agg(pl.col("tsr").mean()).sort("tsr", "architecture",
                                                                            descending=[True, False])
    names = ranked["architecture"].to_list()
    return (names[0], names[1]) if len(names) >= 2 else None
