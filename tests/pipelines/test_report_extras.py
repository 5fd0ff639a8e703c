"""The report's DMV-Bench side tables from a real run: Table 7 and the caption cue-verbalisation rate
computed from the captions the replay stage stored."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run


def test_table7_and_the_cue_rate_come_from_the_run(tmp_path, ray_local):
    from vismem.analysis.captions import cue_verbalisation
    from vismem.pipelines.dmv.chains import chain_observations, plan_chains
    from vismem.pipelines.report.dmv_extras import architectures_frame, captions_frame

    over = {"runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"}, "name": "extras",
            "stages": ["encode", "replay", "report"], "encode": {"chains": 1, "J": 3, "env": "http"},
            "memory": {"architectures": ["caption", "textonly", "nomemory"], "components": {"captioner": "catalogue"}},
            "report": {"n_resamples": 200}}
    cfg = load_config(overrides=over)
    out = run(cfg, progress=False)
    assert out["report"]["status"] == "done" and "extra_errors" not in out["report"], out["report"]
    store = Store.open(f"file://{tmp_path}/store")
    t7 = architectures_frame(cfg)
    assert t7["architecture"].to_list() == ["caption", "textonly", "nomemory"]
    cap = t7.row(0, named=True)
    assert cap["encode"] == "text embedding (minilm), caption (catalogue/caption)"
    assert (cap["retrieve"], cap["inject"]) == ("verbal", "caption") and t7.row(2, named=True)["encode"] == "nothing"
    caps = captions_frame(store, cfg)
    visited = {o.url_hash for c in plan_chains(cfg) for o in chain_observations(store, c, 3)}
    assert caps.height == len(visited) > 0 and caps["caption"].null_count() == 0
    assert caps["captioner"].unique().to_list() == ["catalogue/caption"]
    rate = cue_verbalisation(caps)
    html = store.get_bytes(f"runs/{cfg.run_id}/report/index.html").decode()
    assert 'id="tbl-table7"' in html and 'id="tbl-cue-verbalisation"' in html
    csv = pl.read_csv(store.get_bytes(f"runs/{cfg.run_id}/report/tables/cue-verbalisation.csv"))
    assert csv["n"].item() == rate["n"].item() == caps.height and csv["paper"].item() == pytest.approx(16.5)  # percent, as the page shows it
