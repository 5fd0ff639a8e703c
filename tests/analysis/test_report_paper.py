"""The report reads like the papers: headline box, TSR bars, paper order and families, paper
columns, stand-ins named from the manifest, CSVs in the page's units, figure layout."""

from __future__ import annotations

import io
import re

import polars as pl
import pytest

from vismem.analysis import synthetic
from vismem.analysis.render import table_csv, to_html, to_markdown
from vismem.analysis.report import ReportOptions, build_report, write_report
from vismem.analysis.schemas import validate

FAST = ReportOptions(n_resamples=200, seed=1)
PAPER_ORDER = ["nomemory", "textonly", "caption", "worldmm-lite", "mma-lite", "m2a-lite", "dualmem"]
REC = "scripted-shopper (stand-in) / scripted-recall (stand-in)"
VARIANT = "alpha=0.5, encoder={enc}, injection={inj}, retrieval={ret}"


def _ablation(backend: str, arch: str, p: float, *, enc: str = "siglip2", inj: str = "image+caption",
              ret: str = "hybrid") -> pl.DataFrame:
    # Same seed for every variant: equal rates give equal outcomes probe by probe.
    return synthetic.probes(backends=(backend,), Js=(5,), chains=3, study="ablation", p={arch: p},
                            variant=VARIANT.format(enc=enc, inj=inj, ret=ret), alpha=0.5)


def _probes(backend: str = "gemini-2.5-flash") -> pl.DataFrame:
    main = synthetic.probes(backends=(backend,), Js=(5,), chains=3)
    abl = [_ablation(backend, "dualmem-vis", 0.75, ret="visual"), _ablation(backend, "dualmem-verb", 0.55, ret="verbal"),
           _ablation(backend, "dualmem-a0.5", 0.7), _ablation(backend, "dualmem-img", 0.7, inj="image"),
           _ablation(backend, "dualmem-cap", 0.7, inj="caption"), _ablation(backend, "dualmem-clip", 0.6, enc="clip")]
    return validate(pl.concat([main, *abl], how="diagonal_relaxed"), "probes")


def _manifest(archs) -> dict:
    """What the replay stage records: each architecture's components with label and stand-in flag."""
    comps = {}
    for a in archs:
        roles = {}
        if a.startswith("dualmem") and a != "dualmem-verb":
            roles["visual"] = {"label": "pocket-clip", "stand_in": True, "kind": "image_embedding", "key": "k1"}
        if a in ("caption", "dualmem", "m2a-lite") or a.startswith("dualmem-"):
            roles["captioner"] = {"label": "catalogue/caption", "stand_in": True, "kind": "caption", "key": "k2"}
        if a in ("textonly", "caption"):
            roles["text"] = {"label": "minilm", "stand_in": False, "kind": "text_embedding", "key": "k3"}
        comps[f"memory.{a}"] = {"name": a, "components": roles}
    return {"run_id": "r", "components": comps, "config": {"seed": 1}}


def _tables(backend: str = "gemini-2.5-flash") -> dict[str, pl.DataFrame]:
    return {"probes": _probes(backend),
            "memshot_recall": validate(synthetic.memshot_recall(variants=("memshot", "text-rag"), ks=(5, 10),
                                                                questions=16), "memshot_recall")}


def _table(rep, tid):
    return next(t for t in rep.tables() if t.id == tid)


# Each report is built once per module and only read by the tests below (its figures, drawn as it is
# built, are most of its cost): one per input the tests share.
@pytest.fixture(scope="module")
def gemini_rep():
    """The Gemini back-end's tables, no manifest."""
    return build_report(_tables(), "h", options=FAST)


@pytest.fixture(scope="module")
def rec_rep():
    """The stand-in recall back-end's tables, no manifest (nothing recorded: no stand-in claimed)."""
    return build_report(_tables(REC), "s", options=FAST)


@pytest.fixture(scope="module")
def rec_manifest_rep():
    """The stand-in recall back-end's tables with the replay stage's component records."""
    tables = _tables(REC)
    return build_report(tables, "s", options=FAST, manifest=_manifest(tables["probes"]["architecture"].unique().to_list()))


