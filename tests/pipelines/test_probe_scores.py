"""Per-channel scores in the probe cache: a column of their own beside the step log, readable
next to units written before the column existed."""

from __future__ import annotations

import json

import polars as pl

from vismem.core.store import parquet_bytes
from vismem.pipelines.dmv.probecache import SCHEMA_VERSION, ProbeCache, probe_rows_table, read_units

ROW = {"probe_id": "s0_r1_p00", "at_session": 1, "target_session": 0, "reach": 1, "target_hash": "aa", "cue": "red ball",
       "target_url": "/product/aa", "final_url": "/product/aa", "correct": True, "steps": 1, "vlm_calls": 1,
       "log": [{"step": 1, "url": "/", "status": "ok", "recalled": ["aa"]}]}


def test_scores_column_beside_an_unchanged_log(file_store):
    scores = [[{"visual": 0.5, "verbal": None, "fused": 0.7}]]
    new = probe_rows_table([{**ROW, "scores": scores}])
    old = probe_rows_table([ROW])
    assert new["log"].to_list() == old["log"].to_list() == [json.dumps(ROW["log"])]
    assert json.loads(new["scores"][0]) == scores and json.loads(old["scores"][0]) == []
    ProbeCache(file_store, "chain", 0, "dualmem--k").write("ex", 1, [{**ROW, "scores": scores}], meta={})
    # A unit committed before the column existed: the same rows without it.
    legacy = ProbeCache(file_store, "chain", 0, "textonly--k")
    legacy.units.commit("ex/s1", {".parquet": parquet_bytes(old.drop("scores"), schema_version=SCHEMA_VERSION)},
                        {"probes": 1})
    both = read_units(file_store, [("chain", 0, "dualmem--k", "ex", 1), ("chain", 0, "textonly--k", "ex", 1)])
    assert both.height == 2 and both["arch_key"].to_list() == ["dualmem--k", "textonly--k"]
    assert both["scores"].to_list()[0] == json.dumps(scores) and both["scores"].to_list()[1] is None
    assert both.select(pl.col("log")).n_unique() == 1
