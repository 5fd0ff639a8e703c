"""The MemShot sample viewer's page: every variant side by side on one question.

One static HTML file (data in a gzipped JSON block, shots referenced by URL -- files beside the page --
or inlined for small pages). The list on the left holds every question with a dot per variant
(evidence retrieved in the top k or not); the detail on the right, rendered only when a question
is opened, compares the variants in one table (hit at k, rank of the first evidence unit,
prediction and verdict at k) and then shows each variant's retrieved units in a column: shots
(loaded lazily), the OCR text a pixel reader read from them, and the text the retriever
embedded, with the part its truncation dropped marked.

Filters: focus variant, k, category, conversation, outcome, "hit in A, miss in B" (or "correct
in A, wrong in B"), text search. The URL hash holds the filter state and the open question
(``#variant=no-render&k=5&a=memshot&b=text-rag&q=conv-26:q12``), so a report row or a
question is one link. Keys: ``j`` / ``↓`` next question, ``k`` / ``↑`` previous.
"""

from __future__ import annotations

from typing import Any, Mapping

from vismem.analysis.viewer_common import JS_COMMON, gzip_block, json_block, page


def render_samples(data: dict[str, Any], images: Mapping[str, str], *, title: str, meta: str) -> str:
    """The page for :func:`vismem.analysis.samples.sample_data`'s ``data`` and ``images`` (shot key →
    ``src``: a relative URL or a data URI). ``data`` goes into a gzipped block (``sdata``)."""
    # Gzipped, the data (rankings, answers, texts) of a full-LoCoMo run with the paper's eleven
    # variants is 4 MB of page instead of 15, and the browser opens it faster: parsing 10 MB of
    # HTML costs more than inflating it (0.75 s of renderer CPU against 0.85 s).
    body = (_FILTERS + '<div class="layout"><div class="list" id="list" tabindex="0"></div>'
            '<div class="detail" id="detail"><p class="empty">Pick a question on the left.</p></div></div>'
            + gzip_block("sdata", data) + json_block("simg", dict(images)))
    return page(title, meta, body, JS_COMMON + _SCRIPT, css=_CSS)


def page_data(html: str) -> dict[str, Any]:
    """The data a sample viewer page holds (its gzipped ``sdata`` block), for tools and checks."""
    import base64
    import gzip
    import json
    import re

    block = re.search(r'<script type="application/octet-stream" id="sdata"[^>]*>([^<]*)</script>', html)
    if block is None:
        raise ValueError("not a sample viewer page: no sdata block")
    return json.loads(gzip.decompress(base64.b64decode(block[1])))


_CSS = """
.list .item{content-visibility:auto;contain-intrinsic-size:auto 3em}.unit{display:block}.unit .shot{max-width:100%;max-height:none;border:1px solid #bbb}
.unit.evidence{border-color:#2e7d32;border-width:2px}
.chip{display:inline-block;font-family:monospace;font-size:.8em;background:#eee;border-radius:3px;padding:0 .3em;margin:1px}
.chip.ev{background:#2e7d32;color:#fff}.qa{background:#f7f9fc;border:1px solid #dde;padding:.6em;margin:.6em 0}
.vdot{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-left:2px;background:#ccc;vertical-align:middle}
.vdot.ok{background:#2e7d32}.vdot.bad{background:#c62828}
table.compare{border-collapse:collapse;margin:.6em 0;font-size:.9em}table.compare td,table.compare th{border:1px solid #ddd;
padding:.2em .5em;text-align:left;vertical-align:top}table.compare tr.focus{background:#eef4ff}
.sbs{display:flex;gap:.8em;align-items:flex-start;overflow-x:auto}.sbs .col{flex:1 1 0;min-width:260px}
.col h4{margin:.3em 0;position:sticky;top:0;background:#fff;padding:.2em 0}
pre.embedded .dropped{color:#999;background:#f1f1f1}mark.ev-turn{background:#c8e6c9;color:inherit}pre.embedded .dropped::before{content:"\\2702 not embedded past here \\2193\\A";
color:#b71c1c;font-weight:bold}details summary{cursor:pointer;font-size:.85em;color:#1a4f9c}.permalink{font-size:.85em;margin-left:.5em}
"""

