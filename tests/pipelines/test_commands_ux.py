"""What a user sees: the end-of-run summary (its numbers equal the result tables'), quiet library
logs, ``vismem runs`` / ``store ls|get|cat`` round trips, the report copied out of S3 with rows
linking to the viewers, and ``vismem shots``."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from vismem.analysis import synthetic
from vismem.analysis.schemas import write_results

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _vismem(*args: str, cwd: Path, timeout: int = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vismem", *args], capture_output=True, text=True, cwd=cwd,
                          env={**ENV, **(env or {})}, timeout=timeout)


def _write_results(store, run_id: str, kinds: tuple[str, ...] | None = None) -> dict[str, pl.DataFrame]:
    """The result tables (``kinds`` of them, default all) written under ``runs/<run_id>``."""
    prefix = f"runs/{run_id}"
    tables = {"probes": synthetic.probes(backends=("toy",), Js=(4,), chains=3),
              "encoding": synthetic.encoding(backends=("toy",), chains=3, J=4),
              # Two answers without a verdict (judge failures): Acc leaves them out.
              "memshot_answers": synthetic.memshot_answers(questions=12).with_row_index("_i").with_columns(
                  pl.when(pl.col("_i") < 2).then(None).otherwise(pl.col("judge_label")).alias("judge_label")).drop("_i"),
              "memshot_recall": synthetic.memshot_recall(questions=12)}
    tables = {k: df for k, df in tables.items() if kinds is None or k in kinds}
    for kind, df in tables.items():
        write_results(store, prefix, kind, df)
    return tables


def _expected_tsr(probes: pl.DataFrame) -> dict[str, str]:
    """TSR per architecture straight from the probes table: main study, common probe set."""
    main = probes.filter(pl.col("study") == "main")
    n_arch = main["architecture"].n_unique()
    common = main.filter(pl.col("architecture").n_unique().over(["backend", "J", "seed", "probe_id"]) == n_arch)
    rates = common.group_by("architecture").agg(pl.col("correct").cast(pl.Float64).mean())
    return {a: f"{100 * r:.1f}" for a, r in rates.iter_rows()}


def _rows(text: str, first: str) -> list[list[str]]:
    """Table rows of rendered rich text whose first cell is ``first``."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)]
        if cells and cells[0] == first:
            out.append(cells)
    return out


def test_summary_numbers_equal_the_result_tables(file_store):
    from rich.console import Console

    from vismem.analysis.report import ReportOptions, load_results
    from vismem.pipelines.summary import collect, render

    want = _write_results(file_store, "sum-1")
    tables, errors = load_results(file_store, "runs/sum-1")
    assert errors == {}
    results = {"encode": {"status": "ok", "sessions": 12, "ran": 4, "cached": 8, "failed": []},
               "probes": {"status": "done", "units": 9, "ran": 0, "cached": 9, "probes": 100},
               "report": {"status": "done", "tables": 5, "figures": 2, "viewers": {"trajectories": "x"}}}
    manifest = {"stages": {"encode": {"status": "done", "wall_s": 12.5, "peak_rss_mib": 210.4, "tree_peak_mib": 1534.2},
                           "probes": {"status": "done", "wall_s": 95.0}}}
    summary = collect(results, manifest=manifest, tables=tables, options=ReportOptions(n_resamples=300, seed=1),
                      wall_s=130.0, store_uri="local-s3://vismem", run_id="sum-1", report="file:///r/index.html",
                      viewers={"trajectories": "file:///r/trajectories.html"}, run_log="/r/run.log")
    json.dumps(summary)  # --json prints it
    con = Console(record=True, width=220)
    render(summary, con)
    text = con.export_text()
    # Stages: what ran and what was reused, with the manifest's times.
    assert "encode" in text and "12 sessions: 4 browsed, 8 reused" in text and "12.5 s" in text
    assert "9 probe units: 0 ran, 9 reused" in text and "1 min 35 s" in text
    # ... and each stage's peak memory (the run's own regression check), the run's peak on top.
    assert "1,534 MiB (210 driver)" in text and "peak memory 1,534 MiB" in text and summary["peak_mib"] == 1534.2
    # DMV-Bench TSR rows equal the probes table's rates on the common probe set.
    tsr = _expected_tsr(want["probes"])
    for arch, rate in tsr.items():
        (row,) = _rows(text, arch)
        assert row[1] == rate, (arch, row)
        lo, hi = (float(x) for x in row[2].strip("[]").split(","))
        assert lo <= float(rate) <= hi
    # MemShot recall@k and hit@k equal the recall table's means.
    rec = want["memshot_recall"].group_by("variant", "k").agg(pl.col("recall").mean(),
                                                              pl.col("hit").cast(pl.Float64).mean(), pl.len())
    for variant, k, recall, hit, n in rec.iter_rows():
        row = next(r for r in _rows(text, variant) if r[1] == str(k) and len(r) == 7)
        assert row[2] == f"{100 * recall:.1f}" and row[4] == f"{100 * hit:.1f}" and row[6] == str(n)
    # Answers: Acc over the non-adversarial answers, an unanswered question and an answer without a
    # verdict (a judge failure) both counting as wrong (the official reading); F1 over all.
    ans = want["memshot_answers"].filter(pl.col("category") != "adversarial")
    assert ans["judge_label"].null_count() > 0
    acc = ans.group_by("variant", "k").agg(pl.col("judge_label").fill_null(False).cast(pl.Float64).mean(),
                                           pl.col("f1").mean())
    for variant, k, a, f in acc.iter_rows():
        row = next(r for r in _rows(text, variant) if r[1] == str(k) and r[2] == f"{100 * a:.1f}")
        assert row[4] == f"{100 * f:.1f}"
    assert "file:///r/index.html" in text and "file:///r/trajectories.html" in text and "/r/run.log" in text


