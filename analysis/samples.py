"""The MemShot sample viewer: per question what was retrieved, answered and judged, as one static page.

Built from frames and shot bytes (the pipelines layer reads the run's ranking, units and answers):
each question with its gold answer, category and evidence turns; per retrieval variant the top-k
units with their dia_ids (evidence turns marked), shots as images (a text unit shows the shot
the ``memshot`` variant rendered for the same unit, when there is one), and -- when the run had
a VLM -- the prediction, the judge's verdict and token F1 at each k. Without answers the page
shows retrieval only. Filters: variant, k, category, conversation, outcome, text search; the
URL hash carries them (``#variant=no-render&k=5``), so report rows link to a filtered view.

:func:`shots_gallery` is the page ``vismem shots`` writes: one conversation's shots in order.
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import polars as pl

from vismem.analysis.viewer_common import JS_COMMON, data_uri, image_table, json_block, page

#: Characters of a text unit kept in the page.
UNIT_TEXT_CAP = 3000


def _shot_map(units: pl.DataFrame) -> dict[str, str]:
    """unit_id -> the shot key that renders it (the ``memshot`` variant first, then any image variant)."""
    if "key" not in units.columns:
        return {}
    img = units.filter(pl.col("key").is_not_null())
    order = sorted(img["variant"].unique().to_list(), key=lambda v: (v != "memshot", v))
    out: dict[str, str] = {}
    for v in order:
        for uid, key in img.filter(pl.col("variant") == v).select("unit_id", "key").iter_rows():
            out.setdefault(uid, key)
    return out


def _per_question(frame: pl.DataFrame | None, cols: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """``(question_id, variant) -> {k: {col: value}}`` from a recall or answers table."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if frame is None or frame.height == 0:
        return out
    have = [c for c in cols if c in frame.columns]
    for r in frame.iter_rows(named=True):
        out.setdefault((r["question_id"], r["variant"]), {})[str(r["k"])] = {c: r[c] for c in have}
    return out


def sample_data(questions: pl.DataFrame, ranked: pl.DataFrame, units: pl.DataFrame, *,
                recall: pl.DataFrame | None = None, answers: pl.DataFrame | None = None) -> dict[str, Any]:
    """The viewer's data (JSON-able): questions with per-variant rankings, recall and answers."""
    shot_of = _shot_map(units)
    unit_index: dict[tuple[str, str], int] = {}
    ulist: list[dict[str, Any]] = []
    for r in units.iter_rows(named=True):
        text = r.get("text")
        unit_index[(r["variant"], r["unit_id"])] = len(ulist)
        ulist.append({"id": r["unit_id"], "variant": r["variant"], "dia": list(r.get("dia_ids") or []),
                      "text": text[:UNIT_TEXT_CAP] if isinstance(text, str) else None,
                      "shot": r.get("key") or shot_of.get(r["unit_id"]), "own_shot": bool(r.get("key"))})
    rec = _per_question(recall, ("recall", "hit"))
    ans = _per_question(answers, ("prediction", "judge_label", "f1", "answer", "answer_status", "judge_status"))
    ranks: dict[tuple[str, str], list[list[Any]]] = {}
    for r in ranked.sort("variant", "question_id", "rank").iter_rows(named=True):
        i = unit_index.get((r["variant"], r["unit_id"]))
        if i is not None:
            # a memory's retrieve() gives an order, not always a score (null)
            score = None if r.get("score") is None else round(float(r["score"]), 4)
            ranks.setdefault((r["question_id"], r["variant"]), []).append([i, score])
    variants = sorted({v for _, v in ranks} | {v for _, v in ans})
    qs = []
    for q in questions.iter_rows(named=True):
        per = {}
        for v in variants:
            key = (q["question_id"], v)
            if key in ranks or key in ans:
                per[v] = {"ranked": ranks.get(key, []), "recall": rec.get(key, {}), "ans": ans.get(key, {})}
        if per:
            gold = q.get("answer")
            if gold is None:  # the answers table carries the gold answer when the dataset was not read
                gold = next((a.get("answer") for v in per.values() for a in v["ans"].values() if a.get("answer")), None)
            qs.append({"id": q["question_id"], "conv": q["conversation_id"], "q": q.get("question") or q["question_id"],
                       "gold": gold, "cat": q.get("category"), "ev": list(q.get("evidence") or []), "v": per})
    ks = sorted({int(k) for q in qs for v in q["v"].values() for k in (*v["recall"], *v["ans"])})
    return {"questions": qs, "units": ulist, "variants": variants, "ks": ks}


