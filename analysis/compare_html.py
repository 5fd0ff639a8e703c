"""The run-to-run comparison as one short self-contained HTML page (no scripts, no external files).

Every string from the data (run ids, variants, questions, cues) goes through :func:`html.escape`.
"""

from __future__ import annotations

import html
import math
from typing import Any

import polars as pl

__all__ = ["cell_label", "compare_html", "fmt_delta", "split_cells"]

_TITLES = {"probes": "DMV-Bench probes (TSR)", "memshot_answers": "MemShot answers (Acc, F1)",
           "memshot_recall": "MemShot evidence recall (hit@k, recall@k)"}
_NUMERIC = ("metric", "n", "a", "b", "delta", "low", "high", "lost", "gained")
_CSS = ("body{font:14px system-ui,sans-serif;margin:2em;max-width:75em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}"
        ".up{color:#070}.down{color:#b00}caption{text-align:left;font-weight:600}")


def cell_label(row: dict[str, Any], value_columns: tuple[str, ...] = _NUMERIC, skip: tuple[str, ...] = ()) -> str:
    """The cell of a delta row as ``name=value`` pairs (null columns and ``skip`` left out)."""
    return " ".join(f"{k}={v}" for k, v in row.items() if k not in value_columns and k not in skip and v is not None)


def split_cells(df: pl.DataFrame) -> tuple[dict[str, Any], list[str]]:
    """``(constant, varying)``: the cell columns equal on every row (with their value) and the others."""
    cells = [c for c in df.columns if c not in _NUMERIC]
    const = {c: df[c][0] for c in cells if df.height and df[c].n_unique() == 1}
    return {k: v for k, v in const.items() if v is not None}, [c for c in cells if c not in const]


def _pct(x: Any) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def fmt_delta(row: dict[str, Any]) -> str:
    """``+3.2 [-1.0, 7.5]`` in percentage points; the interval left out when undefined."""
    d = row.get("delta")
    if d is None or math.isnan(d):
        return ""
    lo = row.get("low")
    ci = "" if lo is None or math.isnan(lo) else f" [{100 * lo:+.1f}, {100 * row['high']:+.1f}]"
    return f"{100 * d:+.1f}{ci}"


def _table(df: pl.DataFrame, caption: str, head: list[str], cells) -> str:
    e = html.escape
    rows = "".join("<tr>" + "".join(cells(r)) + "</tr>" for r in df.iter_rows(named=True))
    return (f"<table><caption>{e(caption)}</caption><tr>{''.join(f'<th>{e(h)}</th>' for h in head)}</tr>"
            f"{rows}</table>")


def _delta_cells(r: dict[str, Any]) -> list[str]:
    e = html.escape
    cls = ""
    if r["low"] is not None and not math.isnan(r["low"]):
        cls = " up" if r["low"] > 0 else " down" if r["high"] < 0 else ""
    return [f"<td>{e(cell_label(r))}</td>", f"<td>{e(r['metric'])}</td>", f'<td class="n">{r["n"]}</td>',
            f'<td class="n">{_pct(r["a"])}</td>', f'<td class="n">{_pct(r["b"])}</td>',
            f'<td class="n{cls}">{e(fmt_delta(r))}</td>',
            f'<td class="n">{"" if r["lost"] is None else r["lost"]}</td>',
            f'<td class="n">{"" if r["gained"] is None else r["gained"]}</td>']


def compare_html(result: dict[str, pl.DataFrame], run_a: str, run_b: str, *, seed: int, n_resamples: int,
                 max_flips: int = 500) -> str:
    """The page: one delta table per result kind, then the flipped items (at most ``max_flips`` each)."""
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>vismem compare {e(run_a)} vs {e(run_b)}"
             f"</title><style>{_CSS}</style></head><body>",
             f"<h1>{e(run_a)} (A) vs {e(run_b)} (B)</h1>",
             f"<p>Deltas are B − A in percentage points over the items both runs scored, with paired 95% bootstrap "
             f"intervals ({n_resamples:,} resamples, seed {seed}; DMV-Bench probes resampled by chain). "
             "<i>lost</i>: hit in A, miss in B; <i>gained</i>: miss in A, hit in B.</p>"]
    head = ["cell", "metric", "n shared", "A", "B", "Δ (B−A) [95% CI]", "lost", "gained"]
    for kind, title in _TITLES.items():
        if kind in result:
            parts.append(f"<h2>{e(title)}</h2>")
            parts.append(_table(result[kind], "Deltas", head, _delta_cells))
    for kind, title in _TITLES.items():
        f = result.get(kind + "_flips")
        if f is None or f.height == 0:
            continue
        parts.append(f"<h2>Flipped items: {e(title)}</h2>")
        shown = f.head(max_flips)
        cols = shown.columns
        more = f" (first {max_flips} of {f.height})" if f.height > max_flips else f" ({f.height})"
        parts.append(_table(shown, "Items whose hit/miss differs" + more, cols,
                            lambda r: [f"<td>{e('' if r[c] is None else str(r[c]))}</td>" for c in cols]))
    parts.append("</body></html>\n")
    return "".join(parts)