def test_quiet_routes_ray_data_and_transformers_logging_to_the_run_log(tmp_path, capfd):
    from vismem.pipelines import logs

    import ray.data  # noqa: F401 - installs Ray Data's console handler, as in a run
    from transformers.utils import logging as tlog

    tlog.get_logger("transformers")  # and transformers' stderr handler
    path = tmp_path / "run.log"
    before = {n: list(logging.getLogger(n).handlers) for n in ("ray.data", "transformers")}
    q = logs.quiet(path)
    try:
        logging.getLogger("ray.data").info("dataset execution finished in 0.1 seconds")
        logging.getLogger("ray.data._internal.progress.logging_progress").info("Total Progress: 3/9")
        logging.getLogger("transformers.modeling_utils").warning("Model config: bos_token_id ...")
        logging.getLogger("ray.data").debug("a debug line")
        assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    finally:
        q.restore()
    out = capfd.readouterr()
    assert "execution finished" not in out.err + out.out and "Model config" not in out.err + out.out
    text = path.read_text()
    assert "dataset execution finished" in text and "Total Progress: 3/9" in text and "Model config" in text
    assert "a debug line" not in text  # the run log keeps INFO and up
    assert {n: list(logging.getLogger(n).handlers) for n in before} == before
    v = logs.quiet(path, verbose=True)  # -v leaves every library alone
    assert v.handler is None and v.saved == {}