def test_headline_box_measures_each_papers_contrast_with_paired_cis_and_paper_numbers(gemini_rep):
    rep = gemini_rep
    assert rep.headline is not None
    t = _table(rep, "headline").df
    dmv = {r["contrast"].split(" (Table")[0]: r for r in t.filter(pl.col("study") == "DMV-Bench").iter_rows(named=True)}
    assert set(dmv) == {"DualMem vs the best other architecture", "DualMem (alpha 0.75) vs the best single channel",
                        "visual-only vs verbal-only retrieval", "DualMem vs the best verbal baseline"}
    top = dmv["DualMem vs the best other architecture"]
    assert (top["A"], top["B"]) == ("dualmem", "m2a-lite")
    # The paper's Table 2 cell (Gemini J=5 DualMem 82.7), its runner-up not stated.
    assert top["paper A"] == pytest.approx(0.827) and top["paper B"] is None and "Gemini 2.5 Flash, J=5" in \
        top["paper setting"]
    vv = dmv["visual-only vs verbal-only retrieval"]
    assert (vv["A"], vv["B"]) == ("dualmem-vis", "dualmem-verb")
    assert vv["paper A − B"] == pytest.approx(0.797 - 0.651)
    verbal = dmv["DualMem vs the best verbal baseline"]
    assert verbal["B"] == "caption"
    for r in t.iter_rows(named=True):
        assert r["A − B"] == pytest.approx(r["A value"] - r["B value"])
        assert r["A − B lo"] <= r["A − B"] <= r["A − B hi"] and r["A lo"] <= r["A value"] <= r["A hi"]
    mem = t.filter((pl.col("study") == "MemShot") & (pl.col("metric") == "evidence recall@k"))
    assert sorted(mem["setting"].to_list()) == ["locomo, k=10", "locomo, k=5"]
    assert set(mem["A"].to_list()) == {"memshot"} and set(mem["B"].to_list()) == {"text-rag"}
    html = to_html(rep)
    # The box sits above the table of contents, a CSV link beside it.
    assert html.index('class="headline"') < html.index("<nav>") < html.index('id="sec-dmv-main"')
    assert 'id="tbl-headline"' in html and 'href="tables/headline.csv"' in html


def test_headline_paper_setting_is_named_for_a_stand_in_back_end(rec_rep):
    rep = rec_rep
    top = _table(rep, "headline").df.filter(pl.col("contrast").str.starts_with("DualMem vs the best other")).row(
        0, named=True)
    assert top["setting"] == f"{REC}, J=5"
    assert top["paper A"] == pytest.approx(0.827) and top["paper setting"] == "Gemini 2.5 Flash, J=5 (Table 2)"


def test_table2_rows_follow_the_paper_with_family_rows_and_a_paper_column(gemini_rep):
    rep = gemini_rep
    t2 = _table(rep, "table2")
    assert t2.df["architecture"].to_list() == [*PAPER_ORDER, "n_r"]
    assert t2.group == "family" and "family" not in t2.shown
    col = "gemini-2.5-flash J=5 paper"
    paper = dict(zip(t2.df["architecture"].to_list(), t2.df[col].to_list()))
    assert paper["dualmem"] == pytest.approx(0.827) and paper["nomemory"] == 0.0 and paper["m2a-lite"] is None
    html = to_html(rep)
    body = html[html.index('id="tbl-table2"'):]
    body = body[:body.index("</table>")]
    heads = re.findall(r'<tr class="group"><th colspan="(\d+)" scope="colgroup">([^<]*)</th></tr>', body)
    assert [h for _, h in heads] == ["Reference baselines (verbal; no visual code)",
                                     "Multimodal external memories (-lite re-implementations)", "DualMem (ours)"]
    assert {int(n) for n, _ in heads} == {len(t2.shown)}
    # Bootstrap and Table 7 rows also in the paper's order.
    assert _table(rep, "bootstrap").df["architecture"].to_list() == PAPER_ORDER
    assert "_Reference baselines" in to_markdown(rep)


