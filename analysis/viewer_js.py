"""The trajectory viewer's script (vanilla JS, after :data:`vismem.analysis.viewer_common.JS_COMMON`).

Two tabs: encoding *sessions* (chain -> session -> steps) and *probes*, one entry per probe with
every architecture's outcome side by side. The URL hash holds the whole state (filters, the
A/B comparison, the open probe or session step), so any view is a permalink and report rows link
to filtered views (``#backend=...&architecture=...&J=...``). Keys: j / k or the arrow keys move
through the list; the detail pane starts at its top for every item.
"""

SCRIPT = r"""
const D = JSON.parse($('#vdata').textContent), IMG = JSON.parse($('#vimg').textContent);
const P = JSON.parse($('#vprobes').textContent);
D.sessions = [];
const KEYS = ['tab', 'backend', 'seed', 'session', 'J', 'architecture', 'outcome', 'reach', 'a', 'b', 'rel', 'probe', 'sid', 'step'];
const S = {shown: 300};
const chunks = new Map();
function img(key, cls, alt) {
  return IMG[key] ? el('img', {src: IMG[key], class: cls, alt: alt || key, loading: 'lazy'}) : el('span', {class: 'muted'}, '(no image)');
}
function productImg(h, cls) { return D.products[h] ? img(D.products[h], cls, 'product ' + h) : null; }
function okBadge(ok, yes, no) { return el('span', {class: 'badge ' + (ok ? 'ok' : 'bad')}, ok ? yes : no); }
function hashOf(url) { return (url || '').split('?')[0].split('#')[0].split('/').pop(); }
async function chunkOf(g) {
  if (!g.z) return {logs: {}, entries: {}};
  if (!chunks.has(g.k)) chunks.set(g.k, await gunzipJSON(g.z));
  return chunks.get(g.k);
}
function backendMatch(b, chain) { return !S.backend || b === S.backend || chain === S.backend; }
function chainOf(name) { const g = P.groups.find(g => g.backend === name); return g ? g.chain : name; }
function sessionsShown() {
  const chain = chainOf(S.backend);
  return D.sessions.filter(s => (!S.backend || s.backend === S.backend || s.backend === chain)
    && (!S.seed || String(s.seed) === S.seed) && (!S.session || String(s.j) === S.session));
}
function relMatch(g) {
  if (!S.rel || !S.a || !S.b) return true;
  const a = g.o[S.a], b = g.o[S.b];
  if (!a || !b) return false;
  const [wa, wb] = S.rel.split('-').map(x => x === 'hit');
  return a.ok === wa && b.ok === wb;
}
function outcomeMatch(g) {
  if (!S.outcome) return !S.architecture || !!g.o[S.architecture];
  const want = S.outcome === 'success';
  if (S.architecture) return !!g.o[S.architecture] && g.o[S.architecture].ok === want;
  return Object.values(g.o).some(o => o.ok === want);
}
function probesShown() {
  return P.groups.filter(g => backendMatch(g.backend, g.chain) && (!S.seed || String(g.seed) === S.seed)
    && (!S.session || String(g.recall) === S.session) && (!S.J || g.recall <= Number(S.J))
    && (!S.reach || String(g.reach) === S.reach) && outcomeMatch(g) && relMatch(g));
}
function renderFilters() {
  fillSelect($('#f-backend'), uniq(D.sessions.map(s => s.backend).concat(P.groups.map(g => g.chain))), chainOf(S.backend));
  fillSelect($('#f-seed'), uniq(D.sessions.map(s => s.seed).concat(P.groups.map(g => g.seed))), S.seed);
  fillSelect($('#f-session'), uniq(D.sessions.map(s => s.j).concat(P.groups.map(g => g.recall))), S.session);
  fillSelect($('#f-reach'), uniq(P.groups.map(g => g.reach).filter(r => r !== null)), S.reach);
  for (const k of ['architecture', 'a', 'b']) fillSelect($('#f-' + k), P.archs, S[k]);
  $('#f-outcome').value = S.outcome; $('#f-rel').value = S.rel;
  $('#tab-sessions').className = S.tab === 'sessions' ? 'on' : ''; $('#tab-probes').className = S.tab === 'probes' ? 'on' : '';
  for (const e of document.querySelectorAll('.probe-only')) e.style.display = S.tab === 'probes' ? '' : 'none';
}
function strip(g) {
  return el('span', {class: 'strip'}, P.archs.filter(a => g.o[a]).map(a => el('span', {class: 'sq ' + (g.o[a].ok ? 'ok' : 'bad'), title: a + ': ' + (g.o[a].ok ? 'success' : (g.o[a].fail || 'failure'))})));
}
function wholeRun() {
  const n = S.rel && S.a && S.b && P.pairs[S.a] && P.pairs[S.a][S.b];
  if (!n) return '';
  const i = ['hit-hit', 'hit-miss', 'miss-hit', 'miss-miss'].indexOf(S.rel);
  return ' · whole run: ' + n[i] + ' of ' + n.reduce((x, y) => x + y, 0) + ' probes both answered';
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
    return;
  }
  const ps = probesShown(), arch = S.architecture;
  const ok = arch ? ps.filter(g => g.o[arch] && g.o[arch].ok).length : null;
  $('#count').textContent = ps.length + ' probes' + (arch && ps.length ? ', ' + arch + ' succeeded on ' + ok + ' (' + (100 * ok / ps.length).toFixed(1) + '%)' : '') + wholeRun();
  if (!ps.length) list.append(el('p', {class: 'empty'}, 'No probes match the filters.'));
  for (const g of ps.slice(0, S.shown)) {
    const mine = arch && g.o[arch];
    list.append(el('div', {class: 'item probe-item', 'data-key': g.k, onclick: () => showProbe(g)},
      mine ? okBadge(mine.ok, 'success', mine.fail || 'failure') : null, ' ', strip(g), ' ', el('span', {class: 'muted'},
      g.chain + ' · seed ' + g.seed + ' · ' + g.id + ' · recall after session ' + g.recall + ' · reach ' + g.reach + ' · ' + (g.cue || ''))));
  }
  if (ps.length > S.shown) list.append(el('button', {onclick: () => { S.shown += 300; renderList(); }}, 'show more (' + (ps.length - S.shown) + ' left)'));
}
function select(key) {
  for (const e of document.querySelectorAll('.item')) e.classList.toggle('sel', e.dataset.key === key);
  const s = document.querySelector('.item.sel'); if (s) s.scrollIntoView({block: 'nearest'});
}
function fresh() { const d = $('#detail'); d.innerHTML = ''; d.scrollTop = 0; return d; }
function showSession(s, focus) {
  select(s.id); S.sid = s.id; S.step = focus || ''; history.replaceState(null, '', link(S));
  const d = fresh();
  d.append(el('h2', {}, s.backend + ' · seed ' + s.seed + ' · session ' + s.j), el('p', {class: 'muted'}, (s.category ? 'Task category: ' + s.category + '. ' : '') + s.steps.length + ' steps, ' + s.products + ' distinct products.'));
  for (const st of s.steps) {
    const valid = st.valid === null || st.valid === undefined ? st.status === 'ok' : st.valid;
    d.append(el('div', {class: 'card step' + (String(st.n) === String(focus) ? ' focus' : ''), 'data-step': st.n}, st.img ? img(st.img, 'obs', 'observation of step ' + st.n) : el('div', {class: 'muted'}, '(page without a product image)'),
      el('div', {class: 'txt'}, el('b', {}, 'Step ' + st.n), okBadge(valid, 'valid', st.status === 'ok' ? 'invalid' : st.status),
        el('div', {class: 'url'}, st.url || ''), st.title ? el('div', {class: 'muted'}, st.title) : null,
        st.thought ? el('p', {}, el('i', {}, 'Thought: '), st.thought) : null, st.action ? el('p', {}, el('i', {}, 'Action: '), el('code', {}, st.action)) : null,
        st.error ? el('p', {class: 'bad'}, st.error) : null)));
  }
  const f = d.querySelector('.step.focus'); if (f) f.scrollIntoView({block: 'start'});
}
function encodingStep(g) {
  const t = hashOf(g.target);
  const s = D.sessions.find(s => s.backend === g.chain && String(s.seed) === String(g.seed) && String(s.j) === String(g.visit));
  const st = s && s.steps.find(st => st.url && hashOf(st.url) === t);
  return st ? {j: s.j, n: st.n} : null;
}
function link(state) {
  const h = new URLSearchParams();
  for (const k of KEYS) if (state[k] !== undefined && state[k] !== '' && state[k] !== null) h.set(k, state[k]);
  return '#' + h.toString();
}
function scoreText(sc) { return sc ? Object.entries(sc).map(([k, v]) => k + ' ' + (typeof v === 'number' ? v.toFixed(3) : '—')).join(' · ') : ''; }
function recalledThumbs(st, target) {
  return el('div', {class: 'thumbs recalled'}, st.recalled.map((h, r) => {
    const sc = st.scores && st.scores[r];
    return el('figure', {class: h === target ? 'hit' : ''}, productImg(h) || el('span', {class: 'muted'}, h),
      el('figcaption', {}, '(' + (r + 1) + ') ' + h + (h === target ? ' ✓ target' : '')), sc ? el('div', {class: 'scores muted'}, scoreText(sc)) : null);
  }));
}
// The target's channel scores at a step, side by side with the other architectures' (why one
// recalled it and another did not); the rank is the recalled list's.
function targetScores(st, t) {
  const r = st ? st.recalled.indexOf(t) : -1, sc = r >= 0 && st.scores && st.scores[r];
  return sc ? el('div', {class: 'scores target-scores muted'}, 'target: ' + scoreText(sc)) : null;
}
function entryText(e) {
  return el('div', {class: 'entry'}, el('div', {class: 'muted'}, 'session ' + e.session + ', entry ' + (e.position + 1)),
    e.text ? el('div', {class: 'entry-text'}, e.text) : null, e.caption ? el('div', {class: 'entry-caption'}, e.caption) : null,
    e.image ? el('span', {class: 'muted'}, 'image stored') : null);
}
async function showProbe(g) {
  select(g.k); S.probe = g.k; history.replaceState(null, '', link(S));
  const d = fresh(), t = hashOf(g.target), enc = encodingStep(g);
  d.append(el('h2', {}, 'Probe ' + g.id + ' · ' + (g.cue || '?')),
    el('div', {class: 'card', id: 'probe-detail'}, g.timg ? img(g.timg, 'target', 'target product') : null, el('div', {class: 'txt'},
      el('p', {}, 'Cue: ', el('b', {}, g.cue || '?'), ' · visited in session ' + g.visit + ', recalled after session ' + g.recall + ' (reach ' + g.reach + ')'),
      el('p', {}, 'Target ', el('span', {class: 'url'}, g.target || '')),
      enc ? el('p', {}, el('a', {class: 'enc-link', href: link({tab: 'sessions', backend: g.chain, seed: g.seed, session: enc.j, step: enc.n})},
        'Seen while encoding: session ' + enc.j + ', step ' + enc.n)) : el('p', {class: 'muted'}, '(the encoding step is not among this run\'s sessions)'),
      el('p', {class: 'muted'}, g.chain + ' · seed ' + g.seed + ' · recalled by ' + g.backend + (g.bank !== null ? ' · bank of ' + g.bank + ' products' : '')),
      el('a', {class: 'permalink', href: link(S)}, 'permalink'))));
  const c = await chunkOf(g);
  if (S.probe !== g.k) return;
  const rows = P.archs.filter(a => g.o[a]).map(a => {
    const o = g.o[a], lg = c.logs[a], first = lg && lg[0], fin = hashOf(o.fin);
    return el('tr', {class: o.ok ? 'hit' : 'miss', 'data-arch': a}, el('td', {}, a), el('td', {}, okBadge(o.ok, 'success', o.fail || 'failure')),
      el('td', {class: 'opened'}, o.fin ? [productImg(fin, 'mini'), el('span', {class: 'url'}, o.fin)] : el('span', {class: 'muted'}, '(no product)')),
      el('td', {class: 'first-recalled'}, first ? first.recalled.map((h, r) => el('span', {class: 'rec' + (h === t ? ' hit' : '')}, '(' + (r + 1) + ') ' + h + (h === t ? ' ✓' : '') + ' ')) : el('span', {class: 'muted'}, '(no log)'),
        targetScores(first, t)),
      el('td', {}, String(o.n || 0)), el('td', {class: 'wrote'}, !(a in c.entries) ? el('span', {class: 'muted'}, '(not recorded)')
        : c.entries[a][t] ? entryText(c.entries[a][t]) : el('span', {class: 'muted'}, '(not in its bank)')));
  });
  d.append(el('table', {class: 'side'}, el('tr', {}, ['Architecture', 'Outcome', 'Opened', 'Recalled at step 1', 'Steps', 'What it wrote about the target'].map(h => el('th', {}, h))), rows));
  const shown = P.archs.filter(a => g.o[a]), open = [S.architecture, S.a].find(a => a && g.o[a]) || shown[0];
  for (const a of shown) {
    const lg = c.logs[a];
    const det = el('details', {class: 'arch-log', 'data-arch': a}, el('summary', {}, a + ' — step log' + (lg ? ' (' + lg.length + ' steps)' : ' (not in the page)')));
    const fill = () => { if (det.dataset.filled || !lg) return; det.dataset.filled = '1'; lg.forEach((st, i) => det.append(probeStep(st, i, t))); };
    det.addEventListener('toggle', fill);
    if (a === open) { det.open = true; fill(); }
    d.append(det);
  }
}
function probeStep(st, i, target) {
  return el('div', {class: 'card probe-step'}, el('div', {class: 'txt'},
    el('b', {}, 'Step ' + (i + 1)), okBadge(st.status === 'ok', 'ok', st.status), el('div', {class: 'url'}, st.url || ''),
    el('div', {class: 'muted'}, 'Memory block:'), st.memory ? el('pre', {class: 'memory'}, st.memory) : el('p', {class: 'muted'}, '(memory text not recorded for this probe)'),
    el('div', {class: 'muted'}, 'Recalled products (' + st.recalled.length + ', ' + (st.n_images || 0) + ' images sent)' + (st.scores ? ', scores per channel:' : ', channel scores not recorded:')),
    recalledThumbs(st, target), st.reply ? el('pre', {class: 'reply'}, st.reply) : null,
    st.action ? el('p', {}, el('i', {}, 'Action: '), el('code', {}, st.action)) : null, st.error ? el('p', {class: 'bad'}, st.error) : null));
}
function apply() { history.replaceState(null, '', link(S)); renderFilters(); renderList(); }
function load() {
  const h = hashParams();
  for (const k of KEYS) S[k] = h[k] || '';
  S.tab = S.tab || (S.architecture || S.probe || S.rel ? 'probes' : 'sessions');
  renderFilters(); renderList();
  if (S.tab === 'probes' && S.probe) { const g = P.groups.find(g => g.k === S.probe); if (g) { showProbe(g); return; } }
  const first = document.querySelector('.item');
  const sid = S.tab === 'sessions' && (D.sessions.find(s => s.id === S.sid) ? S.sid : first && first.dataset.key);
  if (sid) showSession(D.sessions.find(s => s.id === sid), S.step);
  else if (first) first.click();
}
function move(by) {
  let items = [...document.querySelectorAll('.item')]; if (!items.length) return;
  let i = items.findIndex(e => e.classList.contains('sel'));
  // Past the last listed probe while more match: list the next ones (as 'show more' does) and go on.
  if (S.tab === 'probes' && i >= 0 && i + by >= items.length && probesShown().length > S.shown) {
    const key = items[i].dataset.key;
    S.shown += 300; renderList();
    items = [...document.querySelectorAll('.item')]; i = items.findIndex(e => e.dataset.key === key);
  }
  items[Math.max(0, Math.min(items.length - 1, i < 0 ? 0 : i + by))].click();
}
document.addEventListener('keydown', e => {
  if (e.target.closest && e.target.closest('select, input, textarea') || e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === 'j' || e.key === 'ArrowDown') { move(1); e.preventDefault(); }
  else if (e.key === 'k' || e.key === 'ArrowUp') { move(-1); e.preventDefault(); }
});
for (const k of ['backend', 'seed', 'session', 'architecture', 'outcome', 'reach', 'a', 'b', 'rel'])
  $('#f-' + k).addEventListener('change', e => { S[k] = e.target.value; S.shown = 300; S.probe = ''; S.sid = ''; S.step = ''; apply(); });
$('#tab-sessions').addEventListener('click', () => { S.tab = 'sessions'; S.probe = ''; apply(); });
$('#tab-probes').addEventListener('click', () => { S.tab = 'probes'; S.step = ''; apply(); });
window.addEventListener('hashchange', load);
// Sessions are gzipped in the page; the body's data-ready marks the page as usable.
inflateJSON('vsessions').then(ss => { D.sessions = ss; load(); document.body.dataset.ready = '1'; })
  .catch(e => { $('#detail').textContent = 'Could not read the sessions: ' + e; load(); document.body.dataset.ready = '1'; });
"""

