"""The trajectory-viewer benchmark at a small size: registered, its page written with image
files beside it, opened in Chromium, the sample stated."""

from __future__ import annotations

from vismem.bench.harness import load_all
from vismem.bench.trajectory_viewer import NAME, build, open_times, synthetic_run


def test_registered_with_the_bench_command():
    assert NAME in load_all()


def test_small_run_builds_and_opens(tmp_path, chromium_path, monkeypatch):
    from vismem.pipelines.report import viewers

    steps, probes, _, _ = synthetic_run(0, backends=1, chains=2, J=4, steps=5, architectures=3)
    assert steps.height == 2 * 4 * 5 and probes["architecture"].n_unique() == 3
    # Exhaustive probes of a J=4 chain with 8 products a session: 8 * (1 + 2 + 3) per chain and architecture.
    assert probes.height == 2 * 3 * 8 * 6
    monkeypatch.setattr(viewers, "MAX_PROBE_LOGS", 60)  # force a sample
    page, info = build(tmp_path, backends=1, chains=2, J=4, steps=5, architectures=3)
    assert info["sampled_episodes"] <= 60 < info["episodes"] and info["per_stratum"] >= 1
    html = page.read_text()
    assert "data:image" not in html and any((tmp_path / "img").iterdir())
    assert f"a seeded sample of {info['sampled_probes']} of {info['probes']} ({info['per_stratum']} per architecture x reach" in html
    opened, probe, cpu = open_times(page, chromium_path)
    assert 0 < opened < 60 and 0 < probe < 60 and 0 < cpu < 60
