"""The MemShot sample viewer side by side: the data the page gets (first evidence rank, texts
once, what each retriever embedded and where its truncation cut), the run's page from a store
(shots as files, OCR text from the cache), and the page in real Chromium from ``file://``
(compare filters, permalinks, keys, lazy images, hostile strings)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest

from vismem.analysis.samples import first_evidence_rank, sample_data
from vismem.analysis.samples_page import page_data
from vismem.bench.sample_viewer import synthetic_run, write_viewer

SMALL = {"conversations": 2, "sessions": 3, "units_per_session": 3, "questions": 16, "top": 6}


def _frames():
    q = pl.DataFrame({"conversation_id": ["c", "c"], "question_id": ["c:q0", "c:q1"], "question": ["Where?", "When?"],
                      "answer": ["Paris", None], "category": ["single-hop", "temporal"], "evidence": [["D1:3"], []]})
    units = pl.DataFrame({"variant": ["memshot", "memshot", "no-render", "no-render"],
                          "unit_id": ["c/u0", "c/u1", "c/u0", "c/u1"], "dia_ids": [["D1:1", "D1:2"], ["D1:3"]] * 2,
                          "text": ["A: hi\nB: yo", "A: Paris!", "A: hi\nB: yo", "A: Paris!"],
                          "key": ["p#0+10", "p#10+10", None, None], "ocr_text": ["A: hi B: yo", "A: Parls!", None, None],
                          "embedded": ["ocr", "ocr", "text", "text"], "embedded_chars": [None, 5, None, None]},
                         schema_overrides={"embedded_chars": pl.Int64})
    ranked = pl.DataFrame({"variant": ["memshot"] * 2 + ["no-render"] * 2, "question_id": ["c:q0"] * 4,
                           "rank": [1, 2, 1, 2], "unit_id": ["c/u0", "c/u1", "c/u1", "c/u0"], "score": [0.9, 0.5, 0.8, 0.1]})
    answers = pl.DataFrame({"variant": ["memshot", "no-render"], "question_id": ["c:q0", "c:q0"], "k": [1, 1],
                            "prediction": ["London", "Paris"], "judge_label": [False, True], "f1": [0.0, 1.0],
                            "answer": ["Paris", "Paris"]})
    return q, units, ranked, answers


def test_first_evidence_rank():
    assert first_evidence_rank([["D1:1"], ["D1:2", "D1:3"], ["D1:3"]], ["D1:3"]) == 2
    assert first_evidence_rank([["D1:1"]], ["D1:3"]) is None
    assert first_evidence_rank([["D1:1"]], []) is None


def test_sample_data_compares_variants_and_says_what_was_embedded():
    q, units, ranked, answers = _frames()
    d = sample_data(q, ranked, units, answers=answers,
                    variant_info={"memshot": {"embedder": "ocr-minilm", "limit": "256"}, "gone": {"embedder": "x"}})
    assert d["variants"] == ["memshot", "no-render"] and set(d["vinfo"]) == {"memshot", "no-render"}
    q0 = d["questions"][0]
    assert q0["v"]["memshot"]["first"] == 2 and q0["v"]["no-render"]["first"] == 1  # rank of the first evidence unit
    assert q0["gold"] == "Paris" and "answer" not in q0["v"]["memshot"]["ans"]["1"]  # gold once per question
    assert [q["id"] for q in d["questions"]] == ["c:q0"]  # q1 was neither ranked nor answered
    by = {(u["variant"], u["id"]): u for u in d["units"]}
    assert d["texts"].count("A: Paris!") == 1  # the same words of two variants are stored once
    assert by["memshot", "c/u0"]["t"] == by["no-render", "c/u0"]["t"]
    shot = by["memshot", "c/u1"]
    assert d["texts"][shot["ocr"]] == "A: Parls!" and shot["emb"] == "ocr" and shot["cut"] == 5 and shot["own_shot"]
    text = by["no-render", "c/u1"]
    assert text["emb"] == "text" and "cut" not in text and "ocr" not in text and text["shot"] == "p#10+10"
    assert json.dumps(d)


def test_a_unit_text_past_the_pages_cap_says_what_it_left_out(data_dir):
    """Every LoCoMo session fits the page's cap whole (the longest is ~6,200 characters); a longer
    text is cut with a line saying how many characters the page left out, never silently."""
    from vismem.analysis.samples import UNIT_TEXT_CAP

    locomo = data_dir / "locomo/locomo10.json"
    # Every session as one unit ('X said, "..."' a turn, header lines) fits.
    longest = max(sum(len(t["text"]) + len(t["speaker"]) + 10 for t in v) for c in json.loads(locomo.read_text())
                  for k, v in c["conversation"].items() if k.startswith("session_") and isinstance(v, list))
    assert 6000 < longest and longest + 200 < UNIT_TEXT_CAP
    long = "x" * (UNIT_TEXT_CAP + 1234)
    q, units, ranked, _ = _frames()
    units = units.with_columns(pl.when(pl.col("unit_id") == "c/u1").then(pl.lit(long)).otherwise(pl.col("text")).alias("text"))
    d = sample_data(q, ranked, units)
    u1 = next(u for u in d["units"] if u["id"] == "c/u1" and u["variant"] == "no-render")
    assert d["texts"][u1["t"]] == "x" * UNIT_TEXT_CAP + "\n[… 1,234 more characters not kept in this page]"


def _cut_frames():
    """One question whose evidence turn (D1:3) sits in a no-render unit the ranking left out,
    on a line past MiniLM's cut; memshot finds it."""
    from vismem.memory.dialogue.text import unit_text
    from vismem.env.dialogue.model import Session, Turn

    turns = [Turn(speaker=sp, text=t, dia_id=f"D1:{i + 1}") for i, (sp, t) in
             enumerate([("Caroline", "Hi!"), ("Melanie", "I went to a pottery class " * 30), ("Caroline", "It was in Paris.")])]
    text = unit_text(Session(session_id="session_1", index=1, date_text="8 May 2023", date=None, turns=tuple(turns)), turns)
    cut = text.index("Caroline said, \"It was") - 40
    q = pl.DataFrame({"conversation_id": ["c"], "question_id": ["c:q0"], "question": ["Where was it?"],
                      "answer": ["Paris"], "category": ["single-hop"], "evidence": [["D1:3"]]})
    units = pl.DataFrame({"variant": ["no-render", "no-render", "memshot"], "conversation_id": ["c"] * 3,
                          "unit_id": ["c/u0", "c/u1", "c/u1"], "dia_ids": [["D1:0"], ["D1:1", "D1:2", "D1:3"], ["D1:1", "D1:2", "D1:3"]],
                          "text": ["Caroline said, \"Bye\"", text, text], "key": [None, None, "shot"],
                          "embedded": ["text", "text", "ocr"], "embedded_chars": [None, cut, None]},
                         schema_overrides={"embedded_chars": pl.Int64, "key": pl.String})
    ranked = pl.DataFrame({"variant": ["no-render", "memshot"], "question_id": ["c:q0"] * 2, "rank": [1, 1],
                           "unit_id": ["c/u0", "c/u1"], "score": [0.5, 0.4]})
    recall = pl.DataFrame({"variant": ["no-render", "memshot"], "question_id": ["c:q0"] * 2, "k": [1, 1],
                           "recall": [0.0, 1.0], "hit": [False, True]})
    return q, units, ranked, recall, text, cut


