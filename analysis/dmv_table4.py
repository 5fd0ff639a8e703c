"""Table 4 as the DMV-Bench paper lays it out, Table 7 and the caption cue-verbalisation rate.

Table 4 (DualMem ablations) has four blocks -- the alpha sweep, injection (hybrid retrieval at
alpha 0.5), visual retrieval x injection, and the encoder (alpha 0.5) -- whose rows are variants
(one variant may sit in several blocks, e.g. ``dualmem-a0.5``). The paper scores the first three
blocks on the 7 seeded chains of its ablation sweep and the encoder block on the full set; here
each row shows both: the *subset* (the chains every Table 4 variant present was probed on -- the
run's ``probes.ablation_chains`` when the probes stage ran its ablation variants on a subset -- the
first ``subset_chains`` of them when given) and the *full* set (every chain of the cell; empty for
a variant probed only on the subset).
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

from vismem.analysis import dmv
from vismem.analysis.bootstrap import N_RESAMPLES

#: (block, row label, variant) in the paper's order.
TABLE4: tuple[tuple[str, str, str], ...] = (
    ("alpha sweep", "verbal only (alpha 0)", "dualmem-verb"),
    ("alpha sweep", "alpha 0.25", "dualmem-a0.25"),
    ("alpha sweep", "alpha 0.5", "dualmem-a0.5"),
    ("alpha sweep", "alpha 0.75", "dualmem"),
    ("alpha sweep", "visual only (alpha 1)", "dualmem-vis"),
    ("injection (hybrid, alpha 0.5)", "image + caption", "dualmem-a0.5"),
    ("injection (hybrid, alpha 0.5)", "image only", "dualmem-img"),
    ("injection (hybrid, alpha 0.5)", "caption only", "dualmem-cap"),
    ("visual retrieval x injection", "image + caption", "dualmem-vis"),
    ("visual retrieval x injection", "image only", "dualmem-vis-img"),
    ("visual retrieval x injection", "caption only", "dualmem-vis-cap"),
    ("encoder (alpha 0.5)", "SigLIP-2", "dualmem-a0.5"),
    ("encoder (alpha 0.5)", "CLIP", "dualmem-clip"),
)


def ablation_subset(probes: pl.DataFrame, first: int | None = None) -> dict[tuple[str, int], list[int]]:
    """The ablation chain subset per (back-end, J): the chains (seeds) every Table 4 variant present
    was probed on -- the run's ``probes.ablation_chains`` when it probed its ablation variants on a
    subset, else every chain -- the first ``first`` of them when given."""
    names = sorted({v for _, _, v in TABLE4})
    rows = probes.filter(pl.col("architecture").is_in(names))
    out: dict[tuple[str, int], list[int]] = {}
    for (b, J), g in rows.group_by("backend", "J"):
        seeds = g.group_by("architecture").agg(pl.col("seed").unique())["seed"].to_list()
        common = sorted(set.intersection(*(set(s) for s in seeds)))
        out[(b, J)] = common[:first] if first else common
    return out


def table4(probes: pl.DataFrame, *, subset_chains: int | None = None, n_resamples: int = N_RESAMPLES,
           seed: int = 0) -> pl.DataFrame:
    """One row per (back-end, J, Table 4 row present): TSR with cluster CIs on the ablation chain
    subset (:func:`ablation_subset`) and on the full set, with their probe and chain counts;
    ``order`` is the row's place in :data:`TABLE4`. The full set is every chain of the (back-end,
    J) cell (any architecture's): a variant probed on fewer chains (only on the subset) has no
    full-set value (null), never its subset number under the full set's name."""
    names = sorted({v for _, _, v in TABLE4})
    rows = (probes.filter(pl.col("architecture").is_in(names))
            .unique(["backend", "J", "architecture", "seed", "probe_id"], keep="first", maintain_order=True))
    if rows.height == 0:
        return pl.DataFrame()
    subset = _subset_rows(rows, ablation_subset(rows, subset_chains))
    kw = dict(n_resamples=n_resamples, seed=seed)
    cols = ["n_probes", "n_chains", "tsr", "cluster_low", "cluster_high"]
    full = dmv.rate_cells(rows, dmv.CELL, **kw).select(*dmv.CELL, *cols)
    cell_chains = probes.group_by("backend", "J").agg(pl.col("seed").n_unique().alias("_cell_chains"))
    full = (full.join(cell_chains, on=["backend", "J"], how="left")
            .with_columns([pl.when(pl.col("n_chains") >= pl.col("_cell_chains")).then(pl.col(c)).alias(c) for c in cols])
            .drop("_cell_chains"))
    sub = dmv.rate_cells(rows.filter(subset), dmv.CELL, **kw).select(*dmv.CELL, *cols)
    both = full.join(sub, on=dmv.CELL, how="left", suffix="_subset")
    layout = pl.DataFrame([{"block": b, "row": r, "architecture": v, "order": i} for i, (b, r, v) in enumerate(TABLE4)])
    out = layout.join(both, on="architecture", how="inner").sort("backend", "J", "order")
    return out.select("backend", "J", "block", "row", "architecture",
                      *[f"{c}_subset" for c in cols], *cols, "order")


def _subset_rows(rows: pl.DataFrame, subset: dict[tuple[str, int], list[int]]) -> pl.Expr:
    """The filter keeping the rows of each (back-end, J)'s subset chains."""
    return pl.any_horizontal([(pl.col("backend") == b) & (pl.col("J") == J) & pl.col("seed").is_in(s)
                              for (b, J), s in subset.items()])


def subset_caption(probes: pl.DataFrame, first: int | None = None) -> str:
    """Which chains the ablation subset is, for the Table 4 caption: seeds as ranges, with the
    count; per (back-end, J) only when the cells differ."""
    sub = ablation_subset(probes, first)
    if not sub:
        return ""
    text = {k: f"{_ranges(v)} ({len(v)} chain{'s' if len(v) != 1 else ''})" for k, v in sub.items()}
    if len(set(text.values())) == 1:
        return f"seeds {next(iter(text.values()))}"
    return "; ".join(f"{b} J={J}: seeds {t}" for (b, J), t in sorted(text.items()))


def _ranges(seeds: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    out: list[str] = []
    for s in sorted(seeds):
        if out and int(out[-1].split("-")[-1]) == s - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{s}"
        else:
            out.append(str(s))
    return ", ".join(out)


def table7(architectures: pl.DataFrame, shown: Sequence[str] | None = None) -> pl.DataFrame:
    """Table 7 rows (architecture x encode / retrieve / inject) for the architectures ``shown``
    (all when None), in the given order."""
    if architectures.height == 0:
        return architectures
    if shown is not None:
        architectures = architectures.filter(pl.col("architecture").is_in(list(shown)))
    return architectures.select("architecture", "encode", "retrieve", "inject", *[
        c for c in architectures.columns if c not in ("architecture", "encode", "retrieve", "inject")])


#: The paper's caption cue-verbalisation rate (§5 "Injection": 16.5 % of 1,000 with-cue captions).
PAPER_CUE_RATE = 0.165


def add_extra_tables(parts: list, tables: dict[str, pl.DataFrame]) -> None:
    """Table 7 (``dmv_architectures``) into the main DMV-Bench section and the caption
    cue-verbalisation rate (``dmv_captions``) into the ablations section, when the run has them."""
    from vismem.analysis.captions import cue_verbalisation
    from vismem.analysis.render import Table

    by_id = {s.id: s for s in parts}
    arch = tables.get("dmv_architectures")
    main = by_id.get("dmv-main")
    if arch is not None and arch.height and main is not None:
        shown = None
        probes = tables.get("probes")
        if probes is not None:
            shown = probes.filter(pl.col("study") == "main")["architecture"].unique().to_list() or None
        from vismem.analysis.paper_order import order_rows

        t7 = order_rows(table7(arch, shown), "architecture")
        if t7.height:
            main.tables.append(Table("table7", "Table 7: architectures as choices over encode / retrieve / inject", t7,
                                     group="family",
                                     caption="Rows in the paper's order, by family. encode: the features the bank "
                                             "stores (component as run); retrieve and inject: the variant's "
                                             "mechanisms; paper: the paper rows it reproduces."))
            main.empty = ""
    caps = tables.get("dmv_captions")
    abl = by_id.get("dmv-ablations")
    if caps is not None and caps.height and abl is not None:
        rate = cue_verbalisation(caps).with_columns(pl.lit(PAPER_CUE_RATE).alias("paper"))
        abl.tables.append(Table("cue-verbalisation", "Captions naming the product's cue (colour and object)", rate,
                                percent=["rate", "paper"],
                                caption="Over the stored captions of every product image the run's chains visited; "
                                        "colour: the cue colour word, object: its head noun (analysis/captions.py). "
                                        "paper: 16.5 % of 1,000 with-cue captions (§5, Injection)."))
        abl.empty = ""


__all__ = ["PAPER_CUE_RATE", "TABLE4", "ablation_subset", "add_extra_tables", "subset_caption", "table4", "table7"]
