"""probes.mode adaptive: units in a seeded order shared by the architectures, scored until the
stopping rule is met, the cells marked in results/adaptive.parquet; an adaptive run continued as
exhaustive re-scores none of its units."""

from __future__ import annotations

import polars as pl

from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run


def _cfg(tmp_path, **probes):
    return load_config(overrides={
        "name": "adaptive", "stages": ["encode", "replay", "probes"], "runs_dir": str(tmp_path / "runs"),
        "store": {"uri": f"file://{tmp_path}/store"}, "encode": {"chains": 1, "J": 4, "env": "http"},
        "memory": {"architectures": ["nomemory", "dualmem"],
                   "components": {"captioner": "catalogue", "visual_encoder": "pocket-clip"}},
        "probes": {"backends": ["scripted-recall"], "workers": 1, "on_ray": False, **probes}})


def test_adaptive_run_stops_early_marks_cells_and_continues_as_exhaustive(tmp_path, ray_local, dmv_seed):
    from vismem.core.store import Store
    from vismem.pipelines.dmv.probes import describe

    store = Store.open(f"file://{tmp_path}/store")
    # width 1: every interval qualifies, so the first round (min_units slots) is the whole run.
    cfg = _cfg(tmp_path, mode="adaptive", adaptive={"width": 1.0, "min_units": 2, "batch": 1})
    dmv_seed(cfg)  # the session's first three sessions and their features (tests/pipelines/conftest.py)
    out = run(cfg, progress=False)["probes"]
    assert out["status"] == "done" and out["adaptive"]["rounds"] == 1
    assert "adaptive: 4 of 6 units in 1 rounds" in describe(out)
    assert (out["units"], out["ran"], out["cached"]) == (2 * 2, 2 * 2, 0)  # 2 of 3 slots, both architectures
    cells = store.read_table(f"runs/{cfg.run_id}/results/adaptive.parquet")
    cells = cells if isinstance(cells, pl.DataFrame) else pl.from_arrow(cells)
    row = cells.filter(pl.col("architecture") == "dualmem").row(0, named=True)
    assert (row["units_probed"], row["units_eligible"], row["reason"]) == (2, 3, "width")
    assert row["probes_probed"] < row["probes_eligible"] and row["low"] <= row["estimate"] <= row["high"]
    probes = store.read_table(out["results"])
    probes = probes if isinstance(probes, pl.DataFrame) else pl.from_arrow(probes)
    slots = {a: set(df.select("seed", "recall_session").unique().iter_rows())
             for (a,), df in probes.group_by(["architecture"])}
    assert slots["nomemory"] == slots["dualmem"] and len(slots["dualmem"]) == 2  # one shared draw order
    assert probes.select("seed", "recall_session").n_unique() == 2

    # The same config again reads its cached units; continued as exhaustive it re-scores none.
    again = run(cfg, progress=False)["probes"]
    assert (again["ran"], again["cached"]) == (0, 4)
    full = run(_cfg(tmp_path), progress=False)["probes"]
    assert (full["units"], full["ran"], full["cached"]) == (6, 2, 4) and "adaptive" not in full