def test_tsr_bar_chart_in_paper_order_with_ci_error_bars(gemini_rep):
    from vismem.analysis import dmv, figures

    cells = dmv.tsr_cells(_probes(), n_resamples=200, seed=1)
    fig = figures.tsr_bars(cells)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == PAPER_ORDER
    heights = [p.get_height() for p in ax.patches]
    by = {r["architecture"]: r["tsr"] * 100 for r in cells.iter_rows(named=True)}
    assert heights == pytest.approx([by[a] for a in PAPER_ORDER])
    bars = next(c for c in ax.containers if hasattr(c, "patches"))
    segments = bars.errorbar.lines[2][0].get_segments()  # CI whiskers, one per bar
    assert len(segments) == len(PAPER_ORDER) and any(abs(s[1][1] - s[0][1]) > 0 for s in segments)
    figures.render(fig)
    assert any(f.id == "tsr-bars" for f in gemini_rep.figures())


def test_memshot_tables_in_paper_order_with_families():
    ans = validate(synthetic.memshot_answers(variants={"no-render": 0.5, "memshot": 0.7, "text-rag": 0.6,
                                                       "full-session": 0.6}, questions=8), "memshot_answers")
    rep = build_report({"memshot_answers": ans}, "m", options=FAST)
    loc = _table(rep, "memshot-locomo").df
    assert loc.unique("variant", maintain_order=True)["variant"].to_list() == ["text-rag", "memshot", "full-session",
                                                                                "no-render"]
    abl = _table(rep, "memshot-ablations")
    assert abl.df["variant"].to_list() == ["full-session", "text-rag", "memshot", "no-render"]
    assert abl.group == "block" and abl.df["block"].to_list()[:2] == ["Full Session", "Full Session"]


def test_stand_ins_named_in_every_dmv_table_from_the_manifest(rec_manifest_rep, rec_rep):
    rep = rec_manifest_rep
    for tid in ("table2", "bootstrap", "reach", "ablations", "table4", "permutation", "headline", "leader-bins"):
        cap = _table(rep, tid).caption
        assert "visual encoder pocket-clip (stand-in)" in cap and "catalogue/caption (stand-in)" in cap, (tid, cap)
    ab = _table(rep, "ablations").df
    clip = ab.filter(pl.col("architecture") == "dualmem-clip")["variant"].item()
    assert "encoder=clip (ran: pocket-clip stand-in)" in clip
    assert "encoder=siglip2 (ran: pocket-clip stand-in)" in ab.filter(pl.col("architecture") == "dualmem-img")[
        "variant"].item()
    t4 = _table(rep, "table4").df
    assert "CLIP (ran: pocket-clip stand-in)" in t4["row"].to_list()
    # Rows equal by construction (same retrieval, injection differs) are said to be so.
    cap = _table(rep, "ablations").caption
    assert "Equal probe by probe" in cap and "dualmem-a0.5 = dualmem-img = dualmem-cap" in cap
    assert "dualmem-clip" not in cap.split("Equal probe by probe")[1]  # another rate: not equal
    assert "scripted-recall (stand-in)" in cap and "opens the first recalled item" in cap
    # No manifest record: nothing claimed.
    bare = rec_rep
    assert "stand-in)" not in _table(bare, "ablations").df["variant"].str.join("").item()
    assert "pocket-clip" not in _table(bare, "table2").caption


def test_no_equal_rows_claim_with_a_real_recall_back_end(gemini_rep):
    # gemini_rep is _tables("gemini-2.5-flash"): a real recall back-end
    assert "Equal probe by probe" not in _table(gemini_rep, "ablations").caption


