"""The render job's input in bounded waves (issue 38 item 5): the memshot stage no longer builds
every session's JSON row of a LongMemEval_M-sized file at once."""

from __future__ import annotations

from vismem.pipelines.memshot import sessions
from vismem.pipelines.memshot.render import read_units, render_units, session_rows, shard_key


def test_waves_are_the_rows_cut_at_the_bound(small):
    rows = session_rows(small)
    sizes = [len(r["session_json"]) for r in rows]
    bound = max(sizes) + min(sizes) - 1  # every row fits, not every pair does
    waves = list(sessions.session_waves(small, wave_bytes=bound))
    assert [r for w in waves for r in w] == rows and 1 < len(waves) < len(rows)
    assert all(sum(len(r["session_json"]) for r in w) <= bound for w in waves)
    one = list(sessions.session_waves(small, wave_bytes=1))  # a session larger than the bound: its own wave
    assert [len(w) for w in one] == [1] * len(rows)


def test_waves_leave_out_finished_sessions(small):
    skip = {f"{small[0].conversation_id}/{s.session_id}" for s in small[0].sessions}
    left = [r for w in sessions.session_waves(small, skip) for r in w]
    assert {r["conversation_id"] for r in left} == {small[1].conversation_id}


def test_rendering_in_many_waves_writes_what_one_wave_writes(file_store, small, monkeypatch):
    one = render_units(file_store, small, "text-rag", None, "p/one", use_ray=False)
    monkeypatch.setattr(sessions, "WAVE_BYTES", 1)  # every session a wave of its own
    many = render_units(file_store, small, "text-rag", None, "p/many", use_ray=False)
    assert one["rendered_sessions"] == many["rendered_sessions"] == 6
    a, b = read_units(file_store, "p/one"), read_units(file_store, "p/many")
    cols = ["conversation_id", "session_id", "unit", "dia_ids", "text"]
    assert a.select(cols).equals(b.select(cols))
    again = render_units(file_store, small, "text-rag", None, "p/many", use_ray=False)
    assert again["skipped_sessions"] == 6 and again["rendered_sessions"] == 0
    assert shard_key("p", "c", "s") == "p/shards/c/s.json"


def test_a_small_longmemeval_file_stays_under_a_proportional_bound(tmp_path):
    """The 1 GB / 1.5 GB benchmark (memshot-lme-memory) at 1/50 of the size: growth of peak RSS
    over the stage's dataset path within 1.5x the file's size, waves within their bound."""
    from vismem.bench.longmemeval_load import synthetic_file
    from vismem.bench.memshot_lme_memory import measure

    path = synthetic_file(tmp_path / "lme.json", 20_000_000)
    wave = 20_000_000 * 64 // 1000  # 64 MB per 1 GB, as the real bound
    recs = {r["metric"]: r["value"] for r in measure(path, wave_bytes=wave, with_list=False)}
    file_mib = path.stat().st_size / (1 << 20)
    assert recs["sessions"] > 1000 and recs["waves"] >= 10
    assert recs["largest_wave_mb"] * 1e6 <= wave
    assert recs["peak_rss_mib"] - recs["start_rss_mib"] <= 1.5 * file_mib, recs