_FILTERS = """<div class="filters">
<label>Variant<select id="f-variant"></select></label><label>k<select id="f-k"></select></label>
<label>Category<select id="f-category"></select></label><label>Conversation<select id="f-conversation"></select></label>
<label>Outcome<select id="f-outcome"><option value="">all</option><option value="hit">evidence retrieved</option>
<option value="miss">evidence missed</option><option value="correct">judged correct</option><option value="wrong">judged wrong</option>
</select></label>
<label><select id="f-by"><option value="">Evidence retrieved</option><option value="verdict">Judged correct</option></select>
in<select id="f-a"></select></label><label>but not in<select id="f-b"></select></label>
<label>Search<input id="f-search" size="18"></label><span class="muted" id="count"></span>
<span class="muted">Dots: one per variant, <span class="vdot ok"></span> evidence in the top k, <span class="vdot bad"></span> missed;
keys j / k: next / previous question</span></div>"""

_SCRIPT = r"""
let D = null, BY_ID = null;  // the gzipped data, read before the first render
const IMG = JSON.parse($('#simg').textContent);
const S = {variant: '', k: '', category: '', conversation: '', outcome: '', by: '', a: '', b: '', search: '', q: ''};
let SHOWN = [];
const pct = x => x === null || x === undefined ? '—' : (100 * x).toFixed(1) + '%';
const txt = i => i === null || i === undefined ? '' : D.texts[i];
// The variant a question's badge and answers are about: the chosen one, else the A of an
// "A but not B" comparison (a list filtered on A's hits badges A's outcome), else the first.
function variantOf(q) {
  for (const v of [S.variant, S.a, D.variants[0]]) if (v && q.v[v]) return v;
  return Object.keys(q.v)[0];
}
function kOf() { return S.k || String(D.ks.length ? D.ks[D.ks.length - 1] : 10); }
function scored(q) { return q.ev.length > 0; }
// Evidence in the top k: the first evidence unit's rank is at most k (null: no evidence, or no ranking).
function hitOf(q, v, k) { const e = q.v[v]; if (!e || !scored(q) || !e.ranked.length) return null; return e.first !== null && e.first <= +k; }
function verdictOf(q, v, k) { const a = ((q.v[v] || {}).ans || {})[k]; return a && a.judge_label !== null && a.judge_label !== undefined ? a.judge_label : null; }
function outcomeOf(q, v, k) { return S.by === 'verdict' ? verdictOf(q, v, k) : hitOf(q, v, k); }
function shown() {
  const k = kOf(), s = S.search.toLowerCase();
  return D.questions.filter(q => {
    if (S.variant && !q.v[S.variant]) return false;
    if (S.category && q.cat !== S.category) return false;
    if (S.conversation && q.conv !== S.conversation) return false;
    if (s && !(q.q + ' ' + (q.gold || '') + ' ' + q.id).toLowerCase().includes(s)) return false;
    const v = variantOf(q), verdict = verdictOf(q, v, k);
    if (S.outcome === 'hit' && hitOf(q, v, k) !== true) return false;
    if (S.outcome === 'miss' && hitOf(q, v, k) !== false) return false;
    if (S.outcome === 'correct' && verdict !== true) return false;
    if (S.outcome === 'wrong' && verdict !== false) return false;
    if (S.a && outcomeOf(q, S.a, k) !== true) return false;
    if (S.b && outcomeOf(q, S.b, k) !== false) return false;
    return true;
  });
}
function renderFilters() {
  fillSelect($('#f-variant'), D.variants, S.variant);
  fillSelect($('#f-k'), D.ks, S.k);
  fillSelect($('#f-category'), uniq(D.questions.map(q => q.cat).filter(Boolean)), S.category);
  fillSelect($('#f-conversation'), uniq(D.questions.map(q => q.conv)), S.conversation);
  fillSelect($('#f-a'), D.variants, S.a); fillSelect($('#f-b'), D.variants, S.b);
  $('#f-a').options[0].textContent = $('#f-b').options[0].textContent = '(any)';
  $('#f-outcome').value = S.outcome; $('#f-by').value = S.by; $('#f-search').value = S.search;
}
const ESC = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'};
const esc = x => String(x).replace(/[&<>"']/g, c => ESC[c]);
// One HTML string per list item (escaped) and one click listener on the list: ~2,000 items
// render in a fraction of what as many element trees and closures take.
function itemHTML(q, k) {
  const v = variantOf(q), hit = hitOf(q, v, k), verdict = verdictOf(q, v, k);
  const dots = D.variants.filter(x => q.v[x]).map(x => { const h = hitOf(q, x, k);
    return '<span class="vdot' + (h === true ? ' ok' : h === false ? ' bad' : '') + '" data-variant="' + esc(x) + '" title="'
      + esc(x + ': ' + (h === true ? 'hit' : h === false ? 'miss' : 'not scored') + '@' + k) + '"></span>'; }).join('');
  return '<div class="item question-item" data-key="' + esc(q.id) + '">'
    + (!scored(q) ? '<span class="badge muted no-evidence">no evidence</span>'
       : hit === null ? '<span class="badge muted">no ranking</span>'
       : '<span class="badge ' + (hit ? 'ok' : 'bad') + '">' + (hit ? 'hit@' : 'miss@') + esc(k) + '</span>')
    + (verdict !== null ? '<span class="badge ' + (verdict ? 'ok">correct' : 'bad">wrong') + '</span>' : '')
    + ' ' + esc(q.q) + ' <span class="muted">' + esc(q.cat || '') + '</span> ' + dots + '</div>';
}
// The list renders in chunks: the first when the filters change, the next when its end scrolls
// into view (or a key or a permalink needs a question further down), so a filter over ~2,000
// questions costs one chunk, not the whole list.
const CHUNK = 250;
let RENDERED = 0;
function renderMore(upto) {
  const list = $('#list'), k = kOf(), end = Math.min(SHOWN.length, Math.max(upto || 0, RENDERED + CHUNK));
  if (end <= RENDERED) return;
  const more = $('#more'); if (more) more.remove();
  list.insertAdjacentHTML('beforeend', SHOWN.slice(RENDERED, end).map(q => itemHTML(q, k)).join('')
    + (end < SHOWN.length ? '<div id="more" class="muted empty">' + (SHOWN.length - end) + ' more…</div>' : ''));
  RENDERED = end;
  if ($('#more')) MORE.observe($('#more'));
}
const MORE = new IntersectionObserver(es => { if (es.some(e => e.isIntersecting)) renderMore(); }, {root: $('#list'), rootMargin: '600px'});
function renderList() {
  const list = $('#list'), qs = shown(), k = kOf();
  SHOWN = qs; RENDERED = 0; MORE.disconnect();
  // A question without evidence turns is not scored for recall (the report leaves it out too).
  const sc = qs.filter(scored), hits = sc.filter(q => hitOf(q, variantOf(q), k)).length;
  $('#count').textContent = qs.length + ' questions; evidence in the top ' + k + ' for ' + hits + ' of ' + sc.length
    + ' scored' + (qs.length > sc.length ? '; ' + (qs.length - sc.length) + ' without evidence turns' : '');
  list.innerHTML = qs.length ? '' : '<p class="empty">No questions match the filters.</p>';
  list.scrollTop = 0;
  renderMore();
}
function chips(dia, ev) { return dia.map(d => el('span', {class: 'chip' + (ev.has(d) ? ' ev' : '')}, d)); }
function verdictBadge(a) {
  if (!a) return el('span', {class: 'muted'}, '—');
  return a.judge_label === null || a.judge_label === undefined ? el('span', {class: 'badge warn'}, a.judge_status || 'not judged')
    : el('span', {class: 'badge ' + (a.judge_label ? 'ok' : 'bad')}, a.judge_label ? 'CORRECT' : 'WRONG');
}
function predText(a) { return !a ? '—' : a.prediction === null ? '(no answer: ' + (a.answer_status || 'malformed') + ')' : a.prediction; }
// e.far: the first evidence unit in the whole ranking ([rank, unit, score, units ranked]) when the kept top k holds none.
function firstText(q, e) {
  return !scored(q) ? '—' : e.first !== null ? 'rank ' + e.first
    : e.far ? 'rank ' + e.far[0] + (e.far[3] ? ' of ' + e.far[3] : '') + ' (below the top ' + e.ranked.length + ')'
    : 'not in top ' + e.ranked.length;
}
// Units holding an evidence turn below the cut-off k: ranked further down ([i, score, rank]) or not at all.
function missedEvidence(q, e, k) {
  const ev = new Set(q.ev), out = [];
  e.ranked.forEach(([i, score], r) => { if (r >= +k && D.units[i].dia.some(d => ev.has(d))) out.push([i, score, r]); });
  return out.concat((e.evu || []).map(i => e.far && e.far[1] === i ? [i, e.far[2], e.far[0] - 1] : [i, null, null]));
}
function cutNote(q, e, k) {
  const ev = new Set(q.ev), units = missedEvidence(q, e, k).map(([i]) => D.units[i]);
  if (e.first !== null && e.first <= +k) units.push(D.units[e.ranked[e.first - 1][0]]);
  return units.some(u => cutEvidence(u, ev).length) ? el('div', {class: 'badge warn cmp-cut'}, 'evidence past the embedder\'s cut') : null;
}
// Table and column order: the focus variant, then the B of a comparison, then the rest.
function order(q) { const v = variantOf(q), b = S.b && S.b !== v && q.v[S.b] ? [S.b] : [];
  return [v, ...b, ...D.variants.filter(x => x !== v && x !== S.b && q.v[x])]; }
function compareTable(q, k) {
  const t = el('table', {class: 'compare', id: 'compare'}, el('tr', {}, ['variant', 'retriever', 'evidence@' + k,
    'first evidence', 'prediction@' + k, 'verdict', 'F1'].map(h => el('th', {}, h))));
  for (const v of order(q)) {
    const e = q.v[v], a = e.ans[k], h = hitOf(q, v, k), info = D.vinfo[v] || {};
    t.append(el('tr', {'data-variant': v, class: v === variantOf(q) ? 'focus' : null}, el('td', {}, v),
      el('td', {class: 'muted'}, (info.embedder || '') + (info.limit ? ' · ' + info.limit : '')),
      el('td', {class: 'cmp-hit'}, h === null ? '—' : el('span', {class: 'badge ' + (h ? 'ok' : 'bad')}, h ? 'hit' : 'miss')),
      el('td', {}, el('span', {class: 'cmp-first'}, firstText(q, e)), cutNote(q, e, k)), el('td', {class: 'cmp-pred'}, predText(a)),
      el('td', {class: 'cmp-verdict'}, verdictBadge(a)), el('td', {}, a && a.f1 !== null && a.f1 !== undefined ? a.f1.toFixed(3) : '—')));
  }
  return t;
}
// [start, end) of each turn line of a LoCoMo-format text unit (header lines, 'CONVERSATION:', one
// line per turn in dia_id order; as samples.turn_spans), or null when the lines do not match.
function turnSpans(text, n) {
  const head = text.indexOf('CONVERSATION:\n'); if (head < 0) return null;
  let pos = head + 'CONVERSATION:\n'.length; const spans = [];
  for (const line of text.slice(pos).split('\n')) { if (line) spans.push([pos, pos + line.length]); pos += line.length + 1; }
  return spans.length === n ? spans : null;
}
// text[from, to) with the evidence turns' lines (marks: [start, end) spans) in <mark>.
function marked(text, from, to, marks) {
  const out = []; let at = from;
  for (const [a, b] of marks) {
    const s = Math.max(a, at), e = Math.min(b, to); if (s >= e) continue;
    if (s > at) out.push(text.slice(at, s));
    out.push(el('mark', {class: 'ev-turn'}, text.slice(s, e))); at = e;
  }
  if (at < to) out.push(text.slice(at, to));
  return out;
}
function embeddedPre(text, cut, marks) {
  marks = marks || [];
  if (cut === undefined || cut === null || cut >= text.length) return el('pre', {class: 'embedded'}, marked(text, 0, text.length, marks));
  return el('pre', {class: 'embedded truncated'}, el('span', {class: 'kept'}, marked(text, 0, cut, marks)),
    el('span', {class: 'dropped'}, marked(text, cut, text.length, marks)));
}
// The lines of a text unit's evidence turns, to mark in its text.
function evMarks(u, text, ev) {
  const spans = turnSpans(text, u.dia.length);
  return spans ? u.dia.map((d, j) => [d, spans[j]]).filter(([d]) => ev.has(d)).map(([, sp]) => sp) : [];
}
function lazyImg(key, alt) { return IMG[key] ? el('img', {class: 'shot', loading: 'lazy', decoding: 'async', alt: alt, src: IMG[key]}) : null; }
// Evidence turns of a text unit the embedder's truncation dropped: [[dia, 'past' | 'partly'], ...].
function cutEvidence(u, ev) {
  if (!u.spans || u.cut === undefined) return [];
  return u.dia.map((d, j) => [d, u.spans[j]]).filter(([d]) => ev.has(d))
    .map(([d, sp]) => [d, sp[0] >= u.cut ? 'past' : sp[1] > u.cut ? 'partly' : '']).filter(x => x[1]);
}
function unitCard(u, r, score, ev) {
  const isEv = u.dia.some(x => ev.has(x)), card = el('div', {class: 'card unit' + (isEv ? ' evidence' : ''), 'data-unit': u.id});
  const body = el('div', {class: 'txt'}, el('b', {}, (typeof r === 'number' ? '#' + (r + 1) : r) + ' ' + u.id), ' ',
    el('span', {class: 'muted'}, score === null ? '' : 'score ' + score), isEv ? el('span', {class: 'badge ok'}, 'evidence') : null,
    el('div', {}, chips(u.dia, ev)),
    cutEvidence(u, ev).map(([d, how]) => el('div', {class: 'badge warn evcut'}, 'evidence ' + d + (how === 'past'
      ? ' lies past the embedder\'s cut: never embedded' : ' is cut by the embedder: only partly embedded'))));
  if (u.own_shot) body.append(lazyImg(u.shot, u.id));
  if (u.read) body.append(el('div', {class: 'muted readrate'}, 'read rate ' + pct(u.read.rate) + (u.read.missed ? ' · missed: ' + u.read.missed : '')));
  if (u.emb === 'ocr' && u.ocr === undefined) {
    body.append(el('div', {class: 'muted ocr-missing'}, 'Read by the pixel reader; its text of this shot was not kept '
      + '(the OCR cache has no entry for it: a memory reads its shots at ingest, outside the cache).'));
  } else if (u.emb === 'ocr') {
    const o = txt(u.ocr);
    body.append(el('details', {class: 'ocr'}, el('summary', {}, 'OCR text the pixel reader read and embedded (' + o.length + ' chars'
      + (u.cut !== undefined && u.cut < o.length ? ', ' + u.cut + ' embedded' : '') + ')'), embeddedPre(o, u.cut)));
  } else if (u.own_shot && u.ocr !== undefined) {
    body.append(el('details', {class: 'ocr'}, el('summary', {}, 'OCR text read from the shot'), el('pre', {}, txt(u.ocr))));
  } else if (u.own_shot && u.emb === undefined && u.t !== null) {
    body.append(el('details', {class: 'drawn-text'}, el('summary', {}, 'words drawn on the shot'), el('pre', {}, txt(u.t))));
  }
  if (!u.own_shot && u.t !== null) body.append(embeddedPre(txt(u.t), u.emb === 'text' ? u.cut : undefined, evMarks(u, txt(u.t), ev)));
  if (!u.own_shot && u.shot && IMG[u.shot])
    body.append(el('details', {class: 'drawn'}, el('summary', {}, 'the same unit as the memshot variant drew it'), lazyImg(u.shot, u.id)));
  card.append(body);
  return card;
}
function showQuestion(q) {
  for (const e of document.querySelectorAll('.item.sel')) e.classList.remove('sel');
  const at = SHOWN.indexOf(q); if (at >= RENDERED) renderMore(at + 1);
  const item = document.querySelector('.item[data-key="' + CSS.escape(q.id) + '"]');
  if (item) { item.classList.add('sel'); item.scrollIntoView({block: 'nearest'}); }
  const d = $('#detail'); d.innerHTML = ''; d.scrollTop = 0; d.dataset.q = q.id;
  const v = variantOf(q), k = kOf(), ev = new Set(q.ev), info = q.v[v];
  const link = new URLSearchParams(location.hash.slice(1)); link.set('q', q.id);
  d.append(el('h2', {id: 'question'}, q.q), el('p', {class: 'muted'}, q.conv + ' · ' + q.id + ' · ' + (q.cat || ''),
      el('a', {class: 'permalink', href: '#' + link.toString()}, 'link to this question')),
    el('p', {}, 'Gold answer: ', el('b', {id: 'gold'}, q.gold === null || q.gold === undefined ? '(none)' : String(q.gold))),
    el('p', {}, 'Evidence turns: ', q.ev.length ? chips(q.ev, ev) : el('span', {class: 'muted'}, 'none')), compareTable(q, k));
  const qa = el('div', {class: 'qa', id: 'answers'}, el('b', {}, 'Variant ' + v + ': '));
  const r = info.recall[k];
  if (r) qa.append('recall@' + k + ' ' + pct(r.recall) + (r.hit ? ' (hit)' : ' (miss)') + '. ');
  const ks = Object.keys(info.ans).sort((a, b) => a - b);
  if (!ks.length) qa.append(el('span', {class: 'muted'}, 'No answers (the run had no memshot.vlm).'));
  for (const kk of ks) {
    const a = info.ans[kk];
    qa.append(el('div', {class: 'answer', 'data-k': kk}, 'top-' + kk + ': prediction ', el('b', {class: 'prediction'}, predText(a)),
      ' · judge ', verdictBadge(a), ' · F1 ' + (a.f1 === null || a.f1 === undefined ? '—' : a.f1.toFixed(3))));
  }
  const cols = el('div', {class: 'sbs'});
  for (const x of order(q)) {
    const e = q.v[x], col = el('div', {class: 'col', 'data-variant': x}, el('h4', {}, x + ' · top ' + k + ' · first evidence: ' + firstText(q, e)));
    e.ranked.slice(0, +k).forEach(([i, score], rr) => col.append(unitCard(D.units[i], rr, score, ev)));
    if (!e.ranked.length) col.append(el('p', {class: 'muted'}, 'No ranking for this variant.'));
    const missed = missedEvidence(q, e, k);
    if (hitOf(q, x, k) === false && missed.length) {
      const box = el('div', {class: 'missed-box'}, el('h4', {class: 'missed'}, 'Evidence the top ' + k + ' missed'));
      for (const [i, score, rr] of missed) box.append(unitCard(D.units[i], rr === null ? 'not in the top ' + e.ranked.length : rr, score, ev));
      col.append(box);
    }
    cols.append(col);
  }
  d.append(qa, el('h3', {}, 'Retrieved units, every variant side by side'), cols);
}
function writeHash() {
  const h = new URLSearchParams();
  for (const k of Object.keys(S)) if (S[k]) h.set(k, S[k]);
  history.replaceState(null, '', '#' + h.toString());
}
function select(q) { S.q = q.id; writeHash(); showQuestion(q); }
function apply() { writeHash(); renderList(); const q = BY_ID.get(S.q) || BY_ID.get($('#detail').dataset.q); if (q) showQuestion(q); }
function load() {
  const h = hashParams();
  for (const k of Object.keys(S)) S[k] = h[k] || '';
  renderFilters(); renderList();
  // A permalink opens its question even when the filters hide it from the list.
  const q = BY_ID.get(S.q) || SHOWN[0];
  if (q) showQuestion(q);
}
function step(delta) {
  if (!SHOWN.length) return;
  const cur = $('#detail').dataset.q, i = SHOWN.findIndex(q => q.id === cur);
  select(SHOWN[Math.max(0, Math.min(SHOWN.length - 1, i < 0 ? 0 : i + delta))]);
}
$('#list').addEventListener('click', e => { const it = e.target.closest('.question-item'); if (it) select(BY_ID.get(it.dataset.key)); });
document.addEventListener('keydown', e => {
  if (e.altKey || e.ctrlKey || e.metaKey || /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
  const d = {j: 1, ArrowDown: 1, k: -1, ArrowUp: -1}[e.key];
  if (d) { e.preventDefault(); step(d); }
});
for (const k of ['variant', 'k', 'category', 'conversation', 'outcome', 'by', 'a', 'b']) $('#f-' + k).addEventListener('change', e => { S[k] = e.target.value; apply(); });
$('#f-search').addEventListener('input', e => { S.search = e.target.value; apply(); });
window.addEventListener('hashchange', load);
inflateJSON('sdata').then(d => { D = d; BY_ID = new Map(D.questions.map(q => [q.id, q])); load(); document.body.dataset.ready = '1'; });
"""