def test_csv_in_the_pages_units_and_linked_beside_every_table(file_store):
    tables = _tables()
    rep = build_report(tables, "c", options=FAST, manifest=_manifest(tables["probes"]["architecture"].unique()))
    keys = write_report(file_store, "runs/c", rep)
    html = file_store.get_bytes("runs/c/report/index.html").decode()
    for t in rep.tables():
        assert f'href="tables/{t.id}.csv"' in html and f"runs/c/report/tables/{t.id}.csv" in keys["tables"]
    t2 = pl.read_csv(io.BytesIO(file_store.get_bytes("runs/c/report/tables/table2.csv")))
    src = _table(rep, "table2").df
    col = "gemini-2.5-flash J=5"
    dual = src.filter(pl.col("architecture") == "dualmem").row(0, named=True)
    got = t2.filter(pl.col("architecture") == "dualmem").row(0, named=True)
    # Percent as the page shows it (x100), interval bounds too; n_r keeps its probe count.
    assert got[col] == pytest.approx(dual[col] * 100, abs=1e-3)
    assert got[f"{col} lo"] == pytest.approx(dual[f"{col} lo"] * 100, abs=1e-3)
    assert t2.filter(pl.col("architecture") == "n_r")[col].item() == src.filter(pl.col("architecture") == "n_r")[
        col].item()
    assert got["family"] == "DualMem (ours)"
    page_cell = re.search(r'<td><a class="row-link"[^>]*>dualmem</a></td><td[^>]*><span class="v">([\d.]+)</span>',
                          html) or re.search(r"<td>dualmem</td><td[^>]*><span class=\"v\">([\d.]+)</span>", html)
    assert page_cell and float(page_cell.group(1)) == pytest.approx(got[col], abs=0.05)
    # Counts and names stay as they are.
    boot = pl.read_csv(io.BytesIO(table_csv(_table(rep, "bootstrap"))))
    assert boot["n_probes"].to_list() == _table(rep, "bootstrap").df["n_probes"].to_list()


def test_figures_2x_legends_outside_integer_reach_ticks_titles_inside():
    from PIL import Image

    from vismem.analysis import dmv, figures

    probes = synthetic.probes(backends=("a very long back-end name (stand-in) / scripted-recall (stand-in)",),
                              Js=(6,), chains=3)
    ret = dmv.retention(validate(probes, "probes"), n_resamples=100, seed=0)
    fig = figures.retention(ret)
    fig.canvas.draw()
    assert fig.legends and all(ax.get_legend() is None for ax in fig.axes)
    ax = fig.axes[0]
    legend_box = fig.legends[0].get_window_extent()
    assert not legend_box.overlaps(ax.get_window_extent())
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    canvas = fig.bbox
    for text in [fig._suptitle, *[a.title for a in fig.axes if a.get_visible()]]:
        box = text.get_window_extent()
        assert box.x0 >= canvas.x0 - 1 and box.x1 <= canvas.x1 + 1 and box.y1 <= canvas.y1 + 1, text.get_text()
    w_in = fig.get_figwidth()
    png, _ = figures.render(fig)
    assert Image.open(io.BytesIO(png)).size[0] == pytest.approx(w_in * figures.DPI, abs=2) and figures.DPI >= 200


def test_equal_rows_whose_paper_encoders_ran_one_stand_in_are_named():
    from vismem.analysis.standins import component_runs, equal_rows_note

    probes = pl.concat([_ablation(REC, "dualmem-a0.5", 0.7).with_columns(pl.lit("siglip2").alias("encoder")),
                        _ablation(REC, "dualmem-clip", 0.7, enc="clip").with_columns(pl.lit("clip").alias("encoder"))])
    runs = component_runs(_manifest(["dualmem-a0.5", "dualmem-clip"]))
    note = equal_rows_note(probes, ["dualmem-a0.5", "dualmem-clip"], runs)
    assert "dualmem-a0.5 = dualmem-clip" in note
    assert "encoder=clip and encoder=siglip2 both ran pocket-clip (stand-in)" in note
    # Different components recorded: equal rows still named, no shared-stand-in claim.
    runs["dualmem-clip"]["visual"] = ("clip-vit-b32", False)
    assert "both ran" not in equal_rows_note(probes, ["dualmem-a0.5", "dualmem-clip"], runs)


def test_figures_shown_at_half_their_pixel_width(gemini_rep):
    import base64

    from PIL import Image

    html = to_html(gemini_rep)
    imgs = re.findall(r'<img src="data:image/png;base64,([^"]+)" width="(\d+)"', html)
    assert len(imgs) >= 3 and html.count("<img ") == len(imgs)
    for data, width in imgs:
        px = Image.open(io.BytesIO(base64.b64decode(data))).size[0]
        assert int(width) == round(px / 2)


