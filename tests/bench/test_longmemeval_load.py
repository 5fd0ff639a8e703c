"""The LongMemEval_M loading benchmark at a small size: file of the asked size, its records, the target."""

from __future__ import annotations

from vismem.bench.harness import load_all
from vismem.bench.longmemeval_load import NAME, TARGET_RSS_MIB, measure, synthetic_file


def test_registered_with_the_bench_command():
    assert NAME in load_all()


def test_small_file_streams_under_the_target(tmp_path):
    shape = {"sessions_per_question": 20, "turns_per_session": 4, "words_per_turn": 20, "pool_size": 50}
    path = synthetic_file(tmp_path / "m.json", 300_000, **shape)
    size = path.stat().st_size
    assert 300_000 <= size < 400_000  # stops at the first record past the asked size
    recs = {r["metric"]: r for r in measure(path)}
    peak = recs["stream_peak_rss_mib"]
    assert peak["target"] == TARGET_RSS_MIB and 0 < peak["value"] < TARGET_RSS_MIB
    assert recs["records"]["value"] >= 10 and recs["file_mb"]["value"] == size / 1e6
    assert recs["duplicate_sessions"]["value"] == -(-recs["records"]["value"] // 4)  # every 4th record
    assert recs["list_peak_rss_mib"]["value"] > 0
    assert synthetic_file(path, 1000) == path and path.stat().st_size == size  # an existing file is reused