def test_run_prints_the_summary_and_writes_json(tmp_path, capsys, monkeypatch):
    """``vismem run report`` on stored results: the rich summary on stdout (numbers = the tables),
    nothing from Ray Data on stderr, the run log in the run folder; ``--json`` is machine-readable."""
    from vismem.core.store import Store
    from vismem.pipelines.cli import main

    store_uri = f"file://{tmp_path}/store"
    common = ["report", "--store", store_uri, "--set", f"runs_dir={tmp_path}/runs", "--set", "report.n_resamples=300",
              "--no-progress"]
    # The run id only (no process behaviour in it): in-process, not a third interpreter start-up.
    monkeypatch.chdir(tmp_path)
    assert main(["run", *common, "--print-config"]) == 0
    run_id = capsys.readouterr().out.splitlines()[0].split(": ", 1)[1]
    # Probes only: every number this test reads is a TSR (the MemShot rows' numbers are checked in
    # test_summary_numbers_equal_the_result_tables); MemShot tables would add figures to each report.
    want = _write_results(Store.open(store_uri), run_id, kinds=("probes",))
    res = _vismem("run", *common, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"vismem run {run_id} done in" in res.stdout and "Where things are" in res.stdout
    for arch, rate in _expected_tsr(want["probes"]).items():
        assert any(r[1] == rate for r in _rows(res.stdout, arch)), (arch, rate)
    report = f"{store_uri}/runs/{run_id}/report/index.html"
    assert report in res.stdout and Path(report[len("file://"):]).is_file()
    assert "logging_progress" not in res.stderr and " INFO " not in res.stderr, res.stderr[-2000:]
    assert (tmp_path / "runs" / run_id / "run.log").is_file()
    # With progress on and stderr not a terminal: stage lines on stderr, stdout still pure JSON.
    js = _vismem("run", *[a for a in common if a != "--no-progress"], "--json", cwd=tmp_path,
                 env={"VISMEM_PROGRESS": "1"})
    assert js.returncode == 0, js.stderr[-3000:]
    assert "stage 1/1 report: started" in js.stderr and "stage 1/1 report: done in" in js.stderr, js.stderr[-2000:]
    assert "Ray: starting" not in js.stderr, js.stderr[-2000:]  # a report alone runs no Ray job
    data = json.loads(js.stdout)
    assert data["_run_id"] == run_id and data["report"]["status"] == "done"
    heads = {r["architecture"]: f"{100 * r['tsr']:.1f}" for r in data["_summary"]["headline"]["dmv"]}
    assert heads == _expected_tsr(want["probes"])


def _manifest(run_id: str, started: str, stages: dict[str, str]) -> dict:
    return {"run_id": run_id, "started_at": started,
            "stages": {k: {"status": v, "wall_s": 2.0} for k, v in stages.items()}}


def _cli(capsys, *args: str) -> subprocess.CompletedProcess:
    """``vismem ARGS`` in this process (``main``): its exit code, stdout and stderr."""
    from vismem.pipelines.cli import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def test_runs_and_store_get_round_trip(file_store, tmp_path, capsys, monkeypatch):
    """``runs`` and ``store get|ls|cat``: the first listing through ``python -m vismem`` (the entry
    point, exit code and stdout of a real process), the rest through ``main`` in this process (the
    same code, no interpreter start-up each)."""
    monkeypatch.chdir(tmp_path)
    file_store.put_json("runs/alpha-0123456789/manifest.json", _manifest(
        "alpha-0123456789", "2026-01-02T03:04:05Z", {"memshot": "done", "report": "done"}))
    file_store.put_bytes("runs/alpha-0123456789/report/index.html", b"<html>alpha</html>")
    file_store.put_bytes("runs/alpha-0123456789/report/figures/f.svg", b"<svg/>")
    file_store.put_json("runs/beta-9876543210/manifest.json", _manifest(
        "beta-9876543210", "2026-02-01T00:00:00Z", {"encode": "partial", "report": "running"}))
    write_results(file_store, "runs/alpha-0123456789", "encoding", synthetic.encoding(chains=2, J=3))
    st = ["--store", file_store.uri]
    runs = _vismem("runs", *st, "--json", cwd=tmp_path)
    assert runs.returncode == 0, runs.stderr
    listed = {r["run_id"]: r for r in json.loads(runs.stdout)}
    assert listed["alpha-0123456789"]["status"] == "done" and listed["alpha-0123456789"]["report"]
    assert listed["beta-9876543210"]["status"] == "partial" and listed["beta-9876543210"]["report"] is None
    assert [r["run_id"] for r in json.loads(runs.stdout)] == ["beta-9876543210", "alpha-0123456789"]  # newest first
    table = _cli(capsys, "runs", *st)
    assert "alpha-0123456789" in table.stdout and "beta-9876543210" in table.stdout  # ids never cut
    # get: one object, then a prefix into a folder; bytes identical.
    got = _cli(capsys, "store", "get", "runs/alpha-0123456789/manifest.json", str(tmp_path / "m.json"), *st)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "m.json").read_bytes() == file_store.get_bytes("runs/alpha-0123456789/manifest.json")
    got = _cli(capsys, "store", "get", "runs/alpha-0123456789/report/", str(tmp_path / "rep"), *st)
    assert got.returncode == 0 and (tmp_path / "rep" / "index.html").read_bytes() == b"<html>alpha</html>"
    assert (tmp_path / "rep" / "figures" / "f.svg").read_bytes() == b"<svg/>"
    # ls: sizes as stored and a total; --keys for scripts.
    ls = _cli(capsys, "store", "ls", "runs/alpha-0123456789/report", *st)
    assert ls.stdout.splitlines()[:2] == [" 6 B  runs/alpha-0123456789/report/figures/f.svg",
                                          "18 B  runs/alpha-0123456789/report/index.html"]
    assert ls.stdout.splitlines()[-1].startswith("2 objects, 24 B under ")
    keys = _cli(capsys, "store", "ls", "runs/alpha-0123456789/report", "--keys", *st)
    assert keys.stdout.split() == ["runs/alpha-0123456789/report/figures/f.svg",
                                   "runs/alpha-0123456789/report/index.html"]
    # cat: JSON pretty, Parquet as a table.
    cat = _cli(capsys, "store", "cat", "runs/beta-9876543210/manifest.json", *st)
    assert json.loads(cat.stdout)["stages"]["encode"]["status"] == "partial"
    cat = _cli(capsys, "store", "cat", "runs/alpha-0123456789/results/encoding.parquet", "--rows", "3", *st)
    assert cat.returncode == 0 and "rows x" in cat.stdout.splitlines()[-1] and "steps" in cat.stdout
    missing = _cli(capsys, "store", "get", "runs/nope/x.json", *st)
    assert missing.returncode == 1 and "nothing at" in missing.stderr


