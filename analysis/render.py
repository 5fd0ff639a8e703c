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
    (rows whose first column is in ``skip_rows`` are ignored); ``ci``: ``{column: (lo column,
    hi column)}`` -- the interval is shown in the value's cell and its columns are not shown on
    their own (the CSV keeps them); ``links``: one href per row (None: no link), put on the
    row's first cell (the viewers, filtered to that row); ``group``: a column naming each row's
    family -- not shown as a column, but as a heading row wherever its value changes (the CSV keeps
    it); rows should come sorted by it (the paper's order)."""

    id: str
    title: str
    df: pl.DataFrame
    caption: str = ""
    percent: Sequence[str] = ()
    highlight: Sequence[str] = ()
    skip_rows: Sequence[str] = ("n_r",)
    ci: dict[str, tuple[str, str]] = field(default_factory=dict)
    links: Sequence[str | None] | None = None
    group: str | None = None

    @property
    def shown(self) -> list[str]:
        """The columns shown as columns (interval bounds live inside their value's cell)."""
        hidden = {c for pair in self.ci.values() for c in pair} | ({self.group} if self.group else set())
        return [c for c in self.df.columns if c not in hidden]

    @property
    def percent_columns(self) -> list[str]:
        """Columns shown x100: ``percent`` and the interval bounds of a percent value."""
        pct = set(self.percent) | {b for c, pair in self.ci.items() if c in self.percent for b in pair}
        return [c for c in self.df.columns if c in pct]

    def groups(self) -> list[str | None]:
        """Per row: the family heading that starts before it (None: the row continues its group)."""
        if not self.group or self.group not in self.df.columns:
            return [None] * self.df.height
        out: list[str | None] = []
        prev: Any = object()
        for v in self.df[self.group].to_list():
            out.append(None if v == prev or v is None or v == "" else str(v))
            prev = v
        return out


#: Figures are drawn at this multiple of a 100-dpi screen and shown at 1/PNG_SCALE of their
#: pixel width: sharp on high-density displays, the intended size everywhere.
PNG_SCALE = 2


def png_display_width(png: bytes) -> int | None:
    """The CSS width (px) to show a figure PNG at: its pixel width / :data:`PNG_SCALE` (None when
    the bytes are not a PNG)."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return max(1, round(int.from_bytes(png[16:20], "big") / PNG_SCALE))


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
    viewers: dict[str, str] = field(default_factory=dict)  # title -> relative href
    headline: Section | None = None  # the box at the top: each paper's central contrast, measured

    def _all(self) -> list[Section]:
        return ([self.headline] if self.headline is not None else []) + list(self.sections)

    def figures(self) -> list[Figure]:
        return [f for s in self._all() for f in s.figures]

    def tables(self) -> list[Table]:
        return [t for s in self._all() for t in s.tables]


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
    # An order the manifest does not record is said once ("not recorded"), not as order and meaning.
    said = f"{order}, {_COLOUR_ORDERS.get(str(order), 'meaning not recorded')}" if order else "not recorded"
    return {"colour_order": order, "catalog_seed": seed,
            "line": f"Cue colour order: {said}; catalogue seed {seed if seed is not None else 'not recorded'}."}


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


def _cell_text(t: Table, row: dict[str, Any], c: str) -> tuple[str, str]:
    """``(value, interval)`` as shown: percent columns x100; the interval ``[lo, hi]`` or ''."""
    pct = c in t.percent and row[t.df.columns[0]] not in t.skip_rows
    text = _fmt(row[c], pct)
    pair = t.ci.get(c)
    if not pair or row.get(pair[0]) is None or row.get(pair[1]) is None:
        return text, ""
    lo, hi = _fmt(row[pair[0]], pct), _fmt(row[pair[1]], pct)
    return text, ("" if "—" in (lo, hi) else f"[{lo}, {hi}]")


def table_csv(t: Table) -> bytes:
    """One table as CSV in the page's units: every column of ``df`` (interval bounds and the
    family column included), percent columns x100 (rows in ``skip_rows`` keep their counts)."""
    import io

    df = t.df
    first = df.columns[0] if df.width else None
    keep = pl.col(first).cast(pl.String).is_in(list(t.skip_rows)) if first else pl.lit(False)
    scale = [pl.when(keep).then(pl.col(c).cast(pl.Float64)).otherwise((pl.col(c).cast(pl.Float64) * 100).round(4))
             .alias(c) for c in t.percent_columns if df.schema[c].is_numeric()]
    buf = io.BytesIO()
    (df.with_columns(scale) if scale else df).write_csv(buf)
    return buf.getvalue()


def _csv_href(t: Table, csv_dir: str | None) -> str | None:
    return f"{csv_dir}/{t.id}.csv" if csv_dir else None


def table_html(t: Table, *, csv_dir: str | None = "tables") -> str:
    """One table as HTML: CIs inside their value's cell, a row's link on its first cell, a family
    heading row where ``group`` changes, and a link to the table's CSV (``csv_dir``/<id>.csv)."""
    ranks = _ranks(t)
    cols = t.shown
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = []
    for i, (row, grp) in enumerate(zip(t.df.iter_rows(named=True), t.groups())):
        if grp is not None:
            body.append(f'<tr class="group"><th colspan="{len(cols)}" scope="colgroup">{html.escape(grp)}</th></tr>')
        cells = []
        for j, c in enumerate(cols):
            value, ci = _cell_text(t, row, c)
            inner = html.escape(value)
            if ci:
                inner = f'<span class="v">{inner}</span> <span class="ci">{html.escape(ci)}</span>'
            href = t.links[i] if t.links is not None and i < len(t.links) else None
            if j == 0 and href:
                inner = f'<a class="row-link" href="{html.escape(href)}" title="open in the viewer">{inner}</a>'
            cls = ranks.get((i, c))
            cells.append(f'<td class="{cls}">{inner}</td>' if cls else f"<td>{inner}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f'<p class="caption">{html.escape(t.caption)}</p>' if t.caption else ""
    href = _csv_href(t, csv_dir)
    csv = (f' <a class="csv" id="csv-{html.escape(t.id)}" href="{html.escape(href)}" '
           f'title="this table as CSV, in the units shown">CSV</a>' if href else "")
    return (f'<div class="table-wrap"><h3>{html.escape(t.title)}{csv}</h3>{cap}'
            f'<table id="tbl-{t.id}" data-rows="{t.df.height}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def table_markdown(t: Table, *, csv_dir: str | None = "tables") -> str:
    """One table as Markdown (intervals as ``v [lo, hi]``; best bold, runner-up italic; a family
    heading row where ``group`` changes; a link to its CSV)."""
    ranks = _ranks(t)
    cols = t.shown
    href = _csv_href(t, csv_dir)
    lines = [f"**{t.title}**" + (f" ([CSV]({href}))" if href else ""), ""]
    if t.caption:
        lines += [t.caption, ""]
    lines.append("| " + " | ".join(str(c) for c in cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for i, (row, grp) in enumerate(zip(t.df.iter_rows(named=True), t.groups())):
        if grp is not None:
            lines.append("| " + " | ".join([f"_{grp.replace('|', chr(92) + '|')}_"] + [""] * (len(cols) - 1)) + " |")
        cells = []
        for c in cols:
            value, ci = _cell_text(t, row, c)
            s = value.replace("|", "\\|")
            r = ranks.get((i, c))
            s = f"**{s}**" if r == "best" else (f"_{s}_" if r == "second" else s)
            cells.append(f"{s} {ci}" if ci else s)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_CSS = """
body{font-family:DejaVu Sans,Arial,sans-serif;margin:2em auto;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{font-size:1em;margin-bottom:.3em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0 1em}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
td.best{font-weight:bold}td.second{text-decoration:underline}.ci{color:#777;font-size:.85em;white-space:nowrap}
a.row-link{color:#1a4f9c;text-decoration:none}a.row-link:hover{text-decoration:underline}
.caption,.note{color:#555;font-size:.85em}.empty{background:#fff6e0;border:1px solid #f0d080;padding:.6em}
.error{background:#fde8e8;border:1px solid #e0a0a0;padding:.6em}figure{display:inline-block;vertical-align:top;margin:.5em 1em .5em 0}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
.viewers{background:#eef4ff;border:1px solid #b8ccee;padding:.6em}.viewers a{font-weight:bold;margin-right:1.5em}
.table-wrap{overflow-x:auto}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.8em}
tr.group th{background:#fafafa;text-align:left;font-style:italic;font-weight:normal;color:#444}
a.csv{font-size:.75em;font-weight:normal;margin-left:.6em;color:#1a4f9c}
.headline{background:#f4f8ff;border:2px solid #1a4f9c;border-radius:6px;padding:.4em 1em;margin:1em 0}
.headline h2{margin-top:.3em;border:none}
"""


def _section_html(s: Section, svg_dir: str, cls: str = "") -> list[str]:
    attr = f' class="{cls}"' if cls else ""
    out = [f'<section id="sec-{s.id}"{attr}><h2>{html.escape(s.title)}</h2>']
    for n in s.notes:
        out.append(f'<p class="note">{html.escape(n)}</p>')
    for t in s.tables:
        out.append(table_html(t))
    for f in s.figures:
        uri = "data:image/png;base64," + base64.b64encode(f.png).decode()
        w = png_display_width(f.png)
        size = f' width="{w}"' if w else ""
        out.append(f'<figure id="fig-{f.id}"><img src="{uri}"{size} alt="{html.escape(f.title)}">'
                   f'<figcaption>{html.escape(f.title)}{": " + html.escape(f.caption) if f.caption else ""} '
                   f'(<a href="{svg_dir}/{f.id}.svg">SVG</a>)</figcaption></figure>')
    out.append("</section>")
    return out


def _manifest_html(m: dict[str, Any] | None) -> list[str]:
    out = ['<section id="sec-manifest"><h2>Run manifest</h2>']
    if not m:
        return out + ['<p class="empty">No manifest found for this run.</p></section>']
    rows = [("run id", m.get("run_id")), ("git revision", m.get("git_revision")),
            ("started", m.get("started_at")), ("python", m.get("python")), ("platform", m.get("platform"))]
    cs = catalogue_settings(m)
    if cs:
        rows += [("cue colour order", cs["colour_order"]), ("catalogue seed", cs["catalog_seed"])]
    rows += [(f"stage {k}", v.get("status") if isinstance(v, dict) else v) for k, v in (m.get("stages") or {}).items()]
    out.append('<table id="tbl-manifest"><tbody>' + "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows) + "</tbody></table>")
    out.append("<details><summary>Full manifest (config, seeds, package versions)</summary><pre>"
               + html.escape(json.dumps(m, indent=2, sort_keys=True, default=str)) + "</pre></details></section>")
    return out


def to_html(rep: Report, *, svg_dir: str = "figures") -> str:
    """The whole report as one HTML document (figures embedded as PNG data URIs).

    Sections with data come first, in their order; sections without data are one line at the
    end (``#sec-empty``, each named in a ``span#empty-<id>``).
    """
    full = [s for s in rep.sections if s.has_data]
    empty = [s for s in rep.sections if not s.has_data]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(rep.title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{html.escape(rep.title)}</h1>",
           f'<p class="note">Run <code>{html.escape(rep.run_id)}</code>. {html.escape(rep.generated)}</p>']
    if rep.viewers:
        out.append('<p class="viewers" id="viewers">Browse the run: ' + "".join(
            f'<a href="{html.escape(href)}">{html.escape(title)}</a>' for title, href in rep.viewers.items()) + "</p>")
    if rep.headline is not None and rep.headline.has_data:
        out += _section_html(rep.headline, svg_dir, cls="headline")
    out.append("<nav><ul>" + "".join(f'<li><a href="#sec-{s.id}">{html.escape(s.title)}</a></li>' for s in full)
               + ('<li><a href="#sec-empty">Sections without data</a></li>' if empty else "")
               + '<li><a href="#sec-manifest">Run manifest</a></li></ul></nav>')
    for kind, err in rep.errors.items():
        out.append(f'<p class="error" id="err-{html.escape(kind)}">Result table <code>{html.escape(kind)}</code> '
                   f"could not be used: {html.escape(err)}</p>")
    for s in full:
        out += _section_html(s, svg_dir)
    if empty:
        items = "; ".join(f'<span id="empty-{s.id}"><b>{html.escape(s.title)}</b> '
                          f'({html.escape(s.empty or "nothing to show")})</span>' for s in empty)
        out.append(f'<section id="sec-empty"><p class="empty">No data: {items}.</p></section>')
    out += _manifest_html(rep.manifest)
    out.append("</body></html>")
    return "\n".join(out)


def to_markdown(rep: Report, *, fig_dir: str = "figures") -> str:
    """A Markdown summary: sections with data (every table, figure links), then what has none."""
    out = [f"# {rep.title}", "", f"Run `{rep.run_id}`. {rep.generated}", ""]
    if rep.viewers:
        out += ["Browse the run: " + " · ".join(f"[{t}]({h})" for t, h in rep.viewers.items()), ""]
    for kind, err in rep.errors.items():
        out += [f"> **{kind}** could not be used: {err}", ""]
    head = [rep.headline] if rep.headline is not None and rep.headline.has_data else []
    for s in [*head, *(s for s in rep.sections if s.has_data)]:
        out += [f"## {s.title}", ""]
        out += [f"_{n}_\n" for n in s.notes]
        for t in s.tables:
            out += [table_markdown(t), ""]
        for f in s.figures:
            out += [f"![{f.title}]({fig_dir}/{f.id}.png) ([SVG]({fig_dir}/{f.id}.svg))", ""]
    empty = [s for s in rep.sections if not s.has_data]
    if empty:
        out += ["_No data: " + "; ".join(f"{s.title} ({s.empty or 'nothing to show'})" for s in empty) + "._", ""]
    if rep.manifest:
        cs = catalogue_settings(rep.manifest)
        out += ["## Run manifest", "", f"- git revision: `{rep.manifest.get('git_revision')}`",
                f"- started: {rep.manifest.get('started_at')}"]
        if cs:
            out += [f"- cue colour order: `{cs['colour_order']}`, catalogue seed {cs['catalog_seed']}"]
        out += [""]
    return "\n".join(out)