def sample_viewer(questions: pl.DataFrame, ranked: pl.DataFrame, units: pl.DataFrame, *, shots: Mapping[str, bytes],
                  recall: pl.DataFrame | None = None, answers: pl.DataFrame | None = None, run_id: str = "",
                  note: str = "") -> str:
    """The viewer's HTML.

    ``questions``: ``conversation_id``, ``question_id``, ``question``, ``answer``, ``category``,
    ``evidence`` (dia_ids); ``ranked``: ``variant``, ``question_id``, ``rank``, ``unit_id``,
    ``score``; ``units``: ``variant``, ``unit_id``, ``dia_ids``, ``text``, ``key`` (shot key, null for
    text units); ``shots``: shot key → image bytes; ``recall`` / ``answers``: the run's
    ``memshot_recall`` / ``memshot_answers`` rows (optional).
    """
    data = sample_data(questions, ranked, units, recall=recall, answers=answers)
    max_k = max(data["ks"]) if data["ks"] else 10
    used = {data["units"][i]["shot"] for q in data["questions"] for v in q["v"].values()
            for i, _ in v["ranked"][:max_k] if data["units"][i]["shot"]}
    imgs = image_table(shots, sorted(used), max_px=None)
    has_answers = any(v["ans"] for q in data["questions"] for v in q["v"].values())
    data["note"] = note
    meta = (f"Run {run_id}: {len(data['questions'])} questions, variants {', '.join(data['variants']) or 'none'}, "
            f"{len(imgs)} shots; " + ("answers and judge verdicts included." if has_answers else
                                      "retrieval only (no memshot.vlm configured, so no answers).") + f" {note}")
    body = (_FILTERS + '<div class="layout"><div class="list" id="list"></div><div class="detail" id="detail">'
            '<p class="empty">Pick a question on the left.</p></div></div>'
            + json_block("sdata", data) + json_block("simg", imgs))
    return page(f"vismem MemShot samples — {run_id}", meta, body, JS_COMMON + _SCRIPT, css=_CSS)


def shots_gallery(units: Sequence[Mapping[str, Any]], *, title: str, note: str = "") -> str:
    """A self-contained page of shots in order: each ``{unit_id, dia_ids, image (bytes or None),
    text, height, overflow}``; images are inlined, text units shown as text."""
    cards = []
    for u in units:
        img = (f'<img class="shot" src="{data_uri(u["image"])}" alt="{html.escape(u["unit_id"])}">'
               if u.get("image") else f'<pre>{html.escape(str(u.get("text") or ""))}</pre>')
        cards.append(f'<div class="card unit"><div class="txt"><b>{html.escape(u["unit_id"])}</b>'
                     f'<div class="muted">{len(u.get("dia_ids") or [])} turns: {html.escape(", ".join(u.get("dia_ids") or []))}'
                     f'{" · " + str(u["height"]) + " px" if u.get("height") else ""}'
                     f'{" · overflow" if u.get("overflow") else ""}</div>{img}</div></div>')
    return page(title, note, '<div class="detail">' + "".join(cards) + "</div>", "", css=_CSS)


_CSS = """
.unit .shot{max-width:min(100%,720px);max-height:none;border:1px solid #bbb}.unit.evidence{border-color:#2e7d32;border-width:2px}
.chip{display:inline-block;font-family:monospace;font-size:.8em;background:#eee;border-radius:3px;padding:0 .3em;margin:1px}
.chip.ev{background:#2e7d32;color:#fff}.qa{background:#f7f9fc;border:1px solid #dde;padding:.6em;margin:.6em 0}
"""

