"""Every stage entry of the manifest carries its peak memory beside its wall time (issue 18)."""

from __future__ import annotations


def test_stage_entries_record_peak_memory(file_store):
    from vismem.pipelines.manifest import Manifest

    m = Manifest(file_store, "peak-1")
    m.data = {"stages": {}}
    m.stage("catalog", "running")
    block = bytearray(64 << 20)
    block[::4096] = b"x" * len(block[::4096])  # resident
    m.stage("catalog", "done", summary={})
    del block
    m.stage("report", "running")
    m.stage("report", "failed", error="boom")
    stages = file_store.get_json("runs/peak-1/manifest.json")["stages"]
    cat, rep = stages["catalog"], stages["report"]
    assert cat["peak_rss_mib"] >= 64 and cat["tree_peak_mib"] > 0 and "wall_s" in cat
    assert rep["status"] == "failed" and 0 < rep["peak_rss_mib"] < cat["peak_rss_mib"]  # a new mark per stage
    assert m._watch is None  # no watcher thread left running