def test_turn_spans_and_the_evidence_a_ranking_left_out():
    from vismem.analysis.samples import turn_spans

    q, units, ranked, recall, text, cut = _cut_frames()
    spans = turn_spans(text, 3)
    assert [text[a:b] for a, b in spans] == text.split("CONVERSATION:\n")[1].splitlines()
    assert spans[2][0] > cut > spans[1][0]
    assert turn_spans(text, 4) is None and turn_spans("no header", 1) is None
    d = sample_data(q, ranked, units, recall=recall)
    qv = d["questions"][0]["v"]
    missed = [d["units"][i] for i in qv["no-render"]["evu"]]
    assert [(u["variant"], u["id"]) for u in missed] == [("no-render", "c/u1")] and missed[0]["spans"] == spans
    assert "evu" not in qv["memshot"] and qv["memshot"]["first"] == 1
    assert "spans" not in d["units"][0]  # no cut: nothing to place


def test_a_miss_shows_the_evidence_unit_and_the_cut_that_dropped_it(page, tmp_path):
    from vismem.analysis.samples import sample_viewer

    q, units, ranked, recall, text, cut = _cut_frames()
    path = tmp_path / "samples.html"
    path.write_text(sample_viewer(q, ranked, units, shots={}, recall=recall, run_id="cut"))
    _open(page, path, "k=1")
    d = page.locator("#detail")
    assert d.locator('#compare tr[data-variant="no-render"] .cmp-first').text_content() == "not in top 1"
    assert d.locator('#compare tr[data-variant="no-render"] .cmp-cut').count() == 1
    assert d.locator('#compare tr[data-variant="memshot"] .cmp-cut').count() == 0  # memshot reads the shot whole
    col = d.locator('.col[data-variant="no-render"]')
    assert col.locator("h4.missed").text_content() == "Evidence the top 1 missed"
    card = col.locator('.unit[data-unit="c/u1"]')
    assert "not in the top 1" in card.locator("b").first.text_content()
    assert card.locator(".evcut").text_content() == "evidence D1:3 lies past the embedder's cut: never embedded"
    assert card.locator("pre.embedded .kept").text_content() == text[:cut]
    # The evidence turn's line is marked in the text, here in the part the embedder dropped.
    line = next(x for x in text.splitlines() if x.startswith('Caroline said, "It was in Paris'))
    assert card.locator("pre.embedded .dropped mark.ev-turn").all_text_contents() == [line]
    assert card.locator("pre.embedded .kept mark").count() == 0
    assert card.locator("pre.embedded").text_content() == text  # marking adds no characters
    assert d.locator('.col[data-variant="memshot"] h4.missed').count() == 0
    # A shot the pixel reader read whose text the OCR cache does not hold: said, not shown empty.
    assert d.locator('.col[data-variant="memshot"] .ocr-missing').count() == 1
    assert d.locator('.col[data-variant="memshot"] details.ocr').count() == 0


