"""Every stage entry of the manifest carries its peak memory beside its wall time (issue 18)."""

from __future__ import annotations

import mmap


def test_stage_entries_record_peak_memory(file_store):
    from vismem.pipelines.manifest import Manifest

    m = Manifest(file_store, "peak-1")
    m.data = {"stages": {}}
    m.stage("catalog", "running")
    # Anonymous mmap, not a bytearray: in a long-lived worker malloc may serve 96 MiB from heap
    # pages already resident, so the high-water mark would not move.
    block = mmap.mmap(-1, 96 << 20)
    for off in range(0, len(block), 4096):  # touch every page: resident
        block[off] = 1
    m.stage("catalog", "done", summary={})
    block.close()
    m.stage("report", "running")
    m.stage("report", "failed", error="boom")
    stages = file_store.get_json("runs/peak-1/manifest.json")["stages"]
    cat, rep = stages["catalog"], stages["report"]
    assert cat["peak_rss_mib"] >= 64 and cat["tree_peak_mib"] > 0 and "wall_s" in cat
    assert rep["status"] == "failed" and 0 < rep["peak_rss_mib"] < cat["peak_rss_mib"]  # a new mark per stage
    assert m._watch is None  # no watcher thread left running
