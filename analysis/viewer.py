"""The DMV-Bench trajectory viewer: one static HTML page per run (chains → sessions → steps, probes).

Built from frames and image bytes (the pipelines layer reads the trajectory and probe caches):
every encoding session of the run with each step's observation image, URL, thought, action and
validity; the run's probes (:mod:`vismem.analysis.probe_page`), each with every architecture's
outcome side by side, what each recalled (with per-channel scores where recorded), wrote to its
bank and opened, a link to the encoding step where the target was seen, and the step logs.
Filters: back-end, seed, session, reach, architecture, outcome, "hit in A, miss in B"; the URL
hash carries them and the open probe (:mod:`vismem.analysis.viewer_js`). Images are files beside
the page (:mod:`vismem.analysis.viewer_files`) or, for a page on its own, inlined.
"""

from __future__ import annotations

from typing import Any, Mapping

import polars as pl

from vismem.analysis.probe_page import TEXT_CAP, probe_groups
from vismem.analysis.viewer_common import JS_COMMON, PRODUCT_MAX_PX, gzip_block, image_table, json_block, page
from vismem.analysis.viewer_files import image_files
from vismem.analysis.viewer_js import CSS, FILTERS, SCRIPT
from vismem.core.failures import shorten


def _s(v: Any, cap: int = TEXT_CAP) -> Any:
    return shorten(v, cap) if isinstance(v, str) else v


def _sessions(steps: pl.DataFrame) -> list[dict[str, Any]]:
    cols = set(steps.columns)
    get = lambda r, c: r.get(c) if c in cols else None  # noqa: E731
    out: dict[tuple, dict[str, Any]] = {}
    for r in steps.sort("backend", "seed", "j", "step").iter_rows(named=True):
        key = (r["backend"], r["seed"], r["j"])
        s = out.get(key)
        if s is None:
            s = out[key] = {"id": f"{r['backend']}|{r['seed']}|{r['j']}", "backend": r["backend"], "seed": r["seed"],
                            "j": r["j"], "category": get(r, "category"), "steps": []}
        action = get(r, "action_text") or " ".join(str(x) for x in (get(r, "action_type"), get(r, "action_arg")) if x)
        s["steps"].append({"n": r["step"], "url": r["url"], "title": get(r, "title"), "img": get(r, "image_key"),
                           "thought": _s(get(r, "thought")), "action": action or None,
                           "status": get(r, "status") or "ok", "valid": get(r, "valid"),
                           "error": _s(get(r, "error") or get(r, "exec_error"), 500)})
    for s in out.values():
        s["products"] = len({st["url"] for st in s["steps"] if st["url"] and st["url"].startswith("/product/")})
    return list(out.values())


def trajectory_viewer(steps: pl.DataFrame, probes: pl.DataFrame | None, images: Mapping[str, bytes], *,
                      product_images: Mapping[str, str] | None = None, run_id: str = "", note: str = "",
                      max_px: int = PRODUCT_MAX_PX, assets: dict[str, bytes] | None = None,
                      banks: Mapping[tuple, Mapping[str, Any]] | None = None,
                      pairs: Mapping[str, Mapping[str, list[int]]] | None = None) -> str:
    """The viewer's HTML.

    ``steps``: one row per encoding step (``backend``, ``seed``, ``j`` (1-based session),
    ``step``, ``url``; optional ``category``, ``title``, ``image_key``, ``thought``,
    ``action_text``/``action_type``/``action_arg``, ``status``, ``valid``, ``error``);
    ``probes``: the probe rows to show (:func:`vismem.analysis.probe_page.probe_groups`: with
    optional ``log``, ``scores``, ``target_image``, ``chain_backend``); ``images``: blob key ->
    bytes; ``product_images``: product hash -> blob key (recalled products' images); ``banks``:
    bank entries per (architecture, chain, seed, product); ``pairs``: the whole run's A-vs-B
    counts (:func:`vismem.analysis.probe_page.pair_counts`) when ``probes`` is a sample. With ``assets`` (a dict), images are
    written into it as ``{relative path: bytes}`` and the page refers to them (to be stored beside
    it); without, they are inlined.
    """
    sessions = _sessions(steps)
    groups, archs = probe_groups(probes, banks=banks)
    products = dict(product_images or {})
    keys = [st["img"] for s in sessions for st in s["steps"]] + [g["timg"] for g in groups]
    keys += sorted(products.values())
    if assets is None:
        imgs = image_table(images, keys, max_px=max_px)
    else:
        imgs, files = image_files(images, keys, max_px=max_px)
        assets.update(files)
    n_steps = sum(len(s["steps"]) for s in sessions)
    n_eps = sum(len(g["o"]) for g in groups)
    meta = (f"Run {run_id}: {len(sessions)} sessions, {n_steps} steps, {len(groups)} probes "
            f"({n_eps} episodes over {len(archs)} architectures), {len(imgs)} images. {note}")
    data = {"run_id": run_id, "products": products, "note": note}
    body = (FILTERS + '<div class="layout"><div class="list" id="list"></div><div class="detail" id="detail">'
            '<p class="empty">Pick a session or a probe on the left.</p></div></div>'
            + json_block("vdata", data) + gzip_block("vsessions", sessions)
            + json_block("vprobes", {"groups": groups, "archs": archs, "pairs": pairs or {}}) + json_block("vimg", imgs))
    return page(f"vismem trajectories — {run_id}", meta, body, JS_COMMON + SCRIPT, css=CSS)


