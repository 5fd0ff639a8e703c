"""What both static viewers share: images as data URIs, data embedded as JSON, the page shell.

A viewer is one HTML file that opens from ``file://`` with no server: its data sits in a
``<script type="application/json">`` block, its images in another (one data URI per distinct
image, referenced by key), and vanilla JS renders it. Nothing is fetched, so Chromium's
``file://`` rules (no ``fetch``, no cross-origin canvas) never get in the way.
"""

from __future__ import annotations

import base64
import gzip
import html
import io
import json
from typing import Any, Iterable, Mapping

#: Longest side of an inlined product/observation image (512 px PNGs become ~10 KB JPEGs).
PRODUCT_MAX_PX = 320


def _mime(data: bytes) -> str:
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


def data_uri(data: bytes, *, max_px: int | None = None, quality: int = 85) -> str:
    """``data:`` URI of an image; with ``max_px``, images larger than that are shrunk to it and
    stored as JPEG (photos: a tenth of the PNG's bytes, the cue still visible)."""
    if max_px is not None:
        try:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as im:
                if max(im.size) > max_px:
                    im = im.convert("RGB")
                    im.thumbnail((max_px, max_px))
                    buf = io.BytesIO()
                    im.save(buf, format="JPEG", quality=quality)
                    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
        except Exception:  # noqa: BLE001 - an undecodable image is inlined as it is
            pass
    return f"data:{_mime(data)};base64," + base64.b64encode(data).decode()


def image_table(images: Mapping[str, bytes], keys: Iterable[str], *, max_px: int | None) -> dict[str, str]:
    """``{key: data URI}`` for the distinct ``keys`` found in ``images`` (missing keys are skipped)."""
    out: dict[str, str] = {}
    for k in keys:
        if k and k not in out and k in images:
            out[k] = data_uri(images[k], max_px=max_px)
    return out


#: Characters that mean something to the HTML parser inside a script element (``</script``, and
#: ``<!--`` which turns ``<script`` into a nested-script state that swallows the page), written as
#: JSON escapes: the block holds no ``<``, ``>`` or ``&`` at all, and ``JSON.parse`` reads it unchanged.
_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def json_block(element_id: str, obj: Any) -> str:
    """A ``<script type="application/json">`` block no text inside ``obj`` can break out of."""
    text = json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False).translate(_HTML_SAFE)
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def gzip_block(element_id: str, obj: Any) -> str:
    """``obj`` as gzipped JSON in base64 (read back by ``inflateJSON`` in :data:`JS_COMMON`).

    Probe step logs repeat the same memory-block phrasing thousands of times: gzip makes them a
    tenth of the size, and browsers inflate them natively (``DecompressionStream``).
    """
    raw = json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False).encode()
    data = base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode()
    return f'<script type="application/octet-stream" id="{element_id}" data-encoding="gzip+base64">{data}</script>'


BASE_CSS = """
*{box-sizing:border-box}body{font-family:DejaVu Sans,Arial,sans-serif;margin:0;color:#222;font-size:14px}
header{background:#1f2a44;color:#fff;padding:.6em 1em}header h1{font-size:1.2em;margin:0}header .meta{font-size:.85em;opacity:.8}
.filters{display:flex;flex-wrap:wrap;gap:.8em;align-items:center;padding:.6em 1em;background:#f3f5f9;border-bottom:1px solid #ddd}
.filters label{font-size:.85em}.filters select,.filters input{margin-left:.3em}
.layout{display:flex;height:calc(100vh - 7em)}.list{width:34%;min-width:260px;overflow-y:auto;border-right:1px solid #ddd}
.detail{flex:1;overflow-y:auto;padding:1em}.item{padding:.4em .8em;border-bottom:1px solid #eee;cursor:pointer}
.item:hover{background:#eef4ff}.item.sel{background:#dbe7ff}.group{background:#fafafa;font-weight:bold;padding:.4em .8em;
border-bottom:1px solid #ddd;position:sticky;top:0}.badge{display:inline-block;border-radius:3px;padding:0 .4em;font-size:.8em;
margin-left:.3em}.ok{background:#d8f3dc;color:#1b5e20}.bad{background:#fde2e1;color:#9b1c1c}.warn{background:#fff3cd;color:#7a5b00}
.card{border:1px solid #ddd;border-radius:4px;padding:.6em;margin-bottom:.8em;display:flex;gap:1em}
.card img{max-width:240px;max-height:240px;border:1px solid #ccc;background:#fff}.card .txt{flex:1;min-width:0}
.url{font-family:monospace;color:#1a4f9c;word-break:break-all}pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;
margin:.3em 0;font-size:.85em;max-height:20em;overflow-y:auto}.muted{color:#777;font-size:.85em}
.thumbs{display:flex;flex-wrap:wrap;gap:.4em}.thumbs figure{margin:0;text-align:center;font-size:.75em}
.thumbs img{width:96px;height:96px;object-fit:cover;border:2px solid #ccc}.thumbs .hit img{border-color:#2e7d32}
.tabs button{margin-right:.3em}.tabs button.on{font-weight:bold}.empty{padding:1em;color:#777}
"""


def page(title: str, meta: str, body: str, script: str, *, css: str = "") -> str:
    """The viewer's HTML document: header, body (filters, panes, JSON blocks) and its script."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{BASE_CSS}{css}</style></head><body>"
            f"<header><h1>{html.escape(title)}</h1><div class=\"meta\">{html.escape(meta)}</div></header>"
            f"{body}<script>{script}</script></body></html>")


#: JS helpers every viewer script starts with: element builder, hash-param state, select filling.
JS_COMMON = r"""
const $ = (s, r=document) => r.querySelector(s);
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k.nodeType ? k : document.createTextNode(String(k)));
  return e;
}
function hashParams() { return Object.fromEntries(new URLSearchParams(location.hash.slice(1))); }
function fillSelect(sel, values, current) {
  sel.innerHTML = '';
  sel.append(el('option', {value: ''}, 'all'));
  for (const v of values) sel.append(el('option', {value: String(v), selected: String(v) === String(current) ? 'selected' : null}, String(v)));
}
// Base64 to bytes with a plain loop: Uint8Array.from(str, mapFn) walks the string through the
// iterator protocol and took 0.2-0.3 s of a full-LoCoMo sample viewer's open; this takes ~10 ms.
function b64bytes(b64) {
  const s = atob(b64), bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}
async function gunzipJSON(b64) {
  const stream = new Blob([b64bytes(b64)]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(stream).text());
}
function inflateJSON(id) { return gunzipJSON($('#' + id).textContent); }
function uniq(xs) { return [...new Set(xs)].sort((a, b) => (typeof a === 'number' && typeof b === 'number') ? a - b : String(a).localeCompare(String(b))); }
"""
