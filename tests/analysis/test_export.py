"""Per-sample export records: the lead fields, retrieved top-k units, one record per item and variant."""

from __future__ import annotations

import csv
import io
import json

import polars as pl

from vismem.analysis import synthetic
from vismem.analysis.export import LEAD, dmv_samples, sample_parts, samples, to_csv, to_jsonl


def _ranked() -> pl.DataFrame:
    # Ranks given out of order: the export sorts by rank.
    return pl.DataFrame({"variant": ["memshot"] * 6, "conversation_id": ["conv-0"] * 6, "question_id": ["q0"] * 6,
                         "rank": [3, 1, 2, 6, 5, 4], "unit_id": ["u3", "u1", "u2", "u6", "u5", "u4"],
                         "score": [0.5] * 6})


def test_memshot_records_carry_prediction_verdict_and_top_k_units():
    ans = synthetic.memshot_answers(questions=2, conversations=1, ks=(2, 5))
    rec = synthetic.memshot_recall(questions=2, ks=(2, 5))
    parts = sample_parts({"memshot_answers": ans, "memshot_recall": rec}, _ranked())
    assert len(parts) == 1 and parts[0].height == ans.height
    df = parts[0]
    assert tuple(df.columns[:len(LEAD)]) == LEAD
    q0 = df.filter((pl.col("item_id") == "q0") & (pl.col("variant") == "memshot"))
    assert q0.filter(pl.col("k") == 2)["retrieved"].to_list() == [["u1", "u2"]]
    assert q0.filter(pl.col("k") == 5)["retrieved"].to_list() == [["u1", "u2", "u3", "u4", "u5"]]
    src = ans.filter((pl.col("question_id") == "q0") & (pl.col("variant") == "memshot") & (pl.col("k") == 2))
    r = q0.filter(pl.col("k") == 2).row(0, named=True)
    assert (r["item"], r["prediction"], r["gold"], r["verdict"]) == (
        "question 0?", src["prediction"][0], src["answer"][0], src["judge_label"][0])
    want_recall = rec.filter((pl.col("question_id") == "q0") & (pl.col("variant") == "memshot") & (pl.col("k") == 2))
    assert r["recall"] == want_recall["recall"][0]
    # A variant the ranking lacks: retrieved is null, not empty.
    assert df.filter(pl.col("variant") == "text_rag")["retrieved"].null_count() == df.filter(
        pl.col("variant") == "text_rag").height


def test_probe_records_one_per_probe_and_architecture():
    probes = synthetic.probes(backends=("toy",), Js=(3,), chains=1)
    df = samples({"probes": probes})
    assert df.height == probes.height and set(df["benchmark"]) == {"dmv"}
    first = df.row(0, named=True)
    assert (first["item_id"], first["variant"], first["prediction"], first["gold"], first["verdict"]) == (
        probes["probe_id"][0], probes["architecture"][0], probes["final_url"][0], probes["target_url"][0],
        probes["correct"][0])
    assert first["setting"] == "default"  # the ablation label, renamed


def test_jsonl_keeps_each_benchmarks_fields_and_csv_flattens_lists():
    tables = {"memshot_recall": synthetic.memshot_recall(questions=1, ks=(2,)),
              "probes": synthetic.probes(backends=("toy",), Js=(2,), chains=1)}
    parts = sample_parts(tables, _ranked())
    lines = [json.loads(x) for x in to_jsonl(parts).decode().splitlines()]
    assert len(lines) == sum(p.height for p in parts)
    ms = [x for x in lines if x["benchmark"] == "memshot"]
    assert ms[0]["retrieved"] == ["u1", "u2"] and "reach" not in ms[0]
    assert all("conversation_id" not in x for x in lines if x["benchmark"] == "dmv")
    rows = list(csv.DictReader(io.StringIO(to_csv(samples(tables, _ranked())).decode())))
    assert len(rows) == len(lines) and rows[0]["retrieved"] == "u1 u2"


def test_probe_records_carry_what_the_first_recall_step_recalled_and_the_targets_rank():
    probes = synthetic.probes(backends=("toy",), Js=(2,), chains=1).head(3)
    target = probes["target_url"][0].rsplit("/", 1)[-1]
    recalled = [["p9", target, "p7"], ["p9"], None]
    df = dmv_samples(probes.with_columns(pl.Series("retrieved", recalled, dtype=pl.List(pl.String))))
    assert df["retrieved"].to_list() == recalled
    assert df["target_rank"].to_list() == [2, None, None]  # not recalled / not read: no rank
    # A query string on the target URL does not hide it.
    q = probes.head(1).with_columns(pl.col("target_url") + "?from=memory",
                                    pl.Series("retrieved", [[target]], dtype=pl.List(pl.String)))
    assert dmv_samples(q)["target_rank"].to_list() == [1]
    bare = dmv_samples(probes)  # no logs read: both null
    assert bare["retrieved"].null_count() == bare["target_rank"].null_count() == 3
