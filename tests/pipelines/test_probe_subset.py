"""The probes stage runs named (ablation) architectures on a chain subset (probes.ablation_chains),
as the paper's Table 4: subset and full-set runs share their probe units, nothing is probed twice,
and Table 4 shows the subset beside the full set."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.core.errors import ConfigError
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run

ARCHS = ["nomemory", "dualmem", "dualmem-vis"]


def _cfg(tmp_path, **probes):
    return load_config(overrides={
        "name": "subset", "stages": ["encode", "replay", "probes"], "runs_dir": str(tmp_path / "runs"),
        "store": {"uri": f"file://{tmp_path}/store"}, "encode": {"chains": 2, "J": 3, "env": "http"},
        "memory": {"architectures": ARCHS, "components": {"captioner": "catalogue", "visual_encoder": "pocket-clip"}},
        "probes": {"backends": ["scripted-recall"], "workers": 1, "ablation_architectures": ["dualmem-vis"], **probes}})


def _table(tmp_path, cfg, out):
    from vismem.core.store import Store

    return Store.open(f"file://{tmp_path}/store").read_table(out["probes"]["results"])


def test_ablation_architectures_run_on_the_subset_and_share_units_with_the_full_set(tmp_path, ray_local, dmv_seed):
    per_chain = 3 - 1  # exhaustive units per (chain, architecture): recall sessions 1..J-1
    sub_cfg = _cfg(tmp_path, ablation_chains=1)
    dmv_seed(sub_cfg)  # the session's browsed chains and features (tests/pipelines/conftest.py)
    sub = run(sub_cfg, progress=False)
    assert (sub["encode"]["ran"], sub["encode"]["cached"]) == (0, 2 * 3)
    pr = sub["probes"]
    # nomemory and dualmem on both chains, dualmem-vis on chain 0 only
    assert (pr["units"], pr["ran"], pr["cached"]) == ((2 * 2 + 1) * per_chain, (2 * 2 + 1) * per_chain, 0)
    assert pr["ablation_chains"] == {"seeds": [0], "architectures": ["dualmem-vis"]}
    df = _table(tmp_path, sub_cfg, sub)
    seeds = dict(df.group_by("architecture").agg(pl.col("seed").unique().sort()).iter_rows())
    assert seeds == {"nomemory": [0, 1], "dualmem": [0, 1], "dualmem-vis": [0]}

    # The full set reuses every subset unit and probes only dualmem-vis on chain 1.
    full_cfg = _cfg(tmp_path)
    full = run(full_cfg, progress=False)["probes"]
    assert (full["units"], full["ran"], full["cached"]) == (3 * 2 * per_chain, per_chain, (2 * 2 + 1) * per_chain)
    assert "ablation_chains" not in full
    fdf = _table(tmp_path, full_cfg, {"probes": full})
    cols = ["architecture", "seed", "probe_id", "correct", "final_url", "bank_size"]
    on_sub = fdf.filter(pl.col("seed") == 0).select(cols).sort(cols[:3])
    assert on_sub.equals(df.filter(pl.col("seed") == 0).select(cols).sort(cols[:3]))  # the same probes, same answers

    # A subset named by chain index reads cached units only; 0 chains drops the ablation rows.
    again = run(_cfg(tmp_path, ablation_chains=[1]), progress=False)["probes"]
    assert (again["ran"], again["cached"], again["ablation_chains"]["seeds"]) == (0, (2 * 2 + 1) * per_chain, [1])
    none_cfg = _cfg(tmp_path, ablation_chains=0)
    none = run(none_cfg, progress=False)
    assert none["probes"]["units"] == 2 * 2 * per_chain and none["probes"]["ran"] == 0
    assert "dualmem-vis" not in _table(tmp_path, none_cfg, none)["architecture"].to_list()

    # A truncated probe unit is named in one line, discarded and probed again (the run says so).
    from vismem.core.store import Store
    from vismem.pipelines.dmv.probes import describe

    store = Store.open(f"file://{tmp_path}/store")
    key = sorted(k for k in store.iter_keys("probes") if k.endswith(".parquet"))[-1]
    good = store.get_bytes(key)
    store.put_bytes(key, good[: len(good) // 2])
    healed = run(_cfg(tmp_path), progress=False)["probes"]
    assert (healed["healed"], healed["ran"], healed["cached"]) == (1, 1, 3 * 2 * per_chain - 1)
    assert pl.read_parquet(store.get_bytes(key)).drop_nulls("probe_id").height == pl.read_parquet(good).height
    assert "1 damaged units redone" in describe(healed)

    # Table 4 of the subset run: the subset column is chain 0, dualmem-vis has no full-set value.
    from vismem.analysis.dmv_table4 import subset_caption, table4

    t4 = table4(df, n_resamples=100)
    vis = t4.filter(pl.col("architecture") == "dualmem-vis").row(0, named=True)
    dual = t4.filter(pl.col("architecture") == "dualmem").row(0, named=True)
    assert (vis["n_chains_subset"], vis["n_chains"], vis["tsr"]) == (1, None, None)
    assert (dual["n_chains_subset"], dual["n_chains"]) == (1, 2) and dual["tsr"] is not None
    assert subset_caption(df) == "seeds 0 (1 chain)"


def test_a_bad_subset_is_named_before_any_work(tmp_path):
    from vismem.pipelines.dmv.probes import check

    with pytest.raises(ConfigError, match=r"probes.ablation_chains: chain index 2 is not among the run's 2 chains"):
        check(_cfg(tmp_path, ablation_chains=[0, 2]))
    with pytest.raises(ConfigError, match=r"probes.ablation_architectures\[0\]: unknown architecture 'dualmem-vsi'"):
        check(_cfg(tmp_path, ablation_chains=1, ablation_architectures=["dualmem-vsi"]))
    with pytest.raises(ConfigError, match="probes.ablation_chains"):
        _cfg(tmp_path, ablation_chains=[])


def test_the_paper_preset_probes_its_ablations_on_seven_chains_and_local_on_all():
    paper = load_config(preset="paper")
    assert paper.probes.ablation_chains == 7 and "dualmem-verb" in paper.probes.ablation_architectures
    assert not {"dualmem", "dualmem-a0.5", "dualmem-clip"} & set(paper.probes.ablation_architectures)
    from vismem.pipelines.dmv.protocol import ablation_seeds

    assert ablation_seeds(paper) == list(range(7))
    assert load_config(preset="local").probes.ablation_chains is None