def test_report_copied_out_of_s3_opens_locally_and_rows_link_to_the_viewer(s3_store, chromium_path, tmp_path):
    """A run whose store is S3: the report and viewers come out to a local folder; a Table 2 row's
    link opens the trajectory viewer filtered to that architecture's probe episodes."""
    from vismem.analysis.report import ReportOptions
    from vismem.pipelines.report.build import build
    from vismem.pipelines.report.viewers import copy_report
    from tests.analysis.test_viewer import _write_trajectories

    _write_trajectories(s3_store, "s3run-1")
    summary = build(s3_store, "s3run-1", options=ReportOptions(n_resamples=200, seed=0))
    assert summary["html"].startswith("s3://") and set(summary["viewers"]) == {"trajectories"}
    index = copy_report(s3_store, "s3run-1", tmp_path / "local")
    assert index == (tmp_path / "local" / "index.html").resolve() and (index.parent / "trajectories.html").is_file()
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(index.as_uri(), wait_until="load")
            assert page.locator("#viewers a").count() == 1
            link = page.locator('#tbl-table2 a.row-link', has_text="dualmem")
            link.click()
            page.wait_for_load_state("load")
            page.wait_for_selector("body[data-ready]")
            assert page.url.startswith((index.parent / "trajectories.html").as_uri() + "#")
            assert page.locator(".probe-item").count() == 2  # both chains' dualmem probes
            assert page.locator("#tab-probes.on").count() == 1
        finally:
            browser.close()


def test_shots_command_renders_a_gallery(tmp_path, chromium_path, capsys):
    out = tmp_path / "shots"
    res = _vismem("shots", "--conversation", "conv-26", "--session", "1", "--out", str(out), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    units = [json.loads(line) for line in (out / "units.jsonl").read_text().splitlines()]
    pngs = sorted(out.glob("*.png"))
    assert units and len(pngs) == len(units) and all(u["dia_ids"][0].startswith("D1:") for u in units)
    assert (out / "index.html").as_uri() in res.stdout
    from playwright.sync_api import sync_playwright

    from tests.analysis.test_viewer import NON_BLANK
    from tests.conftest import CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto((out / "index.html").as_uri(), wait_until="load")
            imgs = page.locator("img.shot")
            assert imgs.count() == len(units)
            assert imgs.first.evaluate(NON_BLANK) > 5
            assert units[0]["unit_id"] in page.locator(".unit").first.text_content()
        finally:
            browser.close()
    # A bad conversation id: the same command's refusal, in this process (no second start-up).
    bad = _cli(capsys, "shots", "--conversation", "conv-nope", "--out", str(out))
    assert bad.returncode != 0 and "no conversation" in bad.stderr


@pytest.mark.parametrize("cmd", [["runs"], ["store", "get"], ["store", "cat"], ["shots"], ["report"]])
def test_new_commands_have_help(cmd, capsys):
    from vismem.pipelines.cli import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*cmd, "--help"])
    assert e.value.code == 0 and "usage: vismem" in capsys.readouterr().out


def test_summary_memshot_line_shows_the_read_rate_per_variant():
    from vismem.pipelines.memshot.stage import describe as _memshot

    line = _memshot({"conversations": 1, "questions": 152, "units": 298, "answers": "skipped: no memshot.vlm",
                     "read_rate": {"memshot": {"read_rate": 0.99861, "shots": 130},
                                   "memocr (stand-in extractive)": {"read_rate": 0.9974, "shots": 19}}})
    assert "read rate memshot 99.9 %, memocr (stand-in extractive) 99.7 %" in line
    assert "read rate" not in _memshot({"conversations": 1, "questions": 2, "units": 3})