_FILTERS = """<div class="filters">
<label>Variant<select id="f-variant"></select></label><label>k<select id="f-k"></select></label>
<label>Category<select id="f-category"></select></label><label>Conversation<select id="f-conversation"></select></label>
<label>Outcome<select id="f-outcome"><option value="">all</option><option value="hit">evidence retrieved</option>
<option value="miss">evidence missed</option><option value="correct">judged correct</option><option value="wrong">judged wrong</option>
</select></label><label>Search<input id="f-search" size="18"></label><span class="muted" id="count"></span></div>"""

_SCRIPT = r"""
const D = JSON.parse($('#sdata').textContent), IMG = JSON.parse($('#simg').textContent);
const S = {variant: '', k: '', category: '', conversation: '', outcome: '', search: ''};
const pct = x => x === null || x === undefined ? '—' : (100 * x).toFixed(1) + '%';
function variantOf(q) { return S.variant && q.v[S.variant] ? S.variant : (q.v[D.variants[0]] ? D.variants[0] : Object.keys(q.v)[0]); }
function kOf() { return S.k || String(D.ks.length ? D.ks[D.ks.length - 1] : 10); }
function hitOf(q, v, k) {
  const ev = new Set(q.ev);
  return q.v[v].ranked.slice(0, +k).some(([i]) => D.units[i].dia.some(d => ev.has(d)));
}
function shown() {
  const k = kOf(), s = S.search.toLowerCase();
  return D.questions.filter(q => {
    if (S.variant && !q.v[S.variant]) return false;
    if (S.category && q.cat !== S.category) return false;
    if (S.conversation && q.conv !== S.conversation) return false;
    if (s && !(q.q + ' ' + (q.gold || '') + ' ' + q.id).toLowerCase().includes(s)) return false;
    const v = variantOf(q), a = (q.v[v].ans || {})[k];
    if (S.outcome === 'hit' && !hitOf(q, v, k)) return false;
    if (S.outcome === 'miss' && (!scored(q) || hitOf(q, v, k))) return false;
    if (S.outcome === 'correct' && !(a && a.judge_label === true)) return false;
    if (S.outcome === 'wrong' && !(a && a.judge_label === false)) return false;
    return true;
  });
}
function scored(q) { return q.ev.length > 0; }
function renderFilters() {
  fillSelect($('#f-variant'), D.variants, S.variant);
  fillSelect($('#f-k'), D.ks, S.k);
  fillSelect($('#f-category'), uniq(D.questions.map(q => q.cat).filter(Boolean)), S.category);
  fillSelect($('#f-conversation'), uniq(D.questions.map(q => q.conv)), S.conversation);
  $('#f-outcome').value = S.outcome; $('#f-search').value = S.search;
}
function renderList() {
  const list = $('#list'); list.innerHTML = '';
  const qs = shown(), k = kOf();
  // A question without evidence turns is not scored for recall (the report leaves it out too).
  const sc = qs.filter(scored), hits = sc.filter(q => hitOf(q, variantOf(q), k)).length;
  $('#count').textContent = qs.length + ' questions; evidence in the top ' + k + ' for ' + hits + ' of ' + sc.length
    + ' scored' + (qs.length > sc.length ? '; ' + (qs.length - sc.length) + ' without evidence turns' : '');
  if (!qs.length) list.append(el('p', {class: 'empty'}, 'No questions match the filters.'));
  for (const q of qs.slice(0, 1000)) {
    const v = variantOf(q), a = (q.v[v].ans || {})[k], hit = hitOf(q, v, k);
    list.append(el('div', {class: 'item question-item', 'data-key': q.id, onclick: () => showQuestion(q)},
      scored(q) ? el('span', {class: 'badge ' + (hit ? 'ok' : 'bad')}, hit ? 'hit@' + k : 'miss@' + k)
                : el('span', {class: 'badge muted no-evidence'}, 'no evidence'),
      a && a.judge_label !== null && a.judge_label !== undefined ? el('span', {class: 'badge ' + (a.judge_label ? 'ok' : 'bad')}, a.judge_label ? 'correct' : 'wrong') : null,
      ' ', q.q, ' ', el('span', {class: 'muted'}, q.cat || '')));
  }
}
function chips(dia, ev) { return dia.map(d => el('span', {class: 'chip' + (ev.has(d) ? ' ev' : '')}, d)); }
function showQuestion(q) {
  for (const e of document.querySelectorAll('.item')) e.classList.toggle('sel', e.dataset.key === q.id);
  const d = $('#detail'); d.innerHTML = '';
  const v = variantOf(q), k = kOf(), ev = new Set(q.ev), info = q.v[v];
  d.append(el('h2', {id: 'question'}, q.q), el('p', {class: 'muted'}, q.conv + ' · ' + q.id + ' · ' + (q.cat || '')),
    el('p', {}, 'Gold answer: ', el('b', {id: 'gold'}, q.gold === null || q.gold === undefined ? '(none)' : String(q.gold))),
    el('p', {}, 'Evidence turns: ', q.ev.length ? chips(q.ev, ev) : el('span', {class: 'muted'}, 'none')));
  const qa = el('div', {class: 'qa', id: 'answers'}, el('b', {}, 'Variant ' + v + ': '));
  const r = info.recall[k];
  if (r) qa.append('recall@' + k + ' ' + pct(r.recall) + (r.hit ? ' (hit)' : ' (miss)') + '. ');
  const ks = Object.keys(info.ans).sort((a, b) => a - b);
  if (!ks.length) qa.append(el('span', {class: 'muted'}, 'No answers (the run had no memshot.vlm).'));
  for (const kk of ks) {
    const a = info.ans[kk];
    qa.append(el('div', {class: 'answer', 'data-k': kk}, 'top-' + kk + ': prediction ', el('b', {class: 'prediction'}, a.prediction === null ? '(no answer: ' + (a.answer_status || 'malformed') + ')' : a.prediction),
      ' · judge ', a.judge_label === null || a.judge_label === undefined ? el('span', {class: 'badge warn'}, a.judge_status || 'not judged') : el('span', {class: 'badge ' + (a.judge_label ? 'ok' : 'bad')}, a.judge_label ? 'CORRECT' : 'WRONG'),
      ' · F1 ' + (a.f1 === null || a.f1 === undefined ? '—' : a.f1.toFixed(3))));
  }
  d.append(qa, el('h3', {}, 'Top ' + k + ' retrieved units (' + v + ')'));
  info.ranked.slice(0, +k).forEach(([i, score], r) => {
    const u = D.units[i], isEv = u.dia.some(x => ev.has(x));
    const shot = u.shot && IMG[u.shot] ? el('img', {class: 'shot', src: IMG[u.shot], alt: u.id}) : null;
    d.append(el('div', {class: 'card unit' + (isEv ? ' evidence' : ''), 'data-unit': u.id}, el('div', {class: 'txt'},
      el('b', {}, '#' + (r + 1) + ' ' + u.id), ' ', el('span', {class: 'muted'}, score === null ? '' : 'score ' + score), isEv ? el('span', {class: 'badge ok'}, 'evidence') : null,
      el('div', {}, chips(u.dia, ev)), shot, shot && !u.own_shot ? el('div', {class: 'muted'}, 'the same unit as the memshot variant rendered it') : null,
      !shot && u.text ? el('pre', {}, u.text) : null)));
  });
}
function apply() {
  const h = new URLSearchParams();
  for (const k of Object.keys(S)) if (S[k]) h.set(k, S[k]);
  history.replaceState(null, '', '#' + h.toString());
  renderList();
}
function load() {
  const h = hashParams();
  for (const k of Object.keys(S)) S[k] = h[k] || '';
  renderFilters(); renderList();
  const first = document.querySelector('.item'); if (first) first.click();
}
for (const k of ['variant', 'k', 'category', 'conversation', 'outcome']) $('#f-' + k).addEventListener('change', e => { S[k] = e.target.value; apply(); });
$('#f-search').addEventListener('input', e => { S.search = e.target.value; apply(); });
window.addEventListener('hashchange', load);
load();
document.body.dataset.ready = '1';
"""
