"""Rendering a report (sections of tables and figures) as self-contained HTML and Markdown.

The HTML embeds figures as PNG data URIs (so ``index.html`` alone is the whole report) and
links the SVG files written alongside. Tables carry ``id`` attributes (``tbl-<id>``) and
figures ``fig-<id>`` so tests and readers can find them.
"""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import polars as pl


@dataclass
class Table:
    """A table to show. ``percent``: columns holding proportions (shown x100, 1 decimal);
    ``highlight``: columns where the best value is bold and the runner-up underlined
    (rows whose first column is in ``skip_rows`` are ignored)."""

    id: str
    title: str
    df: pl.DataFrame
    caption: str = ""
    percent: Sequence[str] = ()
    highlight: Sequence[str] = ()
    skip_rows: Sequence[str] = ("n_r",)


@dataclass
class Figure:
    id: str
    title: str
    png: bytes
    svg: bytes
    caption: str = ""


@dataclass
class Section:
    id: str
    title: str
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    empty: str = ""  # set when the section has no data: says what is missing

    @property
    def has_data(self) -> bool:
        return bool(self.tables or self.figures)


@dataclass
class Report:
    title: str
    run_id: str
    sections: list[Section]
    manifest: dict[str, Any] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    generated: str = ""

    def figures(self) -> list[Figure]:
        return [f for s in self.sections for f in s.figures]

    def tables(self) -> list[Table]:
        return [t for s in self.sections for t in s.tables]


_COLOUR_ORDERS = {
    "official": "the released assignment (cue colour = card position, card 0 red)",
    "seeded": "colours permuted per collection from the catalogue seed (not the official assignment)",
}