def test_local_report_in_place_for_a_folder_copied_for_s3_or_out(s3_store, file_store, tmp_path):
    from types import SimpleNamespace

    from vismem.pipelines.report.viewers import local_report

    cfg = SimpleNamespace(runs_dir=str(tmp_path / "runs"))
    for store in (s3_store, file_store):
        store.put_bytes("runs/r1/report/index.html", b"<html>r1</html>")
        store.put_bytes("runs/r1/report/figures/a.svg", b"<svg/>")
    here = local_report(file_store, cfg, "r1")
    assert here == Path(file_store.url("runs/r1/report/index.html")[len("file://"):])  # not copied
    copied = local_report(s3_store, cfg, "r1")
    assert copied.read_bytes() == b"<html>r1</html>" and copied.parent == (tmp_path / "runs/r1/report").resolve()
    assert (copied.parent / "figures/a.svg").read_bytes() == b"<svg/>"
    out = local_report(file_store, cfg, "r1", tmp_path / "out")
    assert out == (tmp_path / "out/index.html").resolve() and out.read_bytes() == b"<html>r1</html>"
    assert local_report(file_store, cfg, "nope") is None and local_report(s3_store, cfg, "nope") is None


def test_percent_encoded_file_uris_name_the_folder_and_read_only_commands_create_nothing(tmp_path, capsys,
                                                                                           monkeypatch):
    from rich.console import Console

    from vismem.analysis.report import ReportOptions
    from vismem.core.store import Store
    from vismem.pipelines.cli import main
    from vismem.pipelines.summary import collect, render

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "my store's #1"
    encoded = root.as_uri()  # file:///.../my%20store%27s%20%231: the form report links use
    assert "%20" in encoded
    store = Store.open(encoded)
    assert store.uri == f"file://{root}"
    store.put_json("runs/gamma-0123456789/manifest.json", _manifest("gamma-0123456789", "2026-01-02T03:04:05Z",
                                                                    {"memshot": "done"}))
    assert (root / "runs" / "gamma-0123456789" / "manifest.json").is_file()
    assert main(["runs", "--store", encoded, "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["gamma-0123456789"]
    # Read-only commands on a store that is not there: nothing is created, literally or decoded.
    ghost = tmp_path / "ghost dir"
    for cmd in (["runs"], ["store", "ls"], ["store", "cat", "x.json"], ["store", "get", "x.json"],
                ["report", "gamma-0123456789", "--no-viewers"]):
        main([*cmd, "--store", ghost.as_uri()])
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == [root.name]
    # The summary's "browse" hint is a command line that pastes whole into a shell.
    summary = collect({}, manifest=None, tables={}, options=ReportOptions(), wall_s=1.0, store_uri=store.uri,
                      run_id="gamma-0123456789", report=None, viewers={}, run_log=None)
    con = Console(record=True, width=400)
    render(summary, con)
    browse = next(ln for ln in con.export_text().splitlines() if ln.strip().startswith("browse"))
    import shlex

    first = browse.split("browse", 1)[1].split("|")[0]
    assert shlex.split(first) == ["vismem", "runs", "--store", store.uri], browse


@pytest.mark.parametrize("damage", [b'{"run_id": "bad-0123456789", "stages": {"memshot": {"sta',  # truncated
                                    b"\x89PNG\r\n\x1a\n\xff\xfe garbage",  # not text at all
                                    b'["a", "list"]', b'{"stages": [1, 2]}',  # JSON, but not a manifest
                                    b'{"stages": {"memshot": 3}}'])  # a stage that is no stage record
def test_a_corrupt_manifest_is_flagged_and_never_hides_the_other_runs(file_store, tmp_path, capsys, monkeypatch,
                                                                      damage):
    from vismem.pipelines.cli import main

    monkeypatch.chdir(tmp_path)
    file_store.put_json("runs/good-0123456789/manifest.json", _manifest(
        "good-0123456789", "2026-01-02T03:04:05Z", {"memshot": "done"}))
    file_store.put_bytes("runs/bad-0123456789/manifest.json", damage)
    write_results(file_store, "runs/bad-0123456789", "encoding", synthetic.encoding(chains=2, J=3))
    st = ["--store", file_store.uri]
    assert main(["runs", *st, "--json"]) == 0
    listed = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed["good-0123456789"]["status"] == "done" and listed["good-0123456789"]["problem"] is None
    assert listed["bad-0123456789"]["status"] == "unreadable manifest"
    assert listed["bad-0123456789"]["problem"].startswith("manifest unreadable")
    assert main(["runs", *st]) == 0
    out = capsys.readouterr().out
    assert "good-0123456789" in out and "bad-0123456789: manifest unreadable" in out
    assert main(["report", "bad-0123456789", *st, "--no-viewers"]) == 0
    out = capsys.readouterr().out
    assert "encoding" in out.splitlines()[0] and "manifest           manifest unreadable" in out
    write_results(file_store, "runs/good-0123456789", "encoding", synthetic.encoding(chains=2, J=3))
    # compare reads the damaged run without its manifest (encoding tables alone: nothing to compare)
    assert main(["compare", "good-0123456789", "bad-0123456789", *st, "--out", str(tmp_path / "c.html")]) == 4
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith("share no scored questions or probes: nothing to compare"), err


@pytest.mark.usefixtures("ray_local")  # about the manifest, not Ray: the session's, not a start-up of its own
def test_a_run_over_its_own_corrupt_manifest_names_it_and_writes_a_new_one(tmp_path, caplog):
    import logging

    from vismem.core.store import Store
    from vismem.pipelines.config import load_config
    from vismem.pipelines.runner import run

    store = Store.open(f"file://{tmp_path}/st")
    cfg = load_config(overrides={"stages": ["report"], "store": {"uri": store.uri}, "runs_dir": str(tmp_path / "runs")})
    key = f"runs/{cfg.run_id}/manifest.json"
    store.put_bytes(key, b'{"run_id": "x", "stages": {"rep')  # torn by an earlier run
    with caplog.at_level(logging.WARNING, logger="vismem"):
        run(cfg, progress=False)
    said = [r.getMessage() for r in caplog.records if key in r.getMessage()]
    assert len(said) == 1 and "manifest unreadable" in said[0] and "\n" not in said[0]
    assert store.get_json(key)["stages"]["report"]["status"] == "done"


def test_store_cat_selects_columns_and_prints_csv(tmp_path, capsys):
    import csv
    import io

    from vismem.core.store import Store
    from vismem.pipelines.cli import main

    uri = f"file://{tmp_path}/store"
    store = Store.open(uri)
    df = pl.DataFrame({"question_id": [f"q{i}" for i in range(30)], "hit": [i % 2 == 0 for i in range(30)],
                       "units": [[f"u{i}", "u,x"] for i in range(30)], "score": [i / 10 for i in range(30)]})
    store.write_table("runs/r/results/t.parquet", df.to_arrow())
    key = "runs/r/results/t.parquet"
    assert main(["store", "cat", key, "--store", uri, "--columns", "score,question_id,units", "--csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["score", "question_id", "units"] and len(rows) == 31  # --csv: every row by default
    assert rows[1] == ["0.0", "q0", '["u0", "u,x"]']  # a list as JSON, quoted as one field
    assert main(["store", "cat", key, "--store", uri, "--columns", "hit", "--rows", "3"]) == 0
    out = capsys.readouterr().out
    assert "hit" in out and "question_id" not in out and "30 rows x 1 columns (3 shown" in out
    assert main(["store", "cat", key, "--store", uri, "--columns", "questionid"]) == 2
    err = capsys.readouterr().err
    assert "no column 'questionid' (did you mean 'question_id'?)" in err and err.count("\n") == 1
    store.put_json("runs/r/manifest.json", {"a": 1})
    assert main(["store", "cat", "runs/r/manifest.json", "--store", uri, "--csv"]) == 2
    assert "apply to Parquet objects" in capsys.readouterr().err


def test_read_only_commands_on_a_local_s3_store_never_run_create_nothing(tmp_path, capsys, monkeypatch):
    """`vismem runs --config` of a config whose local-s3 store was never written (a typo'd
    runs_dir, a fresh checkout) reads it as empty: no runs dir, no weed data dir, exit 0."""
    from vismem.core.s3server import stale_servers
    from vismem.pipelines.cli import main

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "never run"
    (tmp_path / "cfg.yaml").write_text(f"name: ro\nstages: [encode]\nruns_dir: {runs}\n")
    for cmd in (["runs"], ["store", "ls"], ["report", "ro-0123456789", "--no-viewers"]):
        main([*cmd, "--config", str(tmp_path / "cfg.yaml")])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert main(["runs", "--config", str(tmp_path / "cfg.yaml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.yaml"] and stale_servers(runs / ".s3") == []