def _far_ranks() -> pl.DataFrame:
    """The memshot stage's evidence ranks for _cut_frames: no-render's evidence unit ranked 2nd of 2
    (below the kept top 1); memshot's at rank 1."""
    return pl.DataFrame({"variant": ["no-render", "memshot"], "conversation_id": ["c", "c"], "question_id": ["c:q0"] * 2,
                         "evidence_rank": [2, 1], "evidence_unit": ["c/u1", "c/u1"], "evidence_score": [0.31234, 0.4],
                         "n_units": [2, 1]})


def test_a_miss_says_where_its_evidence_ranked_below_the_top_k(page, tmp_path):
    """With the run's evidence ranks, a miss's first evidence rank is a number (rank 2 of 2, below
    the top 1), not only "not in top 1", and the missed unit's card carries that rank and score."""
    from vismem.analysis.samples import sample_viewer

    q, units, ranked, recall, text, cut = _cut_frames()
    d = sample_data(q, ranked, units, recall=recall, evidence_ranks=_far_ranks())
    qv = d["questions"][0]["v"]
    idx = next(i for i, u in enumerate(d["units"]) if (u["variant"], u["id"]) == ("no-render", "c/u1"))
    assert qv["no-render"]["far"] == [2, idx, 0.3123, 2] and qv["no-render"]["evu"][0] == idx
    assert "far" not in qv["memshot"]  # found in its top k: its kept ranking says where
    path = tmp_path / "samples.html"
    path.write_text(sample_viewer(q, ranked, units, shots={}, recall=recall, evidence_ranks=_far_ranks(), run_id="far"))
    _open(page, path, "k=1")
    det = page.locator("#detail")
    assert det.locator('#compare tr[data-variant="no-render"] .cmp-first').text_content() == "rank 2 of 2 (below the top 1)"
    assert det.locator('#compare tr[data-variant="memshot"] .cmp-first').text_content() == "rank 1"
    assert det.locator('.col[data-variant="no-render"] h4').first.text_content().endswith("first evidence: rank 2 of 2 (below the top 1)")
    card = det.locator('.col[data-variant="no-render"] .missed-box .unit[data-unit="c/u1"]')
    assert card.locator("b").first.text_content() == "#2 c/u1" and "score 0.3123" in card.text_content()