def catalogue_settings(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """The DMV-Bench catalogue protocol a run used, from its manifest config: ``colour_order``,
    ``catalog_seed`` (the run seed builds the catalogue) and a sentence saying what they mean.
    None when the manifest records no config (results are only comparable within one setting)."""
    cfg = (manifest or {}).get("config")
    if not isinstance(cfg, dict):
        return None
    cat = cfg.get("catalog") if isinstance(cfg.get("catalog"), dict) else {}
    order, seed = cat.get("colour_order"), cfg.get("seed")
    meaning = _COLOUR_ORDERS.get(str(order), "not recorded")
    return {"colour_order": order, "catalog_seed": seed,
            "line": f"Cue colour order: {order or 'not recorded'}, {meaning}; catalogue seed {seed}."}


def _fmt(v: Any, percent: bool) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        if percent:
            return f"{v * 100:.1f}"
        if v == int(v) and abs(v) < 1e12:
            return f"{int(v)}"
        return f"{v:.4g}"
    return str(v)


def _ranks(t: Table) -> dict[tuple[int, str], str]:
    """(row, column) -> 'best' | 'second' for highlighted columns."""
    out: dict[tuple[int, str], str] = {}
    first = t.df.columns[0] if t.df.width else None
    for col in t.highlight:
        if col not in t.df.columns:
            continue
        vals = []
        for i, (key, v) in enumerate(zip(t.df[first].to_list(), t.df[col].to_list())):
            if key in t.skip_rows or v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            vals.append((v, i))
        distinct = sorted({v for v, _ in vals}, reverse=True)
        for v, i in vals:
            if distinct and v == distinct[0]:
                out[(i, col)] = "best"
            elif len(distinct) > 1 and v == distinct[1]:
                out[(i, col)] = "second"
    return out


def table_html(t: Table) -> str:
    ranks = _ranks(t)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t.df.columns)
    body = []
    for i, row in enumerate(t.df.iter_rows()):
        cells = []
        for c, v in zip(t.df.columns, row):
            text = html.escape(_fmt(v, c in t.percent and row[0] not in t.skip_rows))
            cls = ranks.get((i, c))
            cells.append(f'<td class="{cls}">{text}</td>' if cls else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f'<p class="caption">{html.escape(t.caption)}</p>' if t.caption else ""
    return (f'<div class="table-wrap"><h3>{html.escape(t.title)}</h3>{cap}'
            f'<table id="tbl-{t.id}" data-rows="{t.df.height}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def table_markdown(t: Table) -> str:
    ranks = _ranks(t)
    lines = [f"**{t.title}**", ""]
    if t.caption:
        lines += [t.caption, ""]
    lines.append("| " + " | ".join(str(c) for c in t.df.columns) + " |")
    lines.append("|" + "---|" * t.df.width)
    for i, row in enumerate(t.df.iter_rows()):
        cells = []
        for c, v in zip(t.df.columns, row):
            s = _fmt(v, c in t.percent and row[0] not in t.skip_rows).replace("|", "\\|")
            r = ranks.get((i, c))
            cells.append(f"**{s}**" if r == "best" else (f"_{s}_" if r == "second" else s))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_CSS = """
body{font-family:DejaVu Sans,Arial,sans-serif;margin:2em auto;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{font-size:1em;margin-bottom:.3em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0 1em}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
td.best{font-weight:bold}td.second{text-decoration:underline}
.caption,.note{color:#555;font-size:.85em}.empty{background:#fff6e0;border:1px solid #f0d080;padding:.6em}
.error{background:#fde8e8;border:1px solid #e0a0a0;padding:.6em}figure{display:inline-block;margin:.5em 1em .5em 0}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
.table-wrap{overflow-x:auto}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.8em}
"""


def to_html(rep: Report, *, svg_dir: str = "figures") -> str:
    """The whole report as one HTML document (figures embedded as PNG data URIs)."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(rep.title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{html.escape(rep.title)}</h1>",
           f'<p class="note">Run <code>{html.escape(rep.run_id)}</code>. {html.escape(rep.generated)}</p>']
    out.append("<nav><ul>" + "".join(f'<li><a href="#sec-{s.id}">{html.escape(s.title)}</a>'
                                      f'{"" if s.has_data else " (no data)"}</li>' for s in rep.sections)
               + '<li><a href="#sec-manifest">Run manifest</a></li></ul></nav>')
    for kind, err in rep.errors.items():
        out.append(f'<p class="error" id="err-{html.escape(kind)}">Result table <code>{html.escape(kind)}</code> '
                   f"could not be used: {html.escape(err)}</p>")
    for s in rep.sections:
        out.append(f'<section id="sec-{s.id}"><h2>{html.escape(s.title)}</h2>')
        if not s.has_data:
            out.append(f'<p class="empty" id="empty-{s.id}">No data: {html.escape(s.empty or "nothing to show")}</p>')
        for n in s.notes:
            out.append(f'<p class="note">{html.escape(n)}</p>')
        for t in s.tables:
            out.append(table_html(t))
        for f in s.figures:
            uri = "data:image/png;base64," + base64.b64encode(f.png).decode()
            out.append(f'<figure id="fig-{f.id}"><img src="{uri}" alt="{html.escape(f.title)}">'
                       f'<figcaption>{html.escape(f.title)}{": " + html.escape(f.caption) if f.caption else ""} '
                       f'(<a href="{svg_dir}/{f.id}.svg">SVG</a>)</figcaption></figure>')
        out.append("</section>")
    out.append('<section id="sec-manifest"><h2>Run manifest</h2>')
    if rep.manifest:
        m = rep.manifest
        rows = [("run id", m.get("run_id")), ("git revision", m.get("git_revision")),
                ("started", m.get("started_at")), ("python", m.get("python")), ("platform", m.get("platform"))]
        cs = catalogue_settings(m)
        if cs:
            rows += [("cue colour order", cs["colour_order"]), ("catalogue seed", cs["catalog_seed"])]
        rows += [(f"stage {k}", v.get("status") if isinstance(v, dict) else v) for k, v in (m.get("stages") or {}).items()]
        out.append('<table id="tbl-manifest"><tbody>' + "".join(
            f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows) + "</tbody></table>")
        out.append("<details><summary>Full manifest (config, seeds, package versions)</summary><pre>"
                   + html.escape(json.dumps(m, indent=2, sort_keys=True, default=str)) + "</pre></details>")
    else:
        out.append('<p class="empty">No manifest found for this run.</p>')
    out.append("</section></body></html>")
    return "\n".join(out)


def to_markdown(rep: Report, *, fig_dir: str = "figures") -> str:
    """A Markdown summary: every table, figure links, and what has no data."""
    out = [f"# {rep.title}", "", f"Run `{rep.run_id}`. {rep.generated}", ""]
    for kind, err in rep.errors.items():
        out += [f"> **{kind}** could not be used: {err}", ""]
    for s in rep.sections:
        out += [f"## {s.title}", ""]
        if not s.has_data:
            out += [f"_No data: {s.empty or 'nothing to show'}_", ""]
        out += [f"_{n}_\n" for n in s.notes]
        for t in s.tables:
            out += [table_markdown(t), ""]
        for f in s.figures:
            out += [f"![{f.title}]({fig_dir}/{f.id}.png) ([SVG]({fig_dir}/{f.id}.svg))", ""]
    if rep.manifest:
        cs = catalogue_settings(rep.manifest)
        out += ["## Run manifest", "", f"- git revision: `{rep.manifest.get('git_revision')}`",
                f"- started: {rep.manifest.get('started_at')}"]
        if cs:
            out += [f"- cue colour order: `{cs['colour_order']}`, catalogue seed {cs['catalog_seed']}"]
        out += [""]
    return "\n".join(out)
