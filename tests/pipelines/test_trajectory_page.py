"""The trajectory viewer built from a run's caches: a sampled page says so, keeps its probes'
step logs and channel scores, and hands its images back as files."""

from __future__ import annotations

import base64
import gzip
import json
import re

from tests.analysis.test_viewer import _write_trajectories


def _probes_block(html: str) -> dict:
    raw = re.search(r'<script type="application/json" id="vprobes">(.*?)</script>', html).group(1)
    return json.loads(raw)


def test_sampled_page_states_the_sample_and_keeps_logs(file_store, monkeypatch):
    from vismem.pipelines.report import viewers

    _write_trajectories(file_store, "tp-1")
    from vismem.analysis.report import load_results

    tables, _ = load_results(file_store, "runs/tp-1")
    monkeypatch.setattr(viewers, "MAX_PROBE_LOGS", 1)
    assets: dict[str, bytes] = {}
    html = viewers.trajectory_page(file_store, "tp-1", tables, seed=3, assets=assets)
    assert "Probes: a seeded sample of 1 of 2 (1 per architecture x reach; 1 of 2 episodes)." in html
    data = _probes_block(html)
    (g,) = data["groups"]
    chunk = json.loads(gzip.decompress(base64.b64decode(g["z"])))
    assert chunk["logs"]["dualmem"][0]["memory"].startswith(f"MEMORY seed {g['seed']}")
    assert chunk["logs"]["dualmem"][0]["scores"][0] == {"visual": 0.91, "verbal": 0.5, "fused": 0.8}
    assert chunk["entries"]["dualmem"][f"{g['seed']}0abcdef"]["text"].startswith("Memory (product page")
    assert data["pairs"] == {}  # one architecture: no pairs
    assert assets and all(k.startswith("img/") for k in assets) and "data:image" not in html
    # The same seed, the same probe; the whole run fits the default budget.
    again = viewers.trajectory_page(file_store, "tp-1", tables, seed=3, assets={})
    assert _probes_block(again)["groups"][0]["k"] == g["k"]
    monkeypatch.setattr(viewers, "MAX_PROBE_LOGS", 6000)
    whole = viewers.trajectory_page(file_store, "tp-1", tables, seed=3, assets={})
    assert "seeded sample" not in whole and len(_probes_block(whole)["groups"]) == 2


def test_a_damaged_image_is_shown_missing_and_the_page_still_builds(file_store, caplog):
    """A blob whose bytes no longer match its key raises on read (the store checks it); the viewer
    leaves that one image out, names it in the log, and builds the rest."""
    from vismem.analysis.report import load_results
    from vismem.pipelines.report import viewers

    products = _write_trajectories(file_store, "tp-2")
    tables, _ = load_results(file_store, "runs/tp-2")
    whole: dict[str, bytes] = {}
    viewers.trajectory_page(file_store, "tp-2", tables, seed=3, assets=whole)
    bad = sorted(products.values())[0]
    file_store.put_bytes(bad, b"not the image its key names")
    assets: dict[str, bytes] = {}
    with caplog.at_level("WARNING", logger="vismem"):
        html = viewers.trajectory_page(file_store, "tp-2", tables, seed=3, assets=assets)
    assert "<html" in html.lower() and len(assets) == len(whole) - 1
    assert any(bad in r.getMessage() and "shown as missing" in r.getMessage() for r in caplog.records)