#: The paper's retriever and judge as results name them (embedder_label, model_label).
PAPER_EMB, PAPER_JUDGE = "qwen3-vl-embedding:qwen3-vl-embedding-8b", "openai:glm-5"


def _answers(model: str, embedder: str = PAPER_EMB, judge: str = PAPER_JUDGE) -> pl.DataFrame:
    v = {"memshot": 0.7, "text-rag": 0.6, "no-render": 0.55, "no-header": 0.65, "full-session": 0.6}
    df = synthetic.memshot_answers(variants=v, questions=8, model=model)
    return validate(df.with_columns(pl.lit(embedder).alias("embedder"), pl.lit(judge).alias("judge")), "memshot_answers")


def test_memshot_tables_carry_the_papers_numbers_for_its_backbones():
    rep = build_report({"memshot_answers": _answers("qwen3-vl-8b")}, "p", options=FAST)
    loc = _table(rep, "memshot-locomo")
    paper = {(r["variant"], r["k"]): r["paper Overall Acc"] for r in loc.df.iter_rows(named=True)}
    assert paper[("memshot", 10)] == pytest.approx(0.7513) and paper[("text-rag", 10)] == pytest.approx(0.7039)
    assert paper[("memshot", 5)] is None and paper[("no-render", 10)] is None  # Table 1 is top-10, no ablations
    assert "paper Overall Acc" in loc.percent and "quoted, not measured" in loc.caption
    abl = _table(rep, "memshot-ablations").df
    row = {r["variant"]: r for r in abl.iter_rows(named=True)}
    assert row["memshot"]["paper Top-5 Acc"] == pytest.approx(0.7273)
    assert row["text-rag"]["paper Top-10 F1"] == pytest.approx(0.5328)
    assert row["no-header"]["paper Top-5 Acc"] == pytest.approx(0.7071)
    head = _table(rep, "headline").df.filter(pl.col("metric") == "Acc")
    k10 = head.filter(pl.col("setting").str.ends_with("k=10")).row(0, named=True)
    assert (k10["paper A"], k10["paper B"]) == (pytest.approx(0.7513), pytest.approx(0.7039))
    assert k10["paper setting"] == "Qwen3-VL-8B-Instruct, LoCoMo, top-10 (Table 1)"
    k5 = head.filter(pl.col("setting").str.ends_with("k=5")).row(0, named=True)
    assert k5["paper A − B"] == pytest.approx(0.7273 - 0.6786) and "(Table 3)" in k5["paper setting"]
    # A stand-in answering model takes no paper number anywhere; the note says why.
    stand = build_report({"memshot_answers": _answers("tiny-qwen3-vl-8b (stand-in)")}, "p", options=FAST)
    _no_paper_numbers(stand, "answering model tiny-qwen3-vl-8b (stand-in) is not a paper backbone")


def _no_paper_numbers(rep, why: str) -> None:
    """Every paper cell of every MemShot table and of the headline is empty, and each says ``why``."""
    tables = [t for t in rep.tables() if t.id.startswith("memshot")]
    for t in tables:
        for c in t.df.columns:
            if c.startswith("paper ") and c != "paper note":
                assert t.df[c].null_count() == t.df.height, (t.id, c)
        if "paper note" in t.df.columns:
            assert all(why in n for n in t.df["paper note"].to_list()), (t.id, t.df["paper note"].to_list())
    assert any("paper note" in t.df.columns for t in tables)
    head = _table(rep, "headline").df.filter(pl.col("metric") == "Acc")
    assert head.height and head["paper A"].null_count() == head.height
    assert all(s.startswith("none: not the paper's setting") and why in s for s in head["paper setting"].to_list())


