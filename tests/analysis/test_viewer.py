"""The static viewers in real headless Chromium from file://: trajectory viewer (sessions, steps,
probe episodes with their memory block) and MemShot sample viewer (a real memshot stage with a
scripted VLM and judge: question, gold, prediction, verdict, F1, shots with evidence marked)."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from urllib.parse import urlencode

import polars as pl
import pytest

from vismem.analysis.schemas import write_results

SLUG = "toy-shopper--0123456789"
NAME = "toy-shopper (stand-in)"
RECALLER = "toy-shopper / toy-recall (stand-in)"

#: JS: is an <img> loaded and not one flat colour (pixel standard deviation over a canvas copy)?
NON_BLANK = """img => { const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
  if (!c.width) return 0; const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data; let s = 0, s2 = 0, n = 0;
  for (let i = 0; i < d.length; i += 16) { const v = d[i] + d[i + 1] + d[i + 2]; s += v; s2 += v * v; n++; }
  return Math.sqrt(s2 / n - (s / n) ** 2); }"""


def _png(seed: int) -> bytes:
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (512, 512), (200 + seed % 50, 200, 190))
    d = ImageDraw.Draw(im)
    d.rectangle((60 + seed * 7 % 100, 200, 300, 420), fill=(120, 60, 30))
    d.ellipse((360, 380, 440, 460), fill=(220, 40, 40))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def _write_trajectories(store, run_id: str) -> dict[str, str]:
    """Two chains x two sessions of three steps (one product page each), the encoding table,
    and probes with step logs in the probe cache. Returns product hash -> blob key."""
    from vismem.pipelines.dmv.probecache import ProbeCache
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    cache = TrajectoryCache(store, SLUG)
    enc_rows, products = [], {}
    for seed in (0, 1):
        for j in (0, 1):
            h = f"{seed}{j}abcdef"
            key = cache.put_blob(_png(seed * 2 + j))
            products[h] = key
            steps = pl.DataFrame({
                "backend": [SLUG] * 3, "seed": [seed] * 3, "j": [j] * 3, "category": ["rug"] * 3, "n_steps": [3] * 3,
                "step": [1, 2, 3], "url": ["/category/rug", f"/product/{h}", "/collection/rug-x"],
                "title": ["Rugs", f"Rug {h}", "Rugs x"], "url_hash": [None, h, None], "image_key": [None, key, None],
                "status": ["ok", "ok", "invalid"], "action_type": ["navigate", "navigate", "invalid"],
                "action_arg": ["/x", "/y", None], "action_text": ['navigate("/x")', 'navigate("/y")', None],
                "thought": ["look around", f"saw {h}", None], "reply": ["r1", "r2", "garbled"],
                "error": [None, None, "no valid action"], "valid": [True, True, False]})
            store.write_table(cache.steps_key(seed, j), steps, schema_version=1)
            store.write_table(cache.timing_key(seed, j), pl.DataFrame({"step": [1, 2, 3], "latency_s": [0.1] * 3}),
                              schema_version=1)
            store.put_json(cache.done_key(seed, j), {"seed": seed, "j": j})
            enc_rows.append({"backend": SLUG, "seed": seed, "j": j + 1, "steps": 3, "distinct_products": 1,
                             "styles": 1, "backend_name": NAME})
    write_results(store, f"runs/{run_id}", "encoding", pl.DataFrame(enc_rows))
    prow = []
    for seed in (0, 1):
        target = f"{seed}0abcdef"
        log_steps = [{"step": 1, "url": "/", "status": "ok", "action_type": "navigate", "action_arg": f"/product/{target}",
                      "reply": "Thought: memory (1)\nAction: navigate", "error": None, "recalled": [target, f"{seed}1abcdef"],
                      "n_images": 2, "memory_text": f"MEMORY seed {seed}: (1) /product/{target} a rug with a red ball"}]
        row = {"probe_id": "s1_r1_p00", "at_session": 1, "target_session": 0, "reach": 1, "target_hash": target,
               "cue_color": "red", "cue_object": "ball", "cue": "red ball", "target_url": f"/product/{target}",
               "final_url": f"/product/{target}" if seed == 0 else "/product/ffffffff", "correct": seed == 0, "steps": 1,
               "vlm_calls": 1, "failure": None if seed == 0 else "wrong_product", "terminated_by": "done",
               "bank_size": 2, "encoding_position": 0, "log": log_steps,
               "scores": [[{"visual": 0.91, "verbal": 0.5, "fused": 0.8}, {"visual": 0.2, "verbal": None, "fused": 0.1}]]}
        ProbeCache(store, SLUG, seed, "dualmem--abc").write("ex", 1, [row], meta={})
        prow.append({"backend": RECALLER, "seed": seed, "J": 2, "architecture": "dualmem", "probe_id": "s1_r1_p00",
                     "visit_session": 1, "recall_session": 2, "reach": 1, "bank_size": 2, "encoding_position": 0,
                     "target_url": row["target_url"], "final_url": row["final_url"], "correct": row["correct"],
                     "steps": 1, "study": "main", "variant": "default", "target_cue": "red ball",
                     "failure": row["failure"], "chain_slug": SLUG, "arch_key": "dualmem--abc"})
    write_results(store, f"runs/{run_id}", "probes", pl.DataFrame(prow))
    from vismem.pipelines.dmv.protocol import BANK_ENTRIES_KEY

    entries = [{"backend": SLUG, "seed": seed, "architecture": "dualmem", "slug": f"{seed}{j}abcdef", "session": j + 1,
                "position": j, "image_key": products[f"{seed}{j}abcdef"], "encode_text": "a rug",
                "caption": f"caption {seed}{j}", "written": f'Memory (product page /product/{seed}{j}abcdef): "caption {seed}{j}"',
                "images": 1} for seed in (0, 1) for j in (0, 1)]
    store.write_table(f"runs/{run_id}/{BANK_ENTRIES_KEY}", pl.DataFrame(entries), schema_version=1)
    return products


def _browser(chromium_path):
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM_ARGS

    pw = sync_playwright().start()
    return pw, pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def browser(chromium_path):
    """One Chromium for the module's three page tests (a launch each cost more than their pages);
    each test opens its own context, so no storage or page state passes between them."""
    pw, chromium = _browser(chromium_path)
    yield chromium
    chromium.close()
    pw.stop()


def test_trajectory_viewer_from_file_url(file_store, browser, tmp_path):
    from vismem.pipelines.report.viewers import copy_report, write_viewers

    _write_trajectories(file_store, "tv-1")
    written, errors = write_viewers(file_store, "tv-1")
    assert errors == {} and written == {"trajectories": "trajectories.html"}  # no MemShot ranking: no samples page
    index_dir = copy_report(file_store, "tv-1", tmp_path / "out").parent
    url = (index_dir / "trajectories.html").as_uri()
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        errs: list[str] = []
        page.on("pageerror", lambda e: errs.append(str(e)))
        page.goto(url, wait_until="load")
        page.wait_for_selector("body[data-ready]")
        items = page.locator(".session-item")
        assert items.count() == 4  # every session of the run's encoding table
        assert page.locator(".group").all_text_contents() == [f"Chain: {NAME} · seed 0", f"Chain: {NAME} · seed 1"]
        items.nth(3).click()
        assert "seed 1 · session 2" in page.locator("#detail h2").text_content()
        steps = page.locator("#detail .step")
        assert steps.count() == 3
        assert "invalid" in steps.nth(2).text_content() and "no valid action" in steps.nth(2).text_content()
        obs = page.locator("#detail .step img.obs")
        assert obs.count() == 1
        # Images are files beside the page (relative URLs), loaded lazily, not inlined.
        src = obs.first.get_attribute("src")
        assert src.startswith("img/") and (index_dir / src).is_file() and obs.first.get_attribute("loading") == "lazy"
        obs.first.scroll_into_view_if_needed()
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=obs.first.element_handle())
        assert "data:image" not in (index_dir / "trajectories.html").read_text()
        assert "/product/11abcdef" in steps.nth(1).text_content() and "saw 11abcdef" in steps.nth(1).text_content()
        # Filters: back-end, seed, session; the probe tab with architecture and outcome.
        page.select_option("#f-seed", "0")
        assert page.locator(".session-item").count() == 2
        page.goto(url + "#tab=probes&architecture=dualmem&outcome=failure", wait_until="load")
        page.reload(wait_until="load")
        page.wait_for_selector("body[data-ready]")
        assert page.locator(".probe-item").count() == 1
        page.locator(".probe-item").first.click()
        detail = page.locator("#detail")
        page.wait_for_selector("#detail table.side")
        assert "MEMORY seed 1: (1) /product/10abcdef" in detail.locator("pre.memory").first.text_content()
        assert "/product/ffffffff" in detail.text_content() and "wrong_product" in detail.text_content()
        recalled = detail.locator(".recalled img")
        assert recalled.count() == 2 and all((index_dir / recalled.nth(i).get_attribute("src")).is_file() for i in range(2))
        assert detail.locator(".recalled figure.hit").count() == 1  # the target is marked
        # Per-channel scores of each recalled item, and what the architecture wrote about the target.
        assert detail.locator(".recalled .scores").all_text_contents() == [
            "visual 0.910 · verbal 0.500 · fused 0.800", "visual 0.200 · verbal — · fused 0.100"]
        # ... and the target's, in the side-by-side table's row of each architecture.
        assert detail.locator('table.side tr[data-arch="dualmem"] .target-scores').text_content() == (
            "target: visual 0.910 · verbal 0.500 · fused 0.800")
        wrote = detail.locator('table.side tr[data-arch="dualmem"] td.wrote').text_content()
        assert "session 1, entry 1" in wrote and 'Memory (product page /product/10abcdef): "caption 10"' in wrote
        # The probe links to the encoding step where its target was seen (session 1, step 2).
        detail.locator("a.enc-link").click()
        page.wait_for_selector("#detail .step.focus")
        assert "seed 1 · session 1" in page.locator("#detail h2").text_content()
        assert page.locator("#detail .step.focus").get_attribute("data-step") == "2"
        assert "/product/10abcdef" in page.locator("#detail .step.focus").text_content()
        # A report row's link (the readable back-end name the report shows) filters to its probes.
        shown = f"{NAME} / toy-recall (stand-in)"
        page.goto(url + "#" + urlencode({"backend": shown, "architecture": "dualmem", "J": 2}), wait_until="load")
        page.reload(wait_until="load")
        page.wait_for_selector("body[data-ready]")
        assert page.locator(".probe-item").count() == 2
        assert errs == []
    finally:
        ctx.close()


@pytest.mark.usefixtures("ray_local")
def test_sample_viewer_after_a_memshot_run_with_a_scripted_vlm(file_store, browser, tmp_path, locomo_cut):
    """Real memshot stage (render, MiniLM retrieval, scripted answers and judge), then the report
    stage: the sample viewer shows a question's gold answer, prediction, verdict, F1 and a shot."""
    from vismem.pipelines.config import load_config
    from vismem.pipelines.context import RunContext
    from vismem.pipelines.manifest import Manifest
    from vismem.pipelines.memshot import stage as memshot
    from vismem.pipelines.report import stage as report

    cfg = load_config(overrides={
        "name": "samples-test", "stages": ["memshot", "report"], "report": {"n_resamples": 200},
        "memshot": {"dataset": "locomo", "dataset_path": str(locomo_cut), "conversations": 1,
                    "variants": ["memshot", "no-render"], "k": [3],
                    "embed_on_ray": False, "max_questions": 4,
                    # No pixel reader and no memories (the local preset's OCR of every shot): the
                    # no-render units borrow the shots memshot renders, which is what is checked.
                    "image_embedder": None, "memories": [],
                    "vlm": {"name": "scripted", "args": {"replies": ["7 May 2023", "a painting"]}},
                    "judge": {"name": "scripted", "args": {"replies": ['{"label": "CORRECT"}', '{"label": "WRONG"}']}}}})
    manifest = Manifest(file_store, cfg.run_id)
    manifest.begin(cfg, seeds={"root": cfg.seed})
    ctx = RunContext(config=cfg, store=file_store, run_dir=tmp_path, manifest=manifest,
                     logger=logging.getLogger("vismem.test"))
    memshot.run(ctx)
    summary = report.run(ctx)
    assert set(summary["viewers"]) == {"samples"}, summary.get("viewer_errors")
    ans = file_store.read_table(f"runs/{cfg.run_id}/results/memshot_answers.parquet")
    q = ans.filter(pl.col("variant") == "no-render").sort("question_id").row(0, named=True)
    html_path = Path(summary["viewers"]["samples"][len("file://"):])
    index_html = Path(summary["html"][len("file://"):]).read_text()
    assert 'href="samples.html#variant=no-render&amp;k=3"' in index_html  # report rows link to the viewer
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        errs: list[str] = []
        page.on("pageerror", lambda e: errs.append(str(e)))
        page.goto(html_path.as_uri() + "#variant=no-render&k=3", wait_until="load")
        page.wait_for_selector("body[data-ready]")
        all_ranked = file_store.read_table(f"runs/{cfg.run_id}/memshot/ranked.parquet")
        # Every ranked question is listed (answers exist only for memshot.max_questions of them).
        assert page.locator(".question-item").count() == all_ranked.filter(
            pl.col("variant") == "no-render")["question_id"].n_unique()
        # Questions without evidence turns are listed but not scored for recall (as in the report).
        no_ev = page.locator(".question-item .no-evidence").count()
        scored = page.locator(".question-item").count() - no_ev
        assert f"of {scored} scored" in page.locator("#count").text_content()
        page.select_option("#f-outcome", "miss")
        assert page.locator(".question-item .no-evidence").count() == 0
        page.select_option("#f-outcome", "correct")
        assert page.locator(".question-item").count() == ans.filter(
            (pl.col("variant") == "no-render") & pl.col("judge_label").fill_null(False)).height
        page.select_option("#f-outcome", "")
        page.locator(f'.question-item[data-key="{q["question_id"]}"]').click()
        d = page.locator("#detail")
        assert d.locator("#question").text_content() == q["question"]
        assert d.locator("#gold").text_content() == str(q["answer"])
        a = d.locator('.answer[data-k="3"]')
        assert a.locator(".prediction").text_content() == q["prediction"]
        assert ("CORRECT" if q["judge_label"] else "WRONG") in a.text_content()
        assert f"F1 {q['f1']:.3f}" in a.text_content()
        units = d.locator('.col[data-variant="no-render"] > .unit')  # the top k (not the evidence it missed)
        assert units.count() == 3
        assert units.first.locator("pre.embedded").count() == 1  # a text unit shows the text it embedded
        # ... and, on opening, the shot memshot rendered for it: a file beside the page, loaded.
        units.first.locator("details.drawn summary").click()
        shot = units.first.locator("img.shot")
        assert shot.get_attribute("src").startswith("samples/") and shot.get_attribute("loading") == "lazy"
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=shot.element_handle())
        ranked = all_ranked.filter(
            (pl.col("variant") == "no-render") & (pl.col("question_id") == q["question_id"])).sort("rank")
        assert [units.nth(i).get_attribute("data-unit") for i in range(3)] == ranked["unit_id"].to_list()[:3]
        # Evidence turns are marked on the units that hold them.
        ev_units = d.locator(".unit.evidence")
        assert ev_units.count() == d.locator(".unit .badge.ok").count()
        # The stage recorded where each question's first evidence unit ranked in the whole ranking:
        # it agrees with the kept top k, and a miss's page says the rank below it.
        er = file_store.read_table(f"runs/{cfg.run_id}/memshot/evidence_ranks/text_embedder.parquet")
        nr = er.filter(pl.col("variant") == "no-render")
        top = all_ranked.filter(pl.col("variant") == "no-render")
        assert set(nr["question_id"]) <= set(top["question_id"]) and nr.height > 0
        rec = file_store.read_table(f"runs/{cfg.run_id}/results/memshot_recall.parquet").filter(
            (pl.col("variant") == "no-render") & (pl.col("k") == 3))
        hits = dict(rec.select("question_id", "hit").iter_rows())
        assert all(hits[r["question_id"]] == (r["evidence_rank"] is not None and r["evidence_rank"] <= 3)
                   for r in nr.iter_rows(named=True))
        far = nr.filter(pl.col("evidence_rank") > 3).sort("question_id").row(0, named=True)
        page.goto(html_path.as_uri() + "#variant=no-render&k=3&q=" + far["question_id"], wait_until="load")
        page.reload(wait_until="load")
        page.wait_for_selector("body[data-ready]")
        assert d.locator('#compare tr[data-variant="no-render"] .cmp-first').text_content() == (
            f"rank {far['evidence_rank']} of {far['n_units']} (below the top 3)")
        card = d.locator(f'.col[data-variant="no-render"] .missed-box .unit[data-unit="{far["evidence_unit"]}"]')
        assert card.locator("b").first.text_content() == f"#{far['evidence_rank']} {far['evidence_unit']}"
        assert errs == []
    finally:
        ctx.close()