FILTERS = """<div class="filters">
<span class="tabs"><button id="tab-sessions" class="on">Sessions</button><button id="tab-probes">Probes</button></span>
<label>Back-end<select id="f-backend"></select></label><label>Seed<select id="f-seed"></select></label>
<label>Session<select id="f-session"></select></label>
<span class="probe-only"><label>Reach<select id="f-reach"></select></label>
<label>Architecture<select id="f-architecture"></select></label>
<label>Outcome<select id="f-outcome"><option value="">all</option><option value="success">success</option>
<option value="failure">failure</option></select></label>
<label>A<select id="f-a"></select></label><label>B<select id="f-b"></select></label>
<label>A vs B<select id="f-rel"><option value="">any</option><option value="hit-miss">hit in A, miss in B</option>
<option value="miss-hit">miss in A, hit in B</option><option value="hit-hit">hit in both</option>
<option value="miss-miss">miss in both</option></select></label></span>
<span class="muted" id="count"></span><span class="muted keys">j/k or arrows: next/previous</span></div>"""

CSS = """
.strip{display:inline-flex;gap:1px;vertical-align:middle}.sq{display:inline-block;width:8px;height:12px}
.sq.ok{background:#2e7d32}.sq.bad{background:#c62828}table.side{border-collapse:collapse;margin:.6em 0;width:100%}
table.side th,table.side td{border:1px solid #ddd;padding:.25em .4em;font-size:.85em;vertical-align:top;text-align:left}
table.side tr.hit td:first-child{border-left:4px solid #2e7d32}table.side tr.miss td:first-child{border-left:4px solid #c62828}
img.mini{width:48px;height:48px;object-fit:cover;display:block}.rec.hit{font-weight:bold;color:#1b5e20}
.step.focus{outline:3px solid #f5a623}.arch-log{margin:.4em 0}.arch-log summary{cursor:pointer;font-weight:bold}
.scores{font-size:.7em}.entry-caption{font-style:italic}.keys{margin-left:auto}
"""
