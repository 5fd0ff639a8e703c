"""The papers' row order and families, for the report's tables.

DMV-Bench (Table 7, read top to bottom; the official README's system table): the reference
baselines (NoMemory, TextOnly, Caption -- the verbal side), the three multimodal external memories
re-implemented here (WorldMM-lite, MMA-lite, M2A-lite), then DualMem (ours). MemShot (Tables 1-3):
Text RAG and the text-memory systems, then the visual memories (MemOCR, MemShot), then Table 3's
ablation rows (Full Session, w/o Header, w/o Rendering) and the rendering heights of Table 5.

:func:`order_rows` adds a ``family`` column and sorts a frame by the paper's order (names the
paper does not list follow, alphabetically, in a last family), keeping the frame's other sort keys
(back-end, J, dataset, k) outside the paper order. Pure.
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

#: (family, members in the paper's order) for DMV-Bench architectures (Table 2 / Table 7 rows).
DMV_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Reference baselines (verbal; no visual code)", ("nomemory", "textonly", "caption")),
    ("Multimodal external memories (-lite re-implementations)",
     ("worldmm-lite", "mma-lite", "mma-lite-official", "m2a-lite")),
    ("DualMem (ours)", ("dualmem",)),
    ("DualMem variants (Table 4 / Fig. 7)",
     ("dualmem-verb", "dualmem-a0.25", "dualmem-a0.5", "dualmem-vis", "dualmem-img", "dualmem-cap",
      "dualmem-vis-img", "dualmem-vis-cap", "dualmem-clip")),
)

#: The same for MemShot variants and memories (Tables 1-5 rows).
MEMSHOT_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Text memory (Text RAG and text-memory baselines)",
     ("text-rag", "flat-bm25", "bm25", "dense", "mem0", "lightmem", "memos", "memoryos", "evermemos")),
    ("Visual memory", ("session-summary-shots", "memocr", "memshot")),
    ("MemShot ablations (Table 3)",
     ("full-session", "full-session-no-render", "no-header", "no-render")),
    ("Rendering height (Table 5)", ("h512", "h512-no-render", "h1024", "h1024-no-render")),
)

#: Table 3's rows (MemShot ablations) in the paper's order: the Full Session pair, then MemShot
#: with its w/o Header and w/o Rendering rows; the heights of Table 5 after.
MEMSHOT_TABLE3: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Full Session", ("full-session", "text-rag", "full-session-no-render")),
    ("MemShot (fixed length 768)", ("memshot", "no-header", "no-render")),
    ("Other heights (Table 5)", ("h512", "h512-no-render", "h1024", "h1024-no-render")),
    ("Memories", ("session-summary-shots", "memocr", "flat-bm25", "bm25", "dense", "mem0")),
)

_ORDERS = {"dmv": DMV_FAMILIES, "memshot": MEMSHOT_FAMILIES, "memshot-table3": MEMSHOT_TABLE3}

OTHER = "Other"


def _lookup(families: Sequence[tuple[str, Sequence[str]]]) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for fam, members in families:
        for m in members:
            out.setdefault(m, (len(out), fam))
    return out


def _base(name: str) -> str:
    """A row's variant name without a report suffix (``memocr (stand-in extractive)``, ``x [emb]``)."""
    return name.split(" (", 1)[0].split(" [", 1)[0].strip().lower()


def family_of(name: str, study: str = "dmv") -> str:
    """The paper family of an architecture (``study="dmv"``) or MemShot variant (``"memshot"``;
    ``"memshot-table3"``: Table 3's blocks)."""
    return _lookup(_ORDERS[study]).get(_base(name), (0, OTHER))[1]


def paper_rank(name: str, study: str = "dmv") -> int:
    """Place of ``name`` in the paper's order (names it does not list come after every listed one)."""
    table = _lookup(_ORDERS[study])
    return table.get(_base(name), (len(table), OTHER))[0]


def order_rows(df: pl.DataFrame, column: str, study: str = "dmv", *, before: Sequence[str] = (),
               after: Sequence[str] = (), family: str | None = "family") -> pl.DataFrame:
    """``df`` sorted by ``before`` columns, then the paper's order of ``column``, then ``after``;
    with a ``family`` column (named ``family``; None: none added) right after ``column``.
    Rows whose ``column`` is not a name (e.g. Table 2's ``n_r`` row) stay last, in their order."""
    if df.height == 0 or column not in df.columns:
        return df
    names = df[column].cast(pl.String).fill_null("").to_list()
    ranks = pl.Series("_rank", [paper_rank(n, study) if n != "n_r" else 1 << 30 for n in names], dtype=pl.Int64)
    out = df.with_columns(ranks, pl.int_range(pl.len()).alias("_pos"))
    keys = [c for c in before if c in df.columns] + ["_rank", *[c for c in after if c in df.columns], "_pos"]
    out = out.sort(keys, nulls_last=True).drop("_rank", "_pos")
    if family is None:
        return out
    fam = out[column].cast(pl.String).map_elements(
        lambda n: family_of(n, study) if n != "n_r" else "", return_dtype=pl.String).alias(family)
    cols = list(out.columns)
    out = out.with_columns(fam)
    return out.select(*cols[:cols.index(column) + 1], family, *cols[cols.index(column) + 1:])


__all__ = ["DMV_FAMILIES", "MEMSHOT_FAMILIES", "MEMSHOT_TABLE3", "OTHER", "family_of", "order_rows", "paper_rank"]