def test_a_paper_backbone_run_with_a_stand_in_retriever_or_judge_takes_no_paper_number():
    """75.13 / 56.46 beside an OCR + MiniLM retrieval or a scripted judge would pass off another
    setting's number as this run's (issue: the paper's numbers by model and variant only)."""
    from vismem.analysis.memshot_paper_cols import with_paper_overall

    ocr = build_report({"memshot_answers": _answers("qwen3-vl-8b", embedder="ocr-minilm:rapidocr+all-MiniLM-L6-v2 "
                                                    "(stand-in)", judge="scripted:judge (stand-in)")}, "p", options=FAST)
    _no_paper_numbers(ocr, "retriever ocr-minilm:rapidocr+all-MiniLM-L6-v2 (stand-in), not Qwen3-VL-Embedding-8B; "
                           "judge scripted:judge (stand-in), not GLM-5")
    row = {"dataset": "locomo", "model": "qwen3-vl-8b", "variant": "memshot", "k": 10, "embedder": PAPER_EMB}
    bare = with_paper_overall(pl.DataFrame([row]), "locomo").row(0, named=True)  # no judge column: not shown
    assert bare["paper Overall Acc"] is None and bare["paper note"].endswith("judge not recorded, not GLM-5")
    full = with_paper_overall(pl.DataFrame([{**row, "judge": PAPER_JUDGE}]), "locomo").row(0, named=True)
    assert full["paper Overall Acc"] == pytest.approx(0.7513) and full["paper note"] is None


def test_captions_say_the_setting_and_the_longmemeval_shot_rule():
    from vismem.analysis.memshot_sections import LME_SHOT_RULE, lme_section
    from vismem.memory.dialogue.pack import GROW_LIMIT

    ans = synthetic.memshot_answers(variants={"memshot": 0.7, "no-render": 0.6}, questions=4, conversations=2,
                                    model="qwen3-vl-8b")
    ans = ans.with_columns(pl.lit("minilm").alias("embedder"), pl.lit(PAPER_JUDGE).alias("judge"))
    lme = ans.with_columns(pl.lit("longmemeval").alias("dataset"))
    rep = build_report({"memshot_answers": validate(pl.concat([ans, lme]), "memshot_answers")}, "p", options=FAST)
    for tid in ("memshot-locomo", "memshot-longmemeval", "memshot-ablations"):
        cap = _table(rep, tid).caption
        assert "answering model qwen3-vl-8b; retriever minilm; judge openai:glm-5" in cap, tid
    assert LME_SHOT_RULE in _table(rep, "memshot-longmemeval").caption
    assert LME_SHOT_RULE not in _table(rep, "memshot-locomo").caption
    # the stated bound is the renderer's
    assert f"at most {GROW_LIMIT} x its maximum height" in LME_SHOT_RULE
    sec = lme_section(pl.DataFrame({"variant": ["text-rag"], "corpus": ["turn"], "level": ["turn"], "k": [1],
                                    "recall_any": [1.0], "recall_all": [1.0], "ndcg_any": [1.0], "by_position": [0.0]}))
    assert LME_SHOT_RULE in sec.notes


def test_height_sweep_rows_take_only_their_own_height():
    from vismem.analysis.memshot_paper_cols import with_paper_by_k

    t = pl.DataFrame({"dataset": ["locomo"] * 3, "model": ["qwen3-vl-8b"] * 3, "variant": ["memshot", "memshot", "h512"],
                      "max_height": [512, 768, None], "Top-5 Acc": [0.5, 0.6, 0.7], "embedder": [PAPER_EMB] * 3,
                      "judge": [PAPER_JUDGE] * 3})
    out = with_paper_by_k(t, "Table 5")
    got = out["paper Top-5 Acc"].to_list()
    assert got[0] is None and got[1] == pytest.approx(0.7273) and got[2] == pytest.approx(0.7019)
    assert "max_height 512" in out["paper note"][0] and out["paper note"][1] is None