def test_sample_data_marks_evidence_and_falls_back_to_retrieval_only():
    from vismem.analysis.samples import sample_data

    q = pl.DataFrame({"conversation_id": ["c"], "question_id": ["c:q0"], "question": ["Where?"], "answer": ["Paris"],
                      "category": ["single-hop"], "evidence": [["D1:2"]]})
    units = pl.DataFrame({"variant": ["memshot", "no-render", "no-render"], "unit_id": ["c/s1/u0", "c/s1/u0", "c/s1/u1"],
                          "dia_ids": [["D1:1", "D1:2"], ["D1:1", "D1:2"], ["D1:3"]], "text": ["a", "a", "b"],
                          "key": ["shots/u0.png", None, None]})
    ranked = pl.DataFrame({"variant": ["no-render", "no-render"], "question_id": ["c:q0", "c:q0"], "rank": [1, 2],
                           "unit_id": ["c/s1/u1", "c/s1/u0"], "score": [0.9, 0.8]})
    d = sample_data(q, ranked, units)
    v = d["questions"][0]["v"]["no-render"]
    first, second = (d["units"][i] for i, _ in v["ranked"])
    assert first["id"] == "c/s1/u1" and first["shot"] is None
    assert second["shot"] == "shots/u0.png" and not second["own_shot"]  # borrowed from the memshot render
    assert v["ans"] == {} and d["variants"] == ["no-render"]
    assert json.dumps(d)  # JSON-able


