"""The report: built from stored results, opened in real headless Chromium, on file:// and real S3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from vismem.analysis import synthetic
from vismem.analysis.report import ReportOptions, load_results, report_run
from vismem.analysis.schemas import result_key, write_results

REPO = Path(__file__).resolve().parents[2]
FAST = ReportOptions(n_resamples=300, seed=1)

ALL_TABLES = ["table2", "bootstrap", "permutation", "lpm", "reach", "leader-bins", "ablations", "alpha", "encoding",
              "memshot-locomo", "memshot-ablations", "memshot-height", "memshot-recall"]


def _probes() -> pl.DataFrame:
    sweep = [synthetic.probes(Js=(4,), backends=("gemini-2.5-flash",), chains=3, study="alpha_sweep", alpha=a,
                              p={"dualmem": 0.5 + a / 3}) for a in (0.0, 0.5, 1.0)]
    abl = [synthetic.probes(Js=(4,), backends=("gemini-2.5-flash",), chains=3, study="ablation", variant=v,
                            p={"dualmem": r}) for v, r in (("inject=image", 0.7), ("inject=caption", 0.6))]
    return pl.concat([synthetic.probes(Js=(4, 6), chains=4), *sweep, *abl], how="diagonal_relaxed")


def _write_all(store, run_id: str, *, small: bool = False, probes_only: bool = False) -> None:
    """Every result kind; ``small`` keeps one back-end and no sweeps (fewer figures to draw);
    ``probes_only`` writes the probes alone (for tests that read only the DMV-Bench comparison:
    the MemShot sections' figures, Fig. 1 above all, are most of a report's drawing time)."""
    prefix = f"runs/{run_id}"
    probes = synthetic.probes(backends=("b",), Js=(4,), chains=3) if small or probes_only else _probes()
    write_results(store, prefix, "probes", probes)
    if not probes_only:
        write_results(store, prefix, "encoding", synthetic.encoding(chains=3, J=4))
        write_results(store, prefix, "memshot_answers",
                      synthetic.memshot_answers(questions=12, heights=(None, 512, 768)))
        write_results(store, prefix, "memshot_recall", synthetic.memshot_recall(questions=12))
    store.put_json(f"{prefix}/manifest.json", {"run_id": run_id, "git_revision": "abc123", "stages": {
        "report": {"status": "running"}}, "config": {"seed": 1}})


def _open_in_chromium(chromium_path: str, url: str) -> dict:
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url, wait_until="load")
            page.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=20_000)
            return page.evaluate("""() => ({
                images: Array.from(document.images).map(i => ({alt: i.alt, w: i.naturalWidth, h: i.naturalHeight})),
                tables: Array.from(document.querySelectorAll('table')).map(t => t.id),
                empties: Array.from(document.querySelectorAll('p.empty')).map(p => p.id),
                errors: Array.from(document.querySelectorAll('p.error')).map(p => p.id),
                table2: Array.from(document.querySelectorAll('#tbl-table2 tbody tr')).map(
                    r => Array.from(r.cells).map(c => c.textContent)),
                best: Array.from(document.querySelectorAll('#tbl-table2 td.best .v')).map(c => c.textContent),
                sections: Array.from(document.querySelectorAll('section')).map(s => s.id),
            })""")
        finally:
            browser.close()


def test_full_report_opens_in_chromium_with_every_image_and_table(file_store, chromium_path, tmp_path):
    _write_all(file_store, "demo-1")
    summary = report_run(file_store, "demo-1", options=FAST)
    assert summary["status"] == "done" and summary["errors"] == {} and summary["sections_without_data"] == []
    assert summary["found"] == ["encoding", "memshot_answers", "memshot_recall", "probes"]
    html_path = Path(summary["html"][len("file://"):])
    page = _open_in_chromium(chromium_path, summary["html"])
    assert len(page["images"]) == summary["figures"] >= 6
    assert all(i["w"] > 0 and i["h"] > 0 for i in page["images"]), page["images"]
    for t in ALL_TABLES + ["manifest"]:
        assert f"tbl-{t}" in page["tables"], (t, page["tables"])
    assert page["empties"] == [] and page["errors"] == []
    # Table 2 shows the same numbers the scoring computes, and bolds DualMem (the synthetic best).
    from vismem.analysis import dmv
    from vismem.analysis.schemas import validate

    cells = dmv.tsr_cells(validate(_probes(), "probes"), n_resamples=300, seed=1)
    cell = cells.filter((pl.col("architecture") == "dualmem") & (pl.col("J") == 4)
                        & (pl.col("backend") == "gemini-2.5-flash")).row(0, named=True)
    want = cell["tsr"]
    row = next(r for r in page["table2"] if r[0] == "dualmem")
    # The cell shows the rate and its chain-cluster 95% CI.
    assert row[1] == f"{want * 100:.1f} [{cell['cluster_low'] * 100:.1f}, {cell['cluster_high'] * 100:.1f}]"
    assert f"{want * 100:.1f}" in page["best"]
    assert page["sections"][-1] == "sec-manifest" and "sec-empty" not in page["sections"]
    # Figures alongside (PNG + SVG), tables as CSV, Markdown summary.
    figs = file_store.list("runs/demo-1/report/figures")
    assert len([k for k in figs if k.endswith(".svg")]) == summary["figures"]
    assert file_store.get_bytes("runs/demo-1/report/figures/retention.svg").lstrip().startswith(b"<?xml")
    md = file_store.get_bytes("runs/demo-1/report/summary.md").decode()
    assert "| architecture |" in md and "**" in md and "figures/retention.png" in md
    assert html_path.read_text().count("data:image/png;base64,") == summary["figures"]


def test_sections_without_data_say_so_and_bad_tables_are_reported(file_store):
    prefix = "runs/partial-1"
    write_results(file_store, prefix, "memshot_answers", synthetic.memshot_answers(questions=8))
    # A probes table missing a required column: reported, not fatal.
    file_store.write_table(result_key(prefix, "probes"), synthetic.probes(chains=2, Js=(3,)).drop("correct"),
                           schema_version=1)
    summary = report_run(file_store, "partial-1", options=FAST)
    assert summary["status"] == "done-with-errors"
    assert "missing required column" in summary["errors"]["probes"] and "'correct'" in summary["errors"]["probes"]
    assert "dmv-main" in summary["sections_without_data"] and "dmv-encoding" in summary["sections_without_data"]
    assert "memshot-main" not in summary["sections_without_data"]
    html = file_store.get_bytes("runs/partial-1/report/index.html").decode()
    assert 'id="err-probes"' in html and 'id="empty-dmv-encoding"' in html and "No data:" in html
    assert 'id="tbl-memshot-locomo"' in html
    # Sections with data first; every empty one is named in the single line at the end.
    assert html.index('id="sec-memshot-main"') < html.index('id="sec-empty"') < html.index('id="sec-manifest"')
    assert html.count('class="empty"') == 2  # the collapsed line, and the missing manifest
    for sid in summary["sections_without_data"]:
        assert f'id="empty-{sid}"' in html and f'id="sec-{sid}"' not in html
    assert "No manifest found" in html


def test_results_written_as_parts_are_read(file_store):
    df = synthetic.encoding(chains=2, J=3)
    file_store.write_table("runs/parts-1/results/encoding/part-0.parquet", df.head(3), schema_version=1)
    file_store.write_table("runs/parts-1/results/encoding/part-1.parquet", df.tail(df.height - 3), schema_version=1)
    tables, errors = load_results(file_store, "runs/parts-1")
    assert errors == {} and tables["encoding"].height == df.height


def test_report_stage_on_real_s3(s3_store):
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.report.config import ReportConfig
    from vismem.pipelines.manifest import Manifest
    from vismem.pipelines.context import RunContext
    from vismem.pipelines.report.stage import run

    cfg = RunConfig(name="reptest", seed=3, report=ReportConfig(n_resamples=300, compare=("dualmem", "caption")))
    _write_all(s3_store, cfg.run_id, probes_only=True)  # what it reads: the pair, the seed, a DMV figure
    ctx = RunContext(config=cfg, store=s3_store, run_dir=Path("/tmp"), manifest=Manifest(s3_store, cfg.run_id))
    summary = run(ctx)
    assert summary["status"] == "done" and summary["html"].startswith("s3://")
    html = s3_store.get_bytes(f"runs/{cfg.run_id}/report/index.html").decode()
    assert "dualmem vs caption" in html and "Seed 3" in html
    assert s3_store.exists(f"runs/{cfg.run_id}/report/figures/retention.png")
    perm = pl.read_csv(s3_store.get_bytes(f"runs/{cfg.run_id}/report/tables/permutation.csv"))
    assert set(perm["b"].to_list()) == {"caption"} and (perm["p_value"] <= 1).all()


def test_cli_report_writes_and_copies_the_report(file_store, tmp_path, capsys, monkeypatch):
    _write_all(file_store, "cli-1", small=True)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "vismem", "report", "cli-1", "--store", file_store.uri,
           "--set", "report.n_resamples=300", "--out", str(out), "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    assert summary["found"] == ["encoding", "memshot_answers", "memshot_recall", "probes"]
    assert (out / "index.html").is_file() and (out / "figures" / "retention.svg").is_file()
    assert "Seed 1," in (out / "index.html").read_text()  # the run's own seed, from its manifest
    # An unknown run: the command's refusal, in this process (no second interpreter start-up).
    from vismem.pipelines.cli import main

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["report", "no-such-run", "--store", file_store.uri]) == 1
    assert "not found" in capsys.readouterr().err


def test_cli_report_keeps_the_runs_own_report_settings(file_store, tmp_path, capsys, monkeypatch):
    """``vismem report RUN`` without a preset reports a run with the settings it ran with (a paper
    run's pinned Table 10 pair, not the two best of the run); ``--set`` and ``--preset`` still win.
    Through ``main`` in this process: settings, not process behaviour (the command as a process is
    test_cli_report_writes_and_copies_the_report's); probes only, the pair being all it reads."""
    from vismem.pipelines.cli import main

    _write_all(file_store, "pinned-1", probes_only=True)
    key = "runs/pinned-1/manifest.json"
    file_store.put_json(key, {**file_store.get_json(key),
                              "config": {"seed": 1, "report": {"compare": ["dualmem", "caption"], "n_resamples": 300}}})
    monkeypatch.chdir(tmp_path)
    perm_csv = Path(file_store.uri[len("file://"):]) / "runs" / "pinned-1" / "report" / "tables" / "permutation.csv"

    def pair(*extra):
        capsys.readouterr()
        code = main(["report", "pinned-1", "--store", file_store.uri, "--no-viewers", "--json", *extra])
        assert code == 0, capsys.readouterr().err[-2000:]
        assert json.loads(capsys.readouterr().out)["found"] == ["probes"]
        perm = pl.read_csv(perm_csv)
        return set(perm["a"].to_list()) | set(perm["b"].to_list())

    assert pair() == {"dualmem", "caption"}  # the run's pair, though m2a-lite is second best here
    assert pair("--set", "report.compare=[dualmem,textonly]") == {"dualmem", "textonly"}
    assert pair("--preset", "local", "--set", "report.n_resamples=300") == {"dualmem", "m2a-lite"}  # the two best


@pytest.mark.slow
def test_full_runner_report_stage_end_to_end(tmp_path):
    """Through ``vismem.pipelines.runner.run``: local Ray, store, manifest, the report stage."""
    from vismem.pipelines.config import load_config
    from vismem.pipelines.runner import run
    from vismem.core.store import Store

    store_uri = f"file://{tmp_path}/store"
    cfg = load_config(overrides={"name": "e2e", "stages": ["report"], "store": {"uri": store_uri},
                                 "runs_dir": str(tmp_path / "runs"), "report": {"n_resamples": 300}})
    _write_all(Store.open(store_uri), cfg.run_id, small=True)
    results = run(cfg, progress=False)
    assert results["report"]["status"] == "done"
    html = Store.open(store_uri).get_bytes(f"runs/{cfg.run_id}/report/index.html").decode()
    assert "stage report" in html


def test_report_says_which_cue_colour_order_and_catalogue_seed_were_used():
    from vismem.analysis.render import catalogue_settings, to_html, to_markdown
    from vismem.analysis.report import build_report

    tables = {"encoding": synthetic.encoding(chains=2, J=3)}
    for order, seed in (("official", 0), ("seeded", 7)):
        manifest = {"run_id": "r", "config": {"seed": seed, "catalog": {"colour_order": order}}}
        rep = build_report(tables, "r", manifest=manifest, options=FAST)
        enc = next(s for s in rep.sections if s.id == "dmv-encoding")
        assert enc.notes[0].startswith(f"Cue colour order: {order}, ") and f"catalogue seed {seed}." in enc.notes[0]
        assert ("not the official" in enc.notes[0]) == (order == "seeded")
        assert not any(n.startswith("Cue colour") for s in rep.sections if not s.has_data for n in s.notes)
        html = to_html(rep)
        assert f"<tr><td>cue colour order</td><td>{order}</td></tr>" in html
        assert f"<tr><td>catalogue seed</td><td>{seed}</td></tr>" in html
        assert f"- cue colour order: `{order}`, catalogue seed {seed}" in to_markdown(rep)
    assert catalogue_settings(None) is None and catalogue_settings({"run_id": "x"}) is None
    # A config without the catalogue section says so once, not "not recorded, not recorded".
    assert catalogue_settings({"config": {"seed": 3}})["line"] == "Cue colour order: not recorded; catalogue seed 3."


def test_every_rate_has_its_interval_and_rows_link_to_the_viewers():
    """Every rate column of the report's rate tables carries a 95% CI, the CI brackets the
    value, and with viewers given every data row links to the viewer filtered to it."""
    from vismem.analysis.report import build_report

    tables = {"probes": validate_all(_probes(), "probes"), "encoding": synthetic.encoding(chains=3, J=4),
              "memshot_answers": synthetic.memshot_answers(questions=12, heights=(None, 512, 768)),
              "memshot_recall": synthetic.memshot_recall(questions=12)}
    rep = build_report(tables, "r", options=FAST, viewers={"trajectories": "trajectories.html",
                                                            "samples": "samples.html"})
    rate_tables = {"table2", "reach", "encoding", "memshot-locomo", "memshot-ablations", "memshot-height",
                   "memshot-recall", "memshot-recall-category", "ablations", "alpha", "lpm"}
    seen = set()
    for t in rep.tables():
        if t.id not in rate_tables:
            continue
        seen.add(t.id)
        # measured rates; a quoted paper column has no interval
        rates = [c for c in t.shown if c in t.percent and c not in ("naive_low", "naive_high", "cluster_low",
                                                                    "cluster_high", "se", "low", "high")
                 and not c.startswith("paper")]
        if t.id in ("ablations", "alpha"):  # their CI columns are shown as columns
            assert {"cluster_low", "cluster_high"} <= set(t.df.columns)
            continue
        assert rates and all(c in t.ci for c in rates), (t.id, rates, t.ci)
        for row in t.df.iter_rows(named=True):
            if row[t.df.columns[0]] in t.skip_rows:
                continue
            for c in rates:
                lo, hi = (row[x] for x in t.ci[c])
                if row[c] is not None and lo is not None:
                    assert lo - 1e-9 <= row[c] <= hi + 1e-9, (t.id, c, row)
        assert t.links is not None
        hrefs = [h for h, r in zip(t.links, t.df.iter_rows(named=True)) if r[t.df.columns[0]] not in t.skip_rows]
        viewer = "samples.html#" if t.id.startswith("memshot") else "trajectories.html#"
        assert hrefs and all(h and h.startswith(viewer) for h in hrefs), (t.id, hrefs[:3])
    assert seen == rate_tables
    from vismem.analysis.render import to_html

    html = to_html(rep)
    assert 'href="trajectories.html#backend=gemini-2.5-flash&amp;architecture=dualmem&amp;J=4"' in html
    assert 'href="samples.html#variant=' in html and 'id="viewers"' in html


def test_memshot_intervals_are_question_bootstraps():
    """mean_ci: the mean is the plain mean, the bounds are percentiles of resampled means."""
    import numpy as np

    from vismem.analysis.intervals import mean_ci

    rec = synthetic.memshot_recall(questions=40)
    got = mean_ci(rec, ["variant", "k"], "recall", order=["question_id"], n_resamples=2000, seed=3)
    want = rec.group_by("variant", "k").agg(pl.col("recall").mean(), pl.len().alias("n"))
    j = got.join(want, on=["variant", "k"])
    assert np.allclose(j["mean"], j["recall"]) and (j["n"] == j["n_right"]).all()
    assert ((j["low"] <= j["mean"]) & (j["mean"] <= j["high"]) & (j["high"] - j["low"] > 0)).all()
    # Same seed, same intervals.
    again = mean_ci(rec, ["variant", "k"], "recall", order=["question_id"], n_resamples=2000, seed=3)
    assert got.equals(again)


def test_readable_backend_names_replace_cache_slugs():
    """Report tables name back-ends by their model (backend_name), never by cache slug."""
    from vismem.analysis.render import to_html
    from vismem.analysis.report import build_report, display_names

    slug = "scripted-shopper-stand-in-s0--c6f5ba34"
    enc = synthetic.encoding(backends=(slug,), chains=3, J=4).with_columns(
        pl.lit("scripted-shopper (stand-in)").alias("backend_name"))
    probes = synthetic.probes(backends=("scripted-shopper-stand-in-s0 / scripted-recall (stand-in)",), Js=(4,),
                              chains=3).with_columns(pl.lit(slug).alias("chain_slug"))
    names = display_names({"encoding": enc, "probes": probes})
    assert names == {slug: "scripted-shopper (stand-in)",
                     "scripted-shopper-stand-in-s0 / scripted-recall (stand-in)":
                         "scripted-shopper (stand-in) / scripted-recall (stand-in)"}
    html = to_html(build_report({"encoding": enc, "probes": probes}, "r", options=FAST))
    assert slug not in html.split('id="sec-manifest"')[0]
    assert "scripted-shopper (stand-in) / scripted-recall (stand-in) J=4" in html
    # Two slugs that would share a name keep their slugs (cells are never pooled).
    enc2 = pl.concat([enc, enc.with_columns(pl.lit(slug + "x").alias("backend"))])
    assert display_names({"encoding": enc2}) == {}


def validate_all(df, kind):
    from vismem.analysis.schemas import validate

    return validate(df, kind)