def test_headline_hit_rate_row_quotes_the_papers_retrieval_gain():
    rec = _tables()["memshot_recall"]
    rep = build_report({"memshot_recall": rec.with_columns(pl.lit(PAPER_EMB).alias("embedder"))}, "h", options=FAST)
    hit = _table(rep, "headline").df.filter(pl.col("metric") == "evidence hit@k")
    by_k = {r["setting"]: r for r in hit.iter_rows(named=True)}
    assert by_k["locomo, k=10"]["paper A − B"] == pytest.approx(0.05) and "Fig. 4a" in by_k["locomo, k=10"][
        "paper setting"]
    assert by_k["locomo, k=5"]["paper A − B"] is None
    # recall rows without the retriever named (or a stand-in's) take no paper difference
    bare = _table(build_report({"memshot_recall": rec}, "h", options=FAST),
                  "headline").df.filter((pl.col("metric") == "evidence hit@k") & pl.col("setting").str.ends_with("k=10"))
    assert bare["paper A − B"][0] is None and "retriever not recorded" in bare["paper setting"][0]


def test_encoding_table_quotes_the_papers_breadth_for_its_back_ends_only():
    enc = validate(synthetic.encoding(backends=("gemini-2.5-flash", "qwen2.5-vl-7b", "scripted-shopper (stand-in)"),
                                      chains=2, J=3), "encoding")
    t = _table(build_report({"encoding": enc}, "e", options=FAST), "encoding")
    got = {r["backend"]: (r["paper sessions"], r["paper products_mean"], r["paper share_styles_ge3"])
           for r in t.df.iter_rows(named=True)}
    assert got == {"gemini-2.5-flash": (550, 11.0, 1.0), "qwen2.5-vl-7b": (550, 4.0, 0.5),
                   "scripted-shopper (stand-in)": (None, None, None)}  # Table 3's N = 550 per back-end
    assert "paper share_styles_ge3" in t.percent and "paper sessions" not in t.percent
    assert "quoted, not measured" in t.caption and "550 sessions per back-end" in t.caption


def test_recorded_labels_are_escaped_and_the_report_stays_self_contained():
    tables = _tables(REC)
    man = _manifest(tables["probes"]["architecture"].unique())
    evil = '<img src=x onerror="alert(1)">'
    for rec in man["components"].values():
        if "visual" in rec["components"]:
            rec["components"]["visual"]["label"] = evil
    rep = build_report(tables, "x", options=FAST, manifest=man)
    assert evil in _table(rep, "table2").caption
    html = to_html(rep)
    assert evil not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    # Self-contained: figures inline, the only relative links are the CSV / SVG files written beside it.
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    hrefs = {h for h in re.findall(r'href="([^"#][^"]*)"', html)}
    assert hrefs and all(h.startswith(("tables/", "figures/")) for h in hrefs), hrefs


def test_in_chromium_headline_first_family_rows_span_the_table_and_csv_links_resolve(file_store, chromium_path,
                                                                                    rec_manifest_rep):
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM_ARGS

    keys = write_report(file_store, "runs/ch", rec_manifest_rep)
    url = file_store.url(keys["html"])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url, wait_until="load")
            got = page.evaluate("""() => ({
                first: document.querySelector('section').id,
                boxTop: document.querySelector('#sec-headline').getBoundingClientRect().top,
                navTop: document.querySelector('nav').getBoundingClientRect().top,
                groups: Array.from(document.querySelectorAll('#tbl-table2 tr.group th')).map(
                    th => [th.textContent, Math.round(th.getBoundingClientRect().width)]),
                tableWidth: Math.round(document.querySelector('#tbl-table2').getBoundingClientRect().width),
                csv: document.querySelector('#csv-table2').href,
                imgs: Array.from(document.images).map(i => [i.naturalWidth, i.getBoundingClientRect().width]),
            })""")
        finally:
            browser.close()
    assert got["first"] == "sec-headline" and got["boxTop"] < got["navTop"]
    assert [g[0] for g in got["groups"]][0] == "Reference baselines (verbal; no visual code)"
    assert all(abs(w - got["tableWidth"]) <= 3 for _, w in got["groups"])
    # The link, resolved by the browser, names the CSV written beside the page.
    assert Path(got["csv"][len("file://"):]).read_text().startswith("architecture,family,")
    # Shown at half the pixel width (2x PNGs; + the 1 px border), narrower only where the page is.
    assert all(shown <= natural / 2 + 3 for natural, shown in got["imgs"] if shown), got["imgs"]
    assert any(abs(shown - natural / 2) <= 3 for natural, shown in got["imgs"])
