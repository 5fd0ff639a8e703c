"""Issue 13.1 end to end: the memshot stage as the local preset runs it (pixel reader
``ocr-minilm`` for shots, MiniLM for text, the MemOCR stand-in beside them) on a two-session
LoCoMo cut, then the report. MemShot gets recall@k *from its pixels* beside Text RAG and
w/o Rendering, the read rate per variant meets the 95 % goal, and the report's MemShot
sections (recall, read rate and latency, quoted baselines) and the sample viewer render."""

from __future__ import annotations

import logging

import polars as pl

from vismem.pipelines.config import load_config
from vismem.pipelines.context import RunContext
from vismem.pipelines.manifest import Manifest
from tests.conftest import CUT_SESSIONS

OCR = {"name": "ocr-minilm", "args": {"ocr": {"name": "rapidocr-lines", "args": {"threads": 1}}}}
MEMOCR = "session-summary-shots (stand-in extractive)"


def _ctx(store, tmp_path, path) -> RunContext:
    cfg = load_config(preset="local", overrides={"name": "memshot-pixels-test", "stages": ["memshot"], "memshot": {
        "dataset_path": str(path), "conversations": 1, "k": [1, 3], "image_embedder": OCR, "embed_on_ray": False}})
    assert cfg.memshot.variants == ("memshot", "no-render", "text-rag")  # the local preset's variants
    assert [m.name for m in cfg.memshot.memories] == ["session-summary-shots"]  # ... and its memories
    manifest = Manifest(store, cfg.run_id)
    manifest.begin(cfg, seeds={"root": cfg.seed})
    return RunContext(config=cfg, store=store, run_dir=tmp_path, manifest=manifest,
                      logger=logging.getLogger("vismem.test"))


def test_local_stage_recall_from_pixels_read_rate_and_report(file_store, ray_local, tmp_path, locomo_cut):
    from vismem.analysis.report import headline, load_results, report_run
    from vismem.pipelines.memshot import stage as memshot

    ctx = _ctx(file_store, tmp_path, locomo_cut)
    summary = memshot.run(ctx)
    assert summary["status"] == "done" and summary["rendered_not_retrieved"] == []
    # Recall from pixels: memshot's rows exist, are scored by the pixel reader (named a stand-in).
    recall = file_store.read_table(f"{ctx.run_prefix}/results/memshot_recall.parquet")
    emb = dict(recall.group_by("variant").agg(pl.col("embedder").first()).iter_rows())
    assert emb["memshot"] == "ocr-minilm (stand-in)"
    assert emb["no-render"] == emb["text-rag"] == "minilm"
    assert {"memshot", "no-render", "text-rag", MEMOCR} == set(emb)
    n_q = recall.filter((pl.col("variant") == "memshot") & (pl.col("k") == 1)).height
    assert n_q == recall.filter((pl.col("variant") == "no-render") & (pl.col("k") == 1)).height >= 10
    # A real retriever over ~10 shots: recall@3 far above chance (3 of ~10 units), and the pixel
    # text retrieves about as well as the same units' exact text (w/o Rendering).
    r = {key: v["recall"] for key, v in summary["recall"].items()}
    assert r["memshot@3"] > 0.5 and r["memshot@3"] >= r["no-render@3"] - 0.15
    assert r["memshot@3"] >= r["memshot@1"]
    # Read rate per variant (the shots' legibility), goal 95 %: the OCR job's shots, and the
    # MemOCR stand-in's memory shots read by the same pixel reader (one per session).
    assert set(summary["read_rate"]) == {"memshot", MEMOCR}
    assert all(v["read_rate"] >= 0.95 for v in summary["read_rate"].values()), summary["read_rate"]
    assert summary["read_rate"][MEMOCR]["shots"] == CUT_SESSIONS
    assert summary["ocr"]["shots"] == summary["ocr"]["read"] + summary["ocr"]["cached"] > 0
    per_shot = file_store.read_table(f"{ctx.run_prefix}/results/memshot_readrate.parquet")
    assert per_shot.height == summary["ocr"]["shots"] + CUT_SESSIONS
    assert (per_shot.filter(pl.col("variant") == MEMOCR)["n_words"] > 20).all()
    # Construction latency of the shots includes their OCR (embed_s > 0 for the pixel reader).
    lat = file_store.read_table(f"{ctx.run_prefix}/results/memshot_latency.parquet")
    shots = lat.filter(pl.col("variant") == "memshot")
    assert shots["embedder"][0] == "ocr-minilm (stand-in)" and shots["embed_s"][0] > 0
    # The headline the run prints has MemShot beside Text RAG and w/o Rendering.
    tables, _ = load_results(file_store, ctx.run_prefix)
    head = headline(tables)["memshot_recall"]
    assert {"memshot", "no-render", "text-rag"} <= set(head["variant"].to_list())
    # The report's MemShot sections render from these tables.
    rep = report_run(file_store, ctx.config.run_id)
    html = file_store.get_bytes(f"{ctx.run_prefix}/report/index.html").decode()
    for section in ("memshot-recall", "memshot-construction", "memshot-baselines"):
        assert f'id="sec-{section}"' in html, section
        assert section not in rep["sections_without_data"]
    rr = pl.read_csv(file_store.get_bytes(f"{ctx.run_prefix}/report/tables/memshot-readrate.csv"))
    # the CSV holds percent, as the page shows it
    assert sorted(rr["variant"].to_list()) == ["memshot", MEMOCR] and (rr["read_rate"] >= 95).all()
    rt = pl.read_csv(file_store.get_bytes(f"{ctx.run_prefix}/report/tables/memshot-recall.csv"))
    assert {"memshot", "no-render", "text-rag"} <= set(rt["variant"].to_list())
    assert "ocr-minilm (stand-in)" in rt["embedder"].to_list()
    # The sample viewer shows the memories' units too (MemOCR's shots, ranked without scores).
    from vismem.analysis.samples_page import page_data
    from vismem.pipelines.report.viewers import sample_page

    page = sample_page(file_store, ctx.config.run_id, tables, ctx.manifest.data)
    data = page_data(page)
    assert MEMOCR in data["variants"] and "memshot" in data["variants"]
    memo = [u for u in data["units"] if u["variant"] == MEMOCR]
    assert len(memo) == CUT_SESSIONS and all(u["shot"] for u in memo)
    ranked = [v[MEMOCR]["ranked"] for q in data["questions"] for v in [q["v"]] if MEMOCR in v]
    assert ranked and all(score is None for r in ranked for _, score in r)
    # What each retriever saw: the OCR text the pixel reader read from each shot (from the OCR
    # cache), and Text RAG's session texts cut where MiniLM's 256 word pieces end.
    shots = [u for u in data["units"] if u["variant"] == "memshot" and u["own_shot"]]
    assert shots and all(u["emb"] == "ocr" and "ocr" in u for u in shots)
    assert any(u.get("cut") for u in data["units"] if u["variant"] == "text-rag")
    assert data["vinfo"]["text-rag"]["limit"] == "embeds the first 256 word pieces"

