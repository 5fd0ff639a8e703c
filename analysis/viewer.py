"""The DMV-Bench trajectory viewer: one static HTML page per run (chains → sessions → steps, probes).

Built from frames and image bytes (the pipelines layer reads the trajectory and probe caches):
every encoding session of the run with each step's observation image, URL, thought, action and
validity; every probe episode with its target, the memory block and recalled images of each
step, the final URL and whether it succeeded. Filters: back-end, seed, session, architecture,
outcome; the URL hash carries them (``#backend=...&architecture=...``), so report rows link to
a filtered view. Images are inlined once each (:mod:`vismem.analysis.viewer_common`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import polars as pl

from vismem.analysis.viewer_common import JS_COMMON, PRODUCT_MAX_PX, gzip_block, image_table, json_block, page
from vismem.core.failures import shorten

#: Characters of a reply / memory block kept per step (the page stays loadable at paper scale).
TEXT_CAP = 4000


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


def _probes(probes: pl.DataFrame | None) -> list[dict[str, Any]]:
    if probes is None or probes.height == 0:
        return []
    cols = set(probes.columns)
    out = []
    for r in probes.iter_rows(named=True):
        get = (lambda c, r=r: r.get(c) if c in cols else None)
        log = get("log")
        steps = json.loads(log) if isinstance(log, str) else (log or None)
        out.append({
            "backend": r["backend"], "chain": get("chain_backend") or r["backend"], "seed": r["seed"], "J": r["J"],
            "arch": r["architecture"], "variant": get("variant"), "study": get("study"), "id": r["probe_id"],
            "visit": get("visit_session"), "recall": get("recall_session"), "reach": get("reach"),
            "cue": get("target_cue"), "target": get("target_url"), "target_img": get("target_image"),
            "final": get("final_url"), "correct": bool(r["correct"]), "failure": get("failure"), "n_steps": get("steps"),
            "log": None if steps is None else [
                {"url": st.get("url"), "status": st.get("status"),
                 "action": " ".join(str(x) for x in (st.get("action_type"), st.get("action_arg")) if x) or None,
                 "reply": _s(st.get("reply")), "error": _s(st.get("error"), 500),
                 "recalled": list(st.get("recalled") or []), "memory": _s(st.get("memory_text")),
                 "n_images": st.get("n_images")} for st in steps]})
    return out


def trajectory_viewer(steps: pl.DataFrame, probes: pl.DataFrame | None, images: Mapping[str, bytes], *,
                      product_images: Mapping[str, str] | None = None, run_id: str = "", note: str = "",
                      max_px: int = PRODUCT_MAX_PX) -> str:
    """The viewer's HTML.

    ``steps``: one row per encoding step (``backend``, ``seed``, ``j`` (1-based session),
    ``step``, ``url``; optional ``category``, ``title``, ``image_key``, ``thought``,
    ``action_text``/``action_type``/``action_arg``, ``status``, ``valid``, ``error``);
    ``probes``: the run's probe rows (``vismem.analysis.schemas`` ``probes``) plus optional ``log`` (the
    probe cache's JSON step log), ``target_image`` (blob key) and ``chain_backend`` (the browsing
    back-end's name as ``steps`` spells it); ``images``: blob key → bytes; ``product_images``:
    product hash → blob key (recalled products' images).
    """
    sessions = _sessions(steps)
    plist = _probes(probes)
    products = dict(product_images or {})
    keys = [st["img"] for s in sessions for st in s["steps"]] + [p["target_img"] for p in plist]
    keys += [products[h] for p in plist for st in (p["log"] or []) for h in st["recalled"] if h in products]
    data = {"run_id": run_id, "sessions": sessions, "products": products, "note": note}
    imgs = image_table(images, keys, max_px=max_px)
    n_steps = sum(len(s["steps"]) for s in sessions)
    meta = (f"Run {run_id}: {len(sessions)} sessions, {n_steps} steps, {len(plist)} probe episodes, "
            f"{len(imgs)} images. {note}")
    body = (_FILTERS + '<div class="layout"><div class="list" id="list"></div><div class="detail" id="detail">'
            '<p class="empty">Pick a session or a probe on the left.</p></div></div>'
            + json_block("vdata", data) + gzip_block("vprobes", plist) + json_block("vimg", imgs))
    return page(f"vismem trajectories — {run_id}", meta, body, JS_COMMON + _SCRIPT)


_FILTERS = """<div class="filters">
<span class="tabs"><button id="tab-sessions" class="on">Sessions</button><button id="tab-probes">Probe episodes</button></span>
<label>Back-end<select id="f-backend"></select></label><label>Seed<select id="f-seed"></select></label>
<label>Session<select id="f-session"></select></label><label>Architecture<select id="f-architecture"></select></label>
<label>Outcome<select id="f-outcome"><option value="">all</option><option value="success">success</option>
<option value="failure">failure</option></select></label><span class="muted" id="count"></span></div>"""

_SCRIPT = r"""
const D = JSON.parse($('#vdata').textContent), IMG = JSON.parse($('#vimg').textContent);
D.probes = [];
const S = {tab: 'sessions', backend: '', seed: '', session: '', architecture: '', outcome: '', shown: 300};
const chainOf = {};
function img(key, cls, alt) { return IMG[key] ? el('img', {src: IMG[key], class: cls, alt: alt || key}) : el('span', {class: 'muted'}, '(no image)'); }
function okBadge(ok, yes, no) { return el('span', {class: 'badge ' + (ok ? 'ok' : 'bad')}, ok ? yes : no); }
function backendMatch(b) { return !S.backend || b === S.backend || chainOf[S.backend] === b; }
function sessionsShown() {
  return D.sessions.filter(s => backendMatch(s.backend) && (!S.seed || String(s.seed) === S.seed) && (!S.session || String(s.j) === S.session));
}
function probesShown() {
  return D.probes.filter(p => (!S.backend || p.backend === S.backend || p.chain === S.backend) && (!S.seed || String(p.seed) === S.seed)
    && (!S.session || String(p.recall) === S.session) && (!S.architecture || p.arch === S.architecture)
    && (!S.outcome || (S.outcome === 'success') === p.correct));
}
function renderFilters() {
  fillSelect($('#f-backend'), uniq(D.sessions.map(s => s.backend).concat(D.probes.map(p => p.chain))), chainOf[S.backend] || S.backend);
  fillSelect($('#f-seed'), uniq(D.sessions.map(s => s.seed).concat(D.probes.map(p => p.seed))), S.seed);
  fillSelect($('#f-session'), uniq(D.sessions.map(s => s.j).concat(D.probes.map(p => p.recall))), S.session);
  fillSelect($('#f-architecture'), uniq(D.probes.map(p => p.arch)), S.architecture);
  $('#f-outcome').value = S.outcome;
  $('#tab-sessions').className = S.tab === 'sessions' ? 'on' : ''; $('#tab-probes').className = S.tab === 'probes' ? 'on' : '';
}
function renderList() {
  const list = $('#list'); list.innerHTML = '';
  if (S.tab === 'sessions') {
    const ss = sessionsShown(); let group = null;
    $('#count').textContent = ss.length + ' sessions';
    if (!ss.length) list.append(el('p', {class: 'empty'}, 'No sessions match the filters.'));
    for (const s of ss) {
      const g = s.backend + ' · seed ' + s.seed;
      if (g !== group) { list.append(el('div', {class: 'group'}, 'Chain: ' + g)); group = g; }
      list.append(el('div', {class: 'item session-item', 'data-key': s.id, onclick: () => showSession(s)},
        'Session ' + s.j + ' ', el('span', {class: 'muted'}, (s.category || '') + ' · ' + s.steps.length + ' steps · ' + s.products + ' products')));
    }
  } else {
    const ps = probesShown();
    const ok = ps.filter(p => p.correct).length;
    $('#count').textContent = ps.length + ' probes, ' + ok + ' succeeded' + (ps.length ? ' (' + (100 * ok / ps.length).toFixed(1) + '%)' : '');
    if (!ps.length) list.append(el('p', {class: 'empty'}, 'No probe episodes match the filters.'));
    for (const p of ps.slice(0, S.shown)) {
      list.append(el('div', {class: 'item probe-item', 'data-key': p.arch + '|' + p.seed + '|' + p.id, onclick: () => showProbe(p)},
        okBadge(p.correct, 'success', p.failure || 'failure'), ' ', p.arch, ' ', el('span', {class: 'muted'},
        'seed ' + p.seed + ' · ' + p.id + ' · recall after session ' + p.recall + ' · reach ' + p.reach + ' · ' + (p.cue || ''))));
    }
    if (ps.length > S.shown) list.append(el('button', {onclick: () => { S.shown += 300; renderList(); }}, 'show more (' + (ps.length - S.shown) + ' left)'));
  }
}
function select(key) { for (const e of document.querySelectorAll('.item')) e.classList.toggle('sel', e.dataset.key === key); }
function showSession(s) {
  select(s.id);
  const d = $('#detail'); d.innerHTML = '';
  d.append(el('h2', {}, s.backend + ' · seed ' + s.seed + ' · session ' + s.j), el('p', {class: 'muted'}, (s.category ? 'Task category: ' + s.category + '. ' : '') + s.steps.length + ' steps, ' + s.products + ' distinct products.'));
  for (const st of s.steps) {
    const valid = st.valid === null || st.valid === undefined ? st.status === 'ok' : st.valid;
    d.append(el('div', {class: 'card step', 'data-step': st.n}, st.img ? img(st.img, 'obs', 'observation of step ' + st.n) : el('div', {class: 'muted'}, '(page without a product image)'),
      el('div', {class: 'txt'}, el('b', {}, 'Step ' + st.n), okBadge(valid, 'valid', st.status === 'ok' ? 'invalid' : st.status),
        el('div', {class: 'url'}, st.url || ''), st.title ? el('div', {class: 'muted'}, st.title) : null,
        st.thought ? el('p', {}, el('i', {}, 'Thought: '), st.thought) : null, st.action ? el('p', {}, el('i', {}, 'Action: '), el('code', {}, st.action)) : null,
        st.error ? el('p', {class: 'bad'}, st.error) : null)));
  }
}
function showProbe(p) {
  select(p.arch + '|' + p.seed + '|' + p.id);
  const d = $('#detail'); d.innerHTML = '';
  d.append(el('h2', {}, 'Probe ' + p.id + ' · ' + p.arch + (p.variant && p.variant !== 'default' ? ' (' + p.variant + ')' : '')),
    el('div', {class: 'card', id: 'probe-detail'}, p.target_img ? img(p.target_img, 'target', 'target product') : null, el('div', {class: 'txt'},
      el('p', {}, 'Cue: ', el('b', {}, p.cue || '?'), ' · visited in session ' + p.visit + ', recalled after session ' + p.recall + ' (reach ' + p.reach + ')'),
      el('p', {}, 'Target ', el('span', {class: 'url'}, p.target || ''), ' → final ', el('span', {class: 'url'}, p.final || '(none)'), ' ', okBadge(p.correct, 'success', p.failure || 'failure')),
      el('p', {class: 'muted'}, p.backend + ' · seed ' + p.seed + ' · J=' + p.J + ' · ' + (p.n_steps || 0) + ' steps'))));
  if (!p.log) { d.append(el('p', {class: 'muted'}, 'No step log for this probe (not in the probe cache).')); return; }
  const targetHash = (p.target || '').split('/').pop();
  p.log.forEach((st, i) => {
    const thumbs = el('div', {class: 'thumbs recalled'}, st.recalled.map((h, r) => el('figure', {class: h === targetHash ? 'hit' : ''},
      D.products[h] ? img(D.products[h], '', 'recalled ' + h) : el('span', {class: 'muted'}, h), el('figcaption', {}, '(' + (r + 1) + ') ' + h + (h === targetHash ? ' ✓ target' : '')))));
    d.append(el('div', {class: 'card probe-step'}, el('div', {class: 'txt'},
      el('b', {}, 'Step ' + (i + 1)), okBadge(st.status === 'ok', 'ok', st.status), el('div', {class: 'url'}, st.url || ''),
      el('div', {class: 'muted'}, 'Memory block:'), st.memory ? el('pre', {class: 'memory'}, st.memory) : el('p', {class: 'muted'}, '(memory text not recorded for this probe)'),
      el('div', {class: 'muted'}, 'Recalled products (' + st.recalled.length + ', ' + (st.n_images || 0) + ' images sent):'), thumbs,
      st.reply ? el('pre', {class: 'reply'}, st.reply) : null, st.action ? el('p', {}, el('i', {}, 'Action: '), el('code', {}, st.action)) : null,
      st.error ? el('p', {class: 'bad'}, st.error) : null)));
  });
}
function apply() {
  const h = new URLSearchParams();
  for (const k of ['tab', 'backend', 'seed', 'session', 'architecture', 'outcome']) if (S[k] && !(k === 'tab' && S[k] === 'sessions')) h.set(k, S[k]);
  history.replaceState(null, '', '#' + h.toString());
  renderFilters(); renderList();
}
function load() {
  const h = hashParams();
  for (const k of ['backend', 'seed', 'session', 'architecture', 'outcome']) S[k] = h[k] || '';
  if (h.J && !S.session) S.J = h.J;
  S.tab = h.tab || (S.architecture ? 'probes' : 'sessions');
  renderFilters(); renderList();
  const first = document.querySelector('.item'); if (first) first.click();
}
for (const k of ['backend', 'seed', 'session', 'architecture', 'outcome'])
  $('#f-' + k).addEventListener('change', e => { S[k] = e.target.value; S.shown = 300; apply(); });
$('#tab-sessions').addEventListener('click', () => { S.tab = 'sessions'; apply(); });
$('#tab-probes').addEventListener('click', () => { S.tab = 'probes'; apply(); });
window.addEventListener('hashchange', load);
// Probe episodes are gzipped in the page; the body's data-ready marks the page as usable.
inflateJSON('vprobes').then(ps => {
  D.probes = ps; for (const p of ps) chainOf[p.backend] = p.chain;
  load(); document.body.dataset.ready = '1';
}).catch(e => { $('#detail').textContent = 'Could not read the probe episodes: ' + e; load(); document.body.dataset.ready = '1'; });
"""