def test_truncation_matches_the_embedders_own_tokenizer():
    """The cut the viewer marks is where sentence-transformers' truncation ends MiniLM's input;
    without the tokenizer the estimated cut is never before it."""
    from transformers import AutoTokenizer

    from vismem.pipelines.report.samples import Truncation, minilm_truncation
    from vismem.serve.embedders.minilm import packaged_model_path

    tr = minilm_truncation(None)
    assert tr.exact and tr.max_tokens == 256
    long = " ".join(f"Caroline said: the pottery-class #{i} (in Stockholm) was unbelievably wonderful!" for i in range(60))
    short = "Melanie: I ran a charity race."
    cut_long, cut_short = tr.cut([long, short])
    assert cut_short is None and 0 < cut_long < len(long)
    hf = AutoTokenizer.from_pretrained(packaged_model_path())
    full = hf(long, truncation=True, max_length=256)["input_ids"]
    assert len(full) == 256 and hf(long[:cut_long])["input_ids"] == full  # exactly the embedded pieces
    assert len(hf(long[:cut_long + 12])["input_ids"]) > 256
    est = Truncation(256).cut([long, short])
    assert est[1] is None and est[0] >= cut_long and not Truncation(256).exact


def _png(i: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40 + i, 30), (10 * i, 80, 120)).save(buf, format="PNG")
    return buf.getvalue()


def test_sample_page_writes_shots_beside_it_and_reads_the_ocr_cache(file_store):
    """A run in a store: memshot shots in a session pack read by the pixel reader (texts in the OCR
    cache), no-render text units embedded by MiniLM (one past its limit): the page refers to the
    shots as files under report/samples/, shows the cached OCR text and marks MiniLM's cut."""
    from vismem.core.blobref import make_ref
    from vismem.memory.dialogue.pixels import cache_key
    from vismem.pipelines.config import load_config
    from vismem.pipelines.report.samples import sample_page, shot_file
    from vismem.serve.embedders.ocr import reader_ocr_key

    ocr = {"name": "ocr-minilm", "args": {"ocr": {"name": "rapidocr-lines", "args": {"threads": 1}}}}
    cfg = load_config(overrides={"name": "sv", "memshot": {"dataset_path": "/nonexistent/locomo.json",
                                                           "text_embedder": {"name": "minilm"}, "image_embedder": ocr}})
    run = "sv-1"
    shots = [_png(1), _png(2)]
    pack = f"runs/{run}/memshot/locomo/memshot/shots/c/s1.pack"
    file_store.put_bytes(pack, shots[0] + shots[1])
    refs = [make_ref(pack, 0, len(shots[0])), make_ref(pack, len(shots[0]), len(shots[1]))]
    long = " ".join(["the pottery class in Stockholm was wonderful"] * 80)
    for v, keys in (("memshot", refs), ("no-render", [None, None])):
        file_store.write_table(f"runs/{run}/memshot/locomo/{v}/units.parquet", pl.DataFrame(
            {"variant": [v] * 2, "unit_id": ["c/u0", "c/u1"], "dia_ids": [["D1:1"], ["D1:2"]],
             "text": ["A: hi", long], "key": keys}, schema_overrides={"key": pl.String}))
    key = reader_ocr_key(ocr)
    file_store.put_bytes(cache_key(key, shots[1]), b"what the reader read <b>")  # u0's shot was never read
    file_store.write_table(f"runs/{run}/memshot/ranked.parquet", pl.DataFrame(
        {"variant": ["memshot", "memshot", "no-render", "no-render"], "question_id": ["c:q0"] * 4, "rank": [1, 2, 1, 2],
         "unit_id": ["c/u1", "c/u0", "c/u1", "c/u0"], "score": [0.5, 0.4, 0.3, 0.2]}))
    recall = pl.DataFrame({"conversation_id": ["c"] * 2, "question_id": ["c:q0"] * 2, "variant": ["memshot", "no-render"],
                           "k": [2, 2], "recall": [1.0, 1.0], "hit": [True, True], "category": ["single-hop"] * 2,
                           "embedder": ["ocr-minilm (stand-in)", "minilm"]})
    page = sample_page(file_store, run, {"memshot_recall": recall}, {"config": cfg.model_dump(mode="json")})
    data = page_data(page)
    imgs = json.loads(re.search(r'id="simg">(.*?)</script>', page, re.S)[1])
    assert sorted(imgs.values()) == sorted(f"samples/{shot_file(s)}" for s in shots)  # files, not data URIs
    for s in shots:
        assert file_store.get_bytes(f"runs/{run}/report/samples/{shot_file(s)}") == s
    assert "data:image" not in page and len(page) < 40_000  # the page holds no image bytes
    by = {(u["variant"], u["id"]): u for u in data["units"]}
    assert data["texts"][by["memshot", "c/u1"]["ocr"]] == "what the reader read <b>"
    assert "ocr" not in by["memshot", "c/u0"] and by["memshot", "c/u0"]["emb"] == "ocr"  # not in the cache: said so
    assert by["no-render", "c/u1"]["emb"] == "text" and 0 < by["no-render", "c/u1"]["cut"] < len(long)
    assert "cut" not in by["no-render", "c/u0"]
    assert data["vinfo"]["no-render"] == {"embedder": "minilm", "limit": "embeds the first 256 word pieces"}
    assert data["vinfo"]["memshot"]["limit"] == "embeds the first 256 word pieces"


