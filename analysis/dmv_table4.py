"""Table 4 as the DMV-Bench paper lays it out, Table 7 and the caption cue-verbalisation rate.

Table 4 (DualMem ablations) has four blocks -- the alpha sweep, injection (hybrid retrieval at
alpha 0.5), visual retrieval x injection, and the encoder (alpha 0.5) -- whose rows are variants
(one variant may sit in several blocks, e.g. ``dualmem-a0.5``). The paper scores the first three
blocks on the 7 seeded chains of its ablation sweep and the encoder block on the full set; here
each row shows both: the *subset* (the chains every Table 4 variant present was probed on, the
first ``subset_chains`` of them when given) and the *full* set (every chain the variant has).
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


def table4(probes: pl.DataFrame, *, subset_chains: int | None = None, n_resamples: int = N_RESAMPLES,
           seed: int = 0) -> pl.DataFrame:
    """One row per (back-end, J, Table 4 row present): TSR with cluster CIs on the ablation
    chain subset and on the full set, with their probe and chain counts; ``order`` is the row's
    place in :data:`TABLE4`."""
    names = sorted({v for _, _, v in TABLE4})
    rows = (probes.filter(pl.col("architecture").is_in(names))
            .unique(["backend", "J", "architecture", "seed", "probe_id"], keep="first", maintain_order=True))
    if rows.height == 0:
        return pl.DataFrame()
    # The subset: chains every present Table 4 variant was probed on, per (back-end, J).
    per = rows.group_by("backend", "J", "architecture").agg(pl.col("seed").unique())
    subset: dict[tuple[str, int], list[int]] = {}
    for (b, J), g in per.group_by("backend", "J"):
        common = sorted(set.intersection(*(set(s) for s in g["seed"].to_list())))
        subset[(b, J)] = common[:subset_chains] if subset_chains else common
    keep = pl.any_horizontal([(pl.col("backend") == b) & (pl.col("J") == J) & pl.col("seed").is_in(s)
                              for (b, J), s in subset.items()])
    kw = dict(n_resamples=n_resamples, seed=seed)
    cols = ["n_probes", "n_chains", "tsr", "cluster_low", "cluster_high"]
    full = dmv.rate_cells(rows, dmv.CELL, **kw).select(*dmv.CELL, *cols)
    sub = dmv.rate_cells(rows.filter(keep), dmv.CELL, **kw).select(*dmv.CELL, *cols)
    both = full.join(sub, on=dmv.CELL, how="left", suffix="_subset")
    layout = pl.DataFrame([{"block": b, "row": r, "architecture": v, "order": i} for i, (b, r, v) in enumerate(TABLE4)])
    out = layout.join(both, on="architecture", how="inner").sort("backend", "J", "order")
    return out.select("backend", "J", "block", "row", "architecture",
                      *[f"{c}_subset" for c in cols], *cols, "order")


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


__all__ = ["PAPER_CUE_RATE", "TABLE4", "add_extra_tables", "table4", "table7"]
