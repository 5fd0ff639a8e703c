"""Figures (matplotlib, Agg backend): each function takes a scored table and returns a Figure.

:func:`render` turns a Figure into PNG (at :data:`DPI`, twice the screen's 100) and SVG bytes.
Figures are deterministic for the same input (fixed fonts, no timestamps in the SVG metadata).
Layout rules every figure keeps: constrained layout (titles and labels inside the canvas), legends
outside the axes (:func:`_legend_outside`, never over the data), integer ticks on integer axes
(recall reach, k, sessions).
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: never open a display (safe before pyplot is imported)

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from vismem.analysis.render import PNG_SCALE  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "vismem", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})

#: PNG resolution: 2x a 100-dpi screen, so figures stay sharp on high-density displays (the
#: report shows each PNG at its size in inches x 100 px, :data:`vismem.analysis.render.PNG_SCALE`).
DPI = 100 * PNG_SCALE

#: Stable colours per architecture (paper order), others cycle.
ARCH_COLORS = {"dualmem": "#d62728", "m2a-lite": "#1f77b4", "mma-lite": "#2ca02c", "worldmm-lite": "#9467bd",
               "caption": "#ff7f0e", "textonly": "#8c564b", "nomemory": "#7f7f7f"}


def _color(name: str, i: int) -> str:
    return ARCH_COLORS.get(name, f"C{i % 10}")


def render(fig: Any) -> tuple[bytes, bytes]:
    """``(png, svg)`` bytes of a figure; closes it."""
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=DPI)
    fig.savefig(svg, format="svg", metadata={"Date": None})
    plt.close(fig)
    return png.getvalue(), svg.getvalue()


def _legend_outside(fig: Any, axes: Any, fontsize: float = 7) -> None:
    """One legend for the figure, right of the axes (off the data): the union of every panel's
    labelled artists, in first-seen order. Nothing labelled: no legend."""
    seen: dict[str, Any] = {}
    for ax in getattr(axes, "flat", [axes]):
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    if seen:
        # Right of the axes, vertically centred: clear of the data and of the figure's title.
        # Labels wrapped: a long back-end name would otherwise squeeze the axes to nothing.
        fig.legend(list(seen.values()), [_wrap(label, 32) for label in seen], loc="outside right center",
                   fontsize=fontsize, frameon=False)


def _integer_x(ax: Any, nbins: int = 6) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(nbins=nbins, integer=True))


def _grid(n: int, nrows: int = 1) -> tuple[Any, Any]:
    ncols = max(1, -(-n // nrows))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 2.8 * nrows), squeeze=False, sharey=True,
                             layout="constrained")
    return fig, axes


def _lines(ax: Any, df: pl.DataFrame, x: str, y: str = "tsr", low: str | None = None, high: str | None = None) -> None:
    from vismem.analysis.paper_order import paper_rank

    # Paper order (Table 7), so the legend reads as the tables do.
    for i, arch in enumerate(sorted(df["architecture"].unique().to_list(), key=lambda a: (paper_rank(a), a))):
        d = df.filter(pl.col("architecture") == arch).sort(x)
        xs, ys = d[x].to_numpy(), d[y].to_numpy() * 100
        ax.plot(xs, ys, marker="o", ms=3, lw=1.4, label=arch, color=_color(arch, i))
        if low and high:
            ax.fill_between(xs, d[low].to_numpy() * 100, d[high].to_numpy() * 100, alpha=0.12,
                            color=_color(arch, i), lw=0)


def retention(ret: pl.DataFrame) -> Any:
    """TSR vs recall reach, one panel per (backend, J), cluster CIs shaded."""
    blocks = ret.select("backend", "J").unique().sort("backend", "J").rows()
    fig, axes = _grid(len(blocks), nrows=max(1, ret["backend"].n_unique()))
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, (backend, j) in zip(axes.flat, blocks):
        ax.set_visible(True)
        _lines(ax, ret.filter((pl.col("backend") == backend) & (pl.col("J") == j)), "reach",
               low="cluster_low", high="cluster_high")
        ax.set_title(_wrap(f"{backend}, J={j}"), fontsize=8)
        ax.set_xlabel("recall reach r (sessions)")
        ax.set_ylabel("TSR (%)")
        _integer_x(ax)
    _legend_outside(fig, axes)
    fig.suptitle("Retention by recall reach")
    return fig


def _wrap(text: str, width: int = 38) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def tsr_bars(cells: pl.DataFrame) -> Any:
    """Table 2 as bars: TSR per architecture in the paper's row order (families told apart by
    colour), one panel per (back-end, J), chain-cluster 95% CIs as error bars (a cell without an
    interval -- one chain -- has none)."""
    from vismem.analysis.paper_order import paper_rank

    blocks = cells.select("backend", "J").unique().sort("backend", "J").rows()
    archs = sorted(cells["architecture"].unique().to_list(), key=lambda a: (paper_rank(a), a))
    ncols = min(len(blocks), 3) or 1
    nrows = -(-len(blocks) // ncols) if blocks else 1
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(4.6, 0.55 * len(archs) + 1.6) * ncols, 3.3 * nrows),
                             squeeze=False, sharey=True, layout="constrained")
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, (backend, j) in zip(axes.flat, blocks):
        ax.set_visible(True)
        d = cells.filter((pl.col("backend") == backend) & (pl.col("J") == j))
        by = {r["architecture"]: r for r in d.iter_rows(named=True)}
        xs = [i for i, a in enumerate(archs) if a in by]
        ys = [(by[archs[i]]["tsr"] or 0.0) * 100 for i in xs]
        lo = [by[archs[i]]["cluster_low"] for i in xs]
        hi = [by[archs[i]]["cluster_high"] for i in xs]
        err = [[max(0.0, y - l * 100) if l is not None and l == l else 0.0 for y, l in zip(ys, lo)],
               [max(0.0, h * 100 - y) if h is not None and h == h else 0.0 for y, h in zip(ys, hi)]]
        ax.bar(xs, ys, color=[_color(archs[i], i) for i in xs], yerr=err, capsize=3, ecolor="#333", lw=0)
        for x, y, up in zip(xs, ys, err[1]):
            # above the whisker, so the label never sits on the interval
            ax.annotate(f"{y:.1f}", (x, y + up), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6)
        ax.set_xticks(range(len(archs)), archs, rotation=35, ha="right", fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_title(_wrap(f"{backend}, J={j}"), fontsize=8)
        ax.grid(axis="x", visible=False)
        ax.set_ylabel("TSR (%)")
    fig.suptitle("Task success rate by architecture (95% chain-cluster CI)")
    return fig


def bins(bank: pl.DataFrame, position: pl.DataFrame, backend: str) -> Any:
    """Figs 5-6: TSR by bank-size bin (top) and encoding-position bin (bottom, one per visit
    session), columns = J."""
    js = sorted(set(bank.filter(pl.col("backend") == backend)["J"].to_list())
                | set(position.filter(pl.col("backend") == backend)["J"].to_list()))
    fig, axes = _grid(2 * max(1, len(js)), nrows=2)
    for col, j in enumerate(js):
        for row, (df, label) in enumerate(((bank, "bank size at recall"),
                                           (position, "encoding position (visit session)"))):
            ax = axes[row][col]
            d = df.filter((pl.col("backend") == backend) & (pl.col("J") == j))
            d = d.with_columns(((pl.col("bin_low") + pl.col("bin_high")) / 2).alias("mid"))
            _lines(ax, d, "mid")
            ax.set_xlabel(label)
            ax.set_title(f"J={j}")
            _integer_x(ax)
            if col == 0:
                ax.set_ylabel("TSR (%)")
    _legend_outside(fig, axes)
    fig.suptitle(f"{_wrap(backend + ':')}\nTSR by memory-bank size and encoding position", fontsize=9)
    return fig


def alpha(sweep: pl.DataFrame) -> Any:
    """Fig. 7: TSR vs visual weight alpha, one line per (family, backend, J) with its endpoints
    (:func:`vismem.analysis.dmv.alpha_sweep`), cluster CI bars; lines are told apart by colour."""
    fig, ax = plt.subplots(figsize=(6.4, 3.0), layout="constrained")
    for i, ((arch, backend, j), d) in enumerate(sweep.sort("alpha").group_by(["architecture", "backend", "J"],
                                                                             maintain_order=True)):
        d = d.with_columns([pl.when(pl.col(c).is_null() | pl.col(c).is_nan()).then(pl.col("tsr")).otherwise(pl.col(c))
                            .alias(c) for c in ("cluster_low", "cluster_high")])
        y = d["tsr"].to_numpy() * 100
        err = [(y - d["cluster_low"].to_numpy() * 100).clip(0), (d["cluster_high"].to_numpy() * 100 - y).clip(0)]
        ax.errorbar(d["alpha"].to_numpy(), y, yerr=err, marker="o", ms=4, capsize=2, color=f"C{i % 10}",
                    label=f"{arch} ({backend}, J={j})")
    ax.set_xlabel("alpha (visual weight)")
    ax.set_ylabel("TSR (%)")
    ax.set_title("Hybrid retrieval weight sweep")
    _legend_outside(fig, ax, fontsize=6)
    return fig


def encoding(enc: pl.DataFrame) -> Any:
    """Fig. 4-style histogram of distinct products per session, per back-end."""
    fig, ax = plt.subplots(figsize=(6.0, 3.0), layout="constrained")
    for i, backend in enumerate(sorted(enc["backend"].unique().to_list())):
        v = enc.filter(pl.col("backend") == backend)["distinct_products"].to_numpy()
        ax.hist(v, bins=range(0, int(v.max(initial=0)) + 2), alpha=0.55, label=backend, color=f"C{i}")
    ax.set_xlabel("distinct products per session")
    ax.set_ylabel("sessions")
    _integer_x(ax)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Distinct products per session")
    _legend_outside(fig, ax)
    return fig


def recall_at_k(rec: pl.DataFrame) -> Any:
    """Evidence recall@k (or hit@k when recall is unknown) vs k, one line per (dataset, variant)."""
    fig, ax = plt.subplots(figsize=(5.6, 3.0), layout="constrained")
    metric = "recall" if rec["recall"].null_count() < rec.height else "hit"
    for i, ((ds, variant), d) in enumerate(rec.sort("k").group_by(["dataset", "variant"], maintain_order=True)):
        d = d.group_by("k").agg(pl.col(metric).mean()).sort("k")
        ax.plot(d["k"].to_numpy(), d[metric].to_numpy() * 100, marker="o", label=f"{variant} ({ds})", color=f"C{i}")
    ax.set_xlabel("k (units retrieved)")
    ax.set_ylabel(f"evidence {metric}@k (%)")
    ax.set_xticks(sorted(rec["k"].unique().to_list()))
    ax.set_title(f"Evidence {metric}@k")
    _legend_outside(fig, ax)
    return fig


def conditioned_accuracy(t: pl.DataFrame) -> Any:
    """Fig. 4a: per variant (and k), the share of questions retrieved correctly (hit@k) and the
    Acc given a hit / a miss, as grouped bars."""
    labels = [f"{r['variant']}@{r['k']}" for r in t.iter_rows(named=True)]
    fig, ax = plt.subplots(figsize=(max(5.4, 1.1 * len(labels) + 2.7), 3.0), layout="constrained")
    width = 0.26
    for j, (col, name) in enumerate((("hit_rate", "retrieved (hit@k)"), ("acc_given_hit", "Acc | hit"),
                                     ("acc_given_miss", "Acc | miss"))):
        ys = [(v if v is not None else float("nan")) * 100 for v in t[col].to_list()]
        ax.bar([i + (j - 1) * width for i in range(len(labels))], ys, width, label=name, color=f"C{j}")
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel("%")
    ax.set_title("Retrieval and generation (Fig. 4a)")
    _legend_outside(fig, ax)
    return fig


def recall_by_unit_size(t: pl.DataFrame) -> Any:
    """Fig. 4b: evidence recall@k against unit size, one line per (embedder, unit modality), one
    panel per k, conversation-clustered 95% CIs as error bars."""
    ks = sorted(t["k"].unique().to_list())
    fig, axes = _grid(len(ks))
    from vismem.analysis.memshot import UNIT_SIZES

    sizes = [s for s in UNIT_SIZES if s in set(t["unit_size"].to_list())]
    for ax, k in zip(axes.flat, ks):
        d = t.filter(pl.col("k") == k)
        for i, ((emb, mod), g) in enumerate(d.group_by(["embedder", "unit_modality"], maintain_order=True)):
            g = g.with_columns(pl.col("unit_size").replace_strict({s: n for n, s in enumerate(sizes)},
                                                                  return_dtype=pl.Int64).alias("x")).sort("x")
            y = g["recall"].to_numpy() * 100
            lo = (g["low"].fill_null(g["recall"]).to_numpy() * 100)
            hi = (g["high"].fill_null(g["recall"]).to_numpy() * 100)
            ax.errorbar(g["x"].to_numpy(), y, yerr=[(y - lo).clip(0), (hi - y).clip(0)], marker="o", ms=4,
                        capsize=2, ls="-" if mod == "image" else "--", color=f"C{i}", label=f"{emb} · {mod}")
        ax.set_xticks(range(len(sizes)), [s if s == "session" else f"{s} px" for s in sizes])
        ax.set_title(f"k={k}")
        ax.set_xlabel("unit size")
        ax.set_ylabel("evidence recall@k (%)")
    _legend_outside(fig, axes, fontsize=6)
    fig.suptitle("Recall against unit size (Fig. 4b)")
    return fig


def latency_accuracy(t: pl.DataFrame) -> Any:
    """Fig. 1: memory-construction latency (s, log scale) against Overall Acc (%), one panel per
    backbone (model size), one point per method; quoted rows hollow, measured ones filled.
    ``t``: backbone, method, latency_s, acc, source (``quoted (paper)`` or ``measured``)."""
    backbones = list(dict.fromkeys(t["backbone"].to_list()))
    fig, axes = _grid(len(backbones))
    methods = list(dict.fromkeys(t["method"].to_list()))
    for ax, b in zip(axes.flat, backbones):
        for r in t.filter(pl.col("backbone") == b).iter_rows(named=True):
            c = f"C{methods.index(r['method']) % 10}"
            quoted = r["source"] != "measured"
            ax.scatter([r["latency_s"]], [r["acc"] * 100], s=28, color=c, facecolors="none" if quoted else c)
            ax.annotate(r["method"], (r["latency_s"], r["acc"] * 100), fontsize=6, xytext=(3, 2),
                        textcoords="offset points")
        ax.set_xscale("log")
        ax.margins(x=0.25, y=0.1)  # room for the point labels inside the axes
        ax.set_title(b, fontsize=8)
        ax.set_xlabel("construction latency (s, log)")
        ax.set_ylabel("Overall Acc (%)")
    fig.suptitle("Construction latency against Overall Acc (LoCoMo; hollow: quoted, filled: measured)")
    return fig