# -- in Chromium -------------------------------------------------------------------------------------

HOSTILE = ["<!--<script", "</script><script>window.pwned = 1</script>", "a & b &amp; <img src=x onerror=window.pwned=2>"]
HOSTILE_ID = 'conv-0:q3"><img src=x onerror=window.pwned=4>&amp;#\'x'


def _hostile_run():
    run = synthetic_run(seed=3, **SMALL)
    qs = run["questions"]
    run["questions"] = qs.with_columns(
        pl.when(pl.int_range(pl.len()) < 3).then(pl.lit("Q ") + pl.Series(HOSTILE * (qs.height // 3 + 1))[: qs.height])
        .otherwise(pl.col("question")).alias("question"),
        pl.when(pl.int_range(pl.len()) == 1).then(pl.lit(HOSTILE[1])).otherwise(pl.col("answer")).alias("answer"))
    u = run["units"]
    run["units"] = u.with_columns(pl.when(pl.col("ocr_text").is_not_null()).then(pl.lit(HOSTILE[0] + " read ") + pl.col("ocr_text"))
                                  .otherwise(pl.col("ocr_text")).alias("ocr_text"),
                                  (pl.lit(HOSTILE[2] + "\n") + pl.col("text")).alias("text"))
    rename = pl.col("question_id").replace({qs["question_id"][3]: HOSTILE_ID})  # a hostile id: attribute, selector, hash
    for name in ("questions", "ranked", "recall", "answers"):
        run[name] = run[name].with_columns(rename)
    return run


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    root = tmp_path_factory.mktemp("samples")
    run = _hostile_run()
    return write_viewer(root, run, distinct_shots=100), run  # one file per shot key


@pytest.fixture(scope="module")
def browser(chromium_path):
    """One Chromium for the module (a launch is seconds); each test gets a fresh context."""
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM_ARGS

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1300, "height": 800})  # no storage shared between tests
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    assert pg.evaluate("window.pwned") is None and pg.errors == []
    context.close()


def _open(page, path: Path, hash_: str = ""):
    page.goto(path.as_uri() + ("#" + hash_ if hash_ else ""), wait_until="load")
    page.wait_for_selector("body[data-ready]")


def _keys(page) -> list[str]:
    return page.locator(".question-item").evaluate_all("els => els.map(e => e.dataset.key)")


def test_compare_filters_category_and_conversation(viewer, page):
    path, run = viewer
    def outcome(k, v, hit):
        rec = run["recall"].filter((pl.col("k") == k) & (pl.col("variant") == v))
        return set(rec.filter(pl.col("hit") == hit)["question_id"])

    variants = sorted(run["ranked"]["variant"].unique())
    a, b = next((a, b) for a in variants for b in variants if outcome(10, a, True) & outcome(10, b, False))
    _open(page, path)
    assert len(_keys(page)) == SMALL["questions"]
    page.select_option("#f-a", a)
    page.select_option("#f-b", b)
    assert set(_keys(page)) == outcome(10, a, True) & outcome(10, b, False)  # evidence retrieved by a, missed by b
    assert f"a={a}" in page.url and f"b={b}" in page.url
    # With no variant chosen, the list badges A's outcome (all hits here) and the open question
    # compares A and B first.
    assert page.locator(".question-item .badge").evaluate_all("bs => bs.filter(b => /@/.test(b.textContent))"
                                                            ".map(b => b.textContent)") == ["hit@10"] * len(_keys(page))
    page.locator(".question-item").first.click()
    assert page.locator("#compare tr[data-variant]").evaluate_all("rs => rs.map(r => r.dataset.variant)")[:2] == [a, b]
    assert page.locator('#compare tr.focus').get_attribute("data-variant") == a
    assert page.locator(".sbs .col").evaluate_all("cs => cs.map(c => c.dataset.variant)")[:2] == [a, b]
    page.select_option("#f-k", "5")
    assert set(_keys(page)) == outcome(5, a, True) & outcome(5, b, False)
    page.select_option("#f-by", "verdict")  # judged correct in A, wrong in B
    ans = run["answers"].filter(pl.col("k") == 5)
    right = set(ans.filter((pl.col("variant") == a) & pl.col("judge_label"))["question_id"])
    wrong = set(ans.filter((pl.col("variant") == b) & ~pl.col("judge_label"))["question_id"])
    assert set(_keys(page)) == right & wrong
    page.select_option("#f-a", "")
    page.select_option("#f-b", "")
    page.select_option("#f-by", "")
    qs = run["questions"]
    cat = qs["category"][0]
    page.select_option("#f-category", cat)
    assert set(_keys(page)) == set(qs.filter(pl.col("category") == cat)["question_id"])
    page.select_option("#f-conversation", "conv-1")
    assert set(_keys(page)) == set(qs.filter((pl.col("category") == cat) & (pl.col("conversation_id") == "conv-1"))["question_id"])


def test_side_by_side_detail(viewer, page):
    path, run = viewer
    qid = run["questions"]["question_id"][4]
    _open(page, path, "k=5&q=" + quote(qid))
    d = page.locator("#detail")
    assert d.get_attribute("data-q") == qid
    rows = d.locator("#compare tr[data-variant]")
    variants = sorted(run["ranked"]["variant"].unique())
    assert sorted(rows.evaluate_all("els => els.map(e => e.dataset.variant)")) == variants
    ranked = run["ranked"].filter(pl.col("question_id") == qid)
    units = run["units"]
    ev = set(run["questions"].filter(pl.col("question_id") == qid)["evidence"][0])
    for v in variants:
        ids = ranked.filter(pl.col("variant") == v).sort("rank")["unit_id"].to_list()
        dia = [units.filter((pl.col("variant") == v) & (pl.col("unit_id") == u))["dia_ids"][0].to_list() for u in ids]
        first = next((r + 1 for r, x in enumerate(dia) if ev & set(x)), None)
        assert d.locator(f'#compare tr[data-variant="{v}"] .cmp-first').text_content() == (
            f"rank {first}" if first else f"not in top {len(ids)}")
        col = d.locator(f'.col[data-variant="{v}"] > .unit')
        assert col.evaluate_all("els => els.map(e => e.dataset.unit)") == ids[:5]
        pred = run["answers"].filter((pl.col("variant") == v) & (pl.col("question_id") == qid) & (pl.col("k") == 5))
        assert d.locator(f'#compare tr[data-variant="{v}"] .cmp-pred').text_content() == pred["prediction"][0]
    # Text units show the text they embedded, cut where MiniLM's truncation cut it.
    text_unit = d.locator('.col[data-variant="text-rag"] > .unit').first
    assert text_unit.locator("img").count() == text_unit.locator("details.drawn img").count()  # no shot shown open
    uid = text_unit.get_attribute("data-unit")
    full = units.filter((pl.col("variant") == "text-rag") & (pl.col("unit_id") == uid))["text"][0]
    assert text_unit.locator("pre.embedded .kept").text_content() == full[:1100]
    assert text_unit.locator("pre.embedded .dropped").text_content() == full[1100:]
    # A pixel-read shot: its OCR text, behind a summary.
    shot_unit = d.locator('.col[data-variant="memshot"] > .unit').first
    uid = shot_unit.get_attribute("data-unit")
    read = units.filter((pl.col("variant") == "memshot") & (pl.col("unit_id") == uid))["ocr_text"][0]
    shot_unit.locator("details.ocr summary").click()
    assert shot_unit.locator("details.ocr pre").text_content() == read


def test_permalinks_keys_and_scroll_reset(viewer, page):
    path, run = viewer
    qids = run["questions"]["question_id"].to_list()
    _open(page, path, "category=&conversation=conv-0")
    keys = _keys(page)
    assert page.locator("#detail").get_attribute("data-q") == keys[0]
    page.locator(f'.question-item[data-key="{keys[2]}"]').click()
    assert "q=" + quote(keys[2]) in page.url and "conversation=conv-0" in page.url  # the hash: question and filters
    link = page.locator("#detail a.permalink").get_attribute("href")
    assert "q=" + quote(keys[2]) in link and "conversation=conv-0" in link
    page.locator("#detail").evaluate("d => { d.scrollTop = 400; }")
    page.keyboard.press("j")
    assert page.locator("#detail").get_attribute("data-q") == keys[3]
    assert page.locator("#detail").evaluate("d => d.scrollTop") == 0  # a new question starts at its top
    page.keyboard.press("ArrowDown")
    page.keyboard.press("k")
    assert page.locator("#detail").get_attribute("data-q") == keys[3]
    assert page.locator(".question-item.sel").get_attribute("data-key") == keys[3]
    page.locator("#f-search").focus()
    page.keyboard.press("j")  # typing in a filter is not navigation
    assert page.locator("#detail").get_attribute("data-q") == keys[3]
    # A permalink opens its question in a fresh page, even one the filters hide.
    hidden = next(q for q in qids if q not in keys)
    _open(page, path, "conversation=conv-0&q=" + quote(hidden))
    assert page.locator("#detail").get_attribute("data-q") == hidden and hidden not in _keys(page)


def test_hostile_strings_stay_text(viewer, page):
    path, run = viewer
    qs = run["questions"]
    _open(page, path)
    for i in range(3):
        qid = qs["question_id"][i]
        page.locator(f'.question-item[data-key="{qid}"]').click()
        assert page.locator("#detail #question").text_content() == qs["question"][i]
        assert page.locator(f'.question-item[data-key="{qid}"]').text_content().count(qs["question"][i]) == 1
    assert page.locator("#detail #gold").text_content() == qs["answer"][2]
    page.locator(f'.question-item[data-key="{qs["question_id"][1]}"]').click()
    assert page.locator("#detail #gold").text_content() == HOSTILE[1]
    pre = page.locator('.col[data-variant="no-render"] .unit pre.embedded').first
    assert pre.text_content().startswith(HOSTILE[2] + "\n")
    for block in ("sdata", "simg"):
        assert not set(page.locator(f"#{block}").evaluate("e => e.textContent")) & set("<>&")
    assert HOSTILE_ID in _keys(page)  # a list item's attribute holds the id whole
    _open(page, path, "q=" + quote(HOSTILE_ID, safe=""))
    assert page.locator("#detail").get_attribute("data-q") == HOSTILE_ID
    assert page.locator(".question-item.sel").get_attribute("data-key") == HOSTILE_ID
    assert HOSTILE_ID in page.locator("#detail > p.muted").first.text_content()


def test_images_load_lazily_from_files_beside_the_page(page, tmp_path):
    """Shots are files beside the page with ``loading="lazy"``: a question's shots far below the
    fold are fetched when scrolled to, other questions' shots only when they are opened."""
    run = synthetic_run(seed=1, conversations=1, sessions=6, units_per_session=6, questions=3, top=30, ks=(5, 30))
    path = write_viewer(tmp_path, run, distinct_shots=200)  # one file per shot key
    assert "data:image" not in path.read_text()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url) if r.url.endswith(".png") else None)
    qids = run["questions"]["question_id"].to_list()
    _open(page, path, "k=30&q=" + quote(qids[0]))
    imgs = page.locator("#detail img.shot")
    assert imgs.count() > 30 and imgs.evaluate_all("els => els.every(e => e.loading === 'lazy' && "
                                                   "e.getAttribute('src').startsWith('samples/'))")
    first = page.locator('#detail .col[data-variant="memshot"] img.shot').first
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=first.element_handle())
    last = page.locator('#detail .col[data-variant="memshot"] img.shot').last
    url = last.evaluate("img => img.src")
    assert url not in requested and not last.evaluate("img => img.complete && img.naturalWidth > 0")
    last.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=last.element_handle())
    assert url in requested
    on_screen = set(page.evaluate("() => [...document.querySelectorAll('#detail img')].map(i => i.src)"))
    others = page.evaluate("""q => Object.values(D.questions.find(x => x.id === q).v).flatMap(v => v.ranked.map(([i]) =>
        D.units[i].shot)).filter(k => k && IMG[k]).map(k => new URL(IMG[k], location.href).href)""", qids[1])
    assert others and not (set(others) - on_screen) & set(requested)  # never fetched before its question opens
