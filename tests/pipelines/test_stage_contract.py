"""The stage contract: stages declare the files they read and describe their own summaries; the
run config and the end-of-run summary ask them instead of keeping per-stage tables."""

from __future__ import annotations

import dataclasses

from vismem.pipelines import stage as stage_mod
from vismem.pipelines.config import load_config
from vismem.pipelines.stage_order import STAGE_MODULES, STAGE_ORDER
from vismem.pipelines.summary import stage_rows


def test_stage_table_names_every_stage_in_run_order():
    assert STAGE_ORDER == ("memshot", "catalog", "encode", "replay", "probes", "report")
    for name in STAGE_ORDER:
        st = stage_mod.get_stage(name)
        assert st.name == name and STAGE_MODULES[name] == st.run.__module__


def test_input_files_are_what_the_enabled_stages_declare(monkeypatch, tmp_path):
    cfg = load_config()
    base_id = cfg.run_id
    assert set(cfg.input_files()) == {"memshot.dataset", "dmv-bench/seed_v2.json", "dmv-bench/cue_registry.json"}
    extra = tmp_path / "extra.bin"
    extra.write_bytes(b"one")
    real = stage_mod.get_stage

    def patched(name):
        st = real(name)
        if name == "report":  # a stage that read nothing now declares a file
            return dataclasses.replace(st, inputs=lambda config, data_dir: {"report.extra": extra})
        return st

    monkeypatch.setattr(stage_mod, "get_stage", patched)
    first = load_config()
    assert first.input_files()["report.extra"] == extra
    first_id = first.run_id
    assert first_id != base_id
    extra.write_bytes(b"two")  # its content enters the run id like any declared input
    assert load_config().run_id not in (first_id, base_id)
    off = load_config(overrides={"report": {"enabled": False}})
    assert "report.extra" not in off.input_files()


def test_summary_lines_come_from_each_stage():
    results = {"catalog": {"status": "ok", "variants": 1000, "generated": 10, "skipped": 990},
               "encode": {"status": "partial", "sessions": 4, "ran": 1, "cached": 2, "failed": [{"j": 3}]},
               "report": {"status": "disabled"}, "_partial": ["encode"]}
    rows = {r["stage"]: r for r in stage_rows(results, None)}
    assert rows["catalog"]["what"] == "1,000 products: 10 images generated, 990 reused"
    assert rows["encode"]["what"] == "4 sessions: 1 browsed, 2 reused, 1 failed"
    assert rows["report"]["what"] == "disabled in the config"
    assert set(rows) == {"catalog", "encode", "report"}


def test_the_report_shows_its_own_stage_done(monkeypatch, file_store, tmp_path):
    # The report is written while its stage runs: the manifest it shows must not say "running"
    # (readers see it after the stage ends).
    import logging

    from vismem.pipelines.context import RunContext
    from vismem.pipelines.manifest import Manifest
    from vismem.pipelines.report import stage as report_stage

    cfg = load_config(overrides={"stages": ["report"]})
    man = Manifest(file_store, cfg.run_id)
    man.begin(cfg, seeds={"root": 0})
    man.stage("report", "running")
    seen = {}

    def fake_build(store, run_id, *, options, manifest=None, viewers=True, config=None):
        seen["manifest"] = manifest
        return {"html": "x", "found": [], "viewers": {}}

    monkeypatch.setattr(report_stage, "build", fake_build)
    report_stage.run(RunContext(config=cfg, store=file_store, run_dir=tmp_path, manifest=man,
                                logger=logging.getLogger("t")))
    assert seen["manifest"]["stages"]["report"]["status"] == "done"
    assert man.data["stages"]["report"]["status"] == "running"  # the live manifest is untouched