#: Text that ends or re-opens a script element (``<!--<script`` puts the HTML parser into a state
#: where the data block swallows the rest of the page; no "-->" follows, which would end that state)
#: and text that would run if it were markup.
HOSTILE = ["<!--<script", "</script><script>window.pwned = 1</script>", "<!-- a ]]> &amp; &lt;/script&gt;",
           "<script>window.pwned = 2</script>", "<img src=x onerror=window.pwned=3>", "\u2028 \u2029 & < >"]


def test_hostile_text_in_the_data_blocks_is_shown_as_text(browser, tmp_path):
    """Every viewer data block keeps hostile strings as data: the sample viewer lists every question,
    shows each string exactly, and nothing in them runs."""
    from vismem.analysis.samples import sample_viewer
    from vismem.analysis.viewer import trajectory_viewer

    n = len(HOSTILE)
    qids = [f"c:q{i}" for i in range(n)]
    questions = pl.DataFrame({"conversation_id": ["c"] * n, "question_id": qids,
                              "question": [f"Q{i} {h}" for i, h in enumerate(HOSTILE)], "answer": HOSTILE,
                              "category": ["single-hop"] * n, "evidence": [["D1:1"]] * n})
    units = pl.DataFrame({"variant": ["no-render"] * n, "unit_id": [f"c/s1/u{i}" for i in range(n)],
                          "dia_ids": [["D1:1"]] * n, "text": [f"turn {h}" for h in HOSTILE], "key": [None] * n},
                         schema_overrides={"key": pl.Utf8})
    ranked = pl.DataFrame({"variant": ["no-render"] * n, "question_id": qids, "rank": [1] * n,
                           "unit_id": [f"c/s1/u{i}" for i in range(n)], "score": [0.5] * n})
    samples = tmp_path / "samples.html"
    samples.write_text(sample_viewer(questions, ranked, units, shots={}, run_id="hostile"))
    steps = pl.DataFrame({"backend": [SLUG] * n, "seed": [0] * n, "j": [1] * n, "step": list(range(1, n + 1)),
                          "url": [f"/p/{i}" for i in range(n)], "thought": HOSTILE, "reply": HOSTILE})
    traj = tmp_path / "trajectories.html"
    traj.write_text(trajectory_viewer(steps, None, {}, run_id="hostile"))
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        errs: list[str] = []
        page.on("pageerror", lambda e: errs.append(str(e)))
        page.goto(samples.as_uri() + "#variant=no-render&k=1", wait_until="load")
        page.wait_for_selector("body[data-ready]")
        assert page.locator(".question-item").count() == n
        for i, h in enumerate(HOSTILE):
            page.locator(f'.question-item[data-key="{qids[i]}"]').click()
            d = page.locator("#detail")
            assert d.locator("#question").text_content() == f"Q{i} {h}"
            assert d.locator("#gold").text_content() == h
            assert d.locator(".unit pre").first.text_content() == f"turn {h}"
        for block in ("sdata", "simg"):  # the data reads back whole, and holds no markup characters
            raw = page.locator(f"#{block}").evaluate("e => e.textContent")
            assert not set(raw) & set("<>&")
        assert page.evaluate("window.pwned") is None and errs == []
        page.goto(traj.as_uri(), wait_until="load")
        page.wait_for_selector("body[data-ready]")
        thoughts = page.locator("#detail .step p:has(i)")  # each step's "Thought: ..." line, shown as text
        assert [t.text_content() for t in thoughts.all()] == [f"Thought: {h}" for h in HOSTILE]
        assert page.evaluate("window.pwned") is None and errs == []
    finally:
        ctx.close()
