"""The replay and probes stages end to end on real parts: scripted encoding chains through the
HTTP shop on local Ray, features computed once into the store, banks replayed for every
configured architecture, recall probes on Ray actors, the `probes` result table, caching."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run

ARCHS = ["nomemory", "textonly", "dualmem", "dualmem-vis"]


def _cfg(tmp_path, **over):
    base = {"name": "memtest", "stages": ["encode", "replay", "probes"], "runs_dir": str(tmp_path / "runs"),
            "store": {"uri": f"file://{tmp_path}/store"},
            "encode": {"chains": 1, "J": 3, "env": "http"},
            "memory": {"architectures": ARCHS, "components": {"captioner": "catalogue", "visual_encoder": "pocket-clip"}},
            "probes": {"backends": ["scripted-recall"], "workers": 1}}
    for k, v in over.items():
        base[k] = {**base[k], **v} if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return load_config(overrides=base)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, ray_local, dmv_seed):
    """The module's run (encode, replay, probes) on a store holding the session's browsed chain and
    its features (tests/pipelines/conftest.py): encode and the features are read from the cache,
    the banks and probes are this run's. The replay that computed the features is ``dmv_replayed``."""
    tmp = tmp_path_factory.mktemp("mem")
    cfg = _cfg(tmp)
    dmv_seed(cfg)
    out = run(cfg, progress=False)
    assert (out["encode"]["ran"], out["encode"]["cached"]) == (0, cfg.encode.J)  # the session's chain
    return tmp, cfg, out


def test_banks_follow_the_replay_rules(first_run, dmv_replayed):
    from vismem.core.store import Store

    tmp, cfg, out = first_run
    rep = out["replay"]
    assert rep["status"] == "done" and rep["chains"] == 1 and rep["architectures"] == ARCHS
    assert rep["features"]["failed"] == 0
    # the features were computed by the session's replay of these architectures and components
    assert dmv_replayed.cfg.memory == cfg.memory and dmv_replayed.out["architectures"] == ARCHS
    feats = dmv_replayed.out["features"]
    assert feats["computed"]["caption"] > 0 and feats["computed"]["image_embedding"] > 0 and feats["failed"] == 0
    banks = Store.open(f"file://{tmp}/store").read_table(f"runs/{cfg.run_id}/results/banks.parquet")
    nomem = banks.filter(pl.col("architecture") == "nomemory")
    assert nomem["bank_size"].to_list() == [0, 0, 0]
    dual = banks.filter(pl.col("architecture") == "dualmem").sort("j")
    sizes = dual["bank_size"].to_list()
    assert sizes == sorted(sizes) and sizes[0] > 0 and sum(dual["new_entries"]) == sizes[-1]
    # every architecture with a bank holds the same products (dedup is the replay's, not theirs)
    assert banks.filter(pl.col("architecture") != "nomemory").group_by("j").agg(
        pl.col("bank_size").n_unique().alias("n"))["n"].to_list() == [1, 1, 1]
    assert dual["label"][0].startswith("dualmem [") and "(stand-in)" in dual["label"][0]
    # What each architecture wrote: one entry per banked product, rendered by its injector.
    from vismem.pipelines.dmv.protocol import BANK_ENTRIES_KEY

    entries = Store.open(f"file://{tmp}/store").read_table(f"runs/{cfg.run_id}/{BANK_ENTRIES_KEY}")
    assert entries.filter(pl.col("architecture") == "nomemory").height == 0
    d = entries.filter(pl.col("architecture") == "dualmem").sort("position")
    assert d.height == sizes[-1] and d["position"].to_list() == list(range(sizes[-1]))
    assert d["session"].min() == 1 and all(c and c in w for c, w in zip(d["caption"], d["written"]))
    t = entries.filter(pl.col("architecture") == "textonly")
    assert t.height == sizes[-1] and all(w.startswith("Memory (verbal channel only)") for w in t["written"])
    # Probe steps recorded the channel scores of every recalled item (the visual-only ablation: one channel).
    import json

    from vismem.pipelines.dmv.probecache import read_units

    units = [tuple(p.parts[-5:-2]) for p in (tmp / "store" / "probes").rglob("*.done.json")]
    assert units
    raw = read_units(Store.open(f"file://{tmp}/store"), [(s, int(sd), k, "ex", 1) for s, sd, k in units
                                                        if (tmp / "store" / "probes" / s / sd / k / "ex" / "s1.done.json").exists()])
    by_arch = {k.split("--")[0]: json.loads(v) for k, v in zip(raw["arch_key"], raw["scores"])}
    assert set(by_arch["dualmem"][0][0]) == {"visual", "verbal", "fused"}
    assert set(by_arch["dualmem-vis"][0][0]) == {"visual", "fused"} and by_arch["nomemory"][0] == []


def test_probes_table_counts_and_no_memory_scores_zero(first_run):
    from vismem.analysis.schemas import validate
    from vismem.core.store import Store
    from vismem.pipelines.dmv.chains import chain_steps, plan_chains

    tmp, cfg, out = first_run
    pr = out["probes"]
    assert pr["status"] == "done" and pr["ran"] == pr["units"] == len(ARCHS) * (cfg.encode.J - 1)
    store = Store.open(f"file://{tmp}/store")
    df = validate(store.read_table(f"runs/{cfg.run_id}/results/probes.parquet"), "probes")
    steps = chain_steps(store, plan_chains(cfg)[0], cfg.encode.J)
    sizes = [steps.filter((pl.col("j") == j) & pl.col("url_hash").is_not_null())["url_hash"].n_unique()
             for j in range(cfg.encode.J)]
    from vismem.agents.probes import exhaustive_count

    main = df.filter(pl.col("study") == "main")
    per_arch = main.group_by("architecture").len()
    assert set(per_arch["len"].to_list()) == {exhaustive_count(sizes)}
    assert main.filter(pl.col("architecture") == "nomemory")["correct"].sum() == 0
    # bank size is the probe's (distinct products up to the recall session), NoMemory included
    seen = [len(set().union(*(set(steps.filter((pl.col("j") == i) & pl.col("url_hash").is_not_null())["url_hash"])
                              for i in range(j)))) for j in range(1, cfg.encode.J + 1)]
    assert {(r, b) for r, b in df.select("recall_session", "bank_size").unique().iter_rows()} == \
        {(j, seen[j - 1]) for j in df["recall_session"].unique().to_list()}
    assert (df["reach"] == df["recall_session"] - df["visit_session"]).all()
    assert (df["visit_session"] <= cfg.encode.J - 1).all()           # the last session is never a target
    assert df["target_cue"].str.contains(" ").all() and df["backend"].str.contains("stand-in").all()
    ab = df.filter(pl.col("study") == "ablation")
    assert ab["architecture"].unique().to_list() == ["dualmem-vis"] and ab["variant"][0].startswith("alpha=1.0")
    sweep = df.filter(pl.col("study") == "alpha_sweep")                # the headline DualMem is the 0.75 point
    assert sweep["architecture"].unique().to_list() == ["dualmem"] and sweep["alpha"].unique().to_list() == [0.75]
    # the scripted policy opens the first recalled product: a correct probe ends on the target
    ok = df.filter(pl.col("correct"))
    assert (ok["final_url"] == ok["target_url"]).all()
    assert df.filter(~pl.col("correct"))["failure"].is_not_null().all()
    # The paper's central contrast, locally with pocket-clip (the shipped stand-in for SigLIP-2):
    # visual memory recalls the incidental cue, the verbal channel ("a chair") cannot.
    tsr = dict(main.group_by("architecture").agg(pl.col("correct").mean()).iter_rows())
    vis = df.filter(pl.col("architecture") == "dualmem-vis")["correct"].mean()
    assert tsr["dualmem"] >= 0.8 and vis >= 0.8 and tsr["textonly"] <= 0.35, (tsr, vis)


def test_second_run_recomputes_nothing_and_a_new_architecture_runs_only_its_units(first_run):
    tmp, cfg, first = first_run
    again = run(cfg, progress=False)
    assert again["replay"]["features"]["computed"] == {}
    assert again["probes"]["ran"] == 0 and again["probes"]["cached"] == first["probes"]["units"]
    more = _cfg(tmp, memory={"architectures": ARCHS + ["caption"]})
    out = run(more, progress=False)["probes"]
    assert out["ran"] == cfg.encode.J - 1 and out["cached"] == first["probes"]["units"]
    assert "caption@J3" in out["tsr"]


# the missing sessions are found as the stage starts, once Ray is up: the session's, not a start of its own
@pytest.mark.usefixtures("ray_local")
def test_bad_architecture_and_missing_sessions_fail_before_any_work(tmp_path):
    from vismem.core.errors import ConfigError

    with pytest.raises(ConfigError, match="memory.architectures\\[0\\]: unknown memory 'nope'"):
        run(_cfg(tmp_path, memory={"architectures": ["nope"]}), progress=False)
    assert not (tmp_path / "store").exists()
    cfg = _cfg(tmp_path, stages=["replay"])
    with pytest.raises(ConfigError, match="run the encode stage first"):
        run(cfg, progress=False)


def test_sigkill_mid_probes_then_rerun_gives_the_same_table_and_no_duplicates(first_run, tmp_path):
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import time

    import yaml

    from vismem.core.store import Store

    src, cfg, _ = first_run
    ref = Store.open(f"file://{src}/store").read_table(f"runs/{cfg.run_id}/results/probes.parquet")
    shutil.copytree(src / "store", tmp_path / "store")
    shutil.rmtree(tmp_path / "store" / "probes")
    (tmp_path / "store" / "runs" / cfg.run_id / "results" / "probes.parquet").unlink()
    data = cfg.model_dump(mode="json")
    data.update(store={"uri": f"file://{tmp_path}/store"}, runs_dir=str(tmp_path / "runs"), stages=["probes"])
    data["probes"]["on_ray"] = False  # one in-process worker: the kill lands inside a unit
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    cmd = [sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    probes_dir = tmp_path / "store" / "probes"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(probes_dir.rglob("*.done.json"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    n_done = len(list(probes_dir.rglob("*.done.json")))
    assert 2 <= n_done < len(ref["architecture"].unique()) * (cfg.encode.J - 1), "kill landed outside the run"
    # The re-run is about the store the kill left, not about a process: in this one, on its Ray.
    rerun_cfg = load_config(tmp_path / "cfg.yaml")
    done = run(rerun_cfg, progress=False)
    assert "_partial" not in done and done["probes"]["status"] == "done", done
    rid = rerun_cfg.run_id
    again = Store.open(f"file://{tmp_path}/store").read_table(f"runs/{rid}/results/probes.parquet")
    keys = ["backend", "J", "architecture", "study", "seed", "probe_id"]
    assert again.height == ref.height and again.select(keys).is_duplicated().sum() == 0
    assert again.sort(keys).equals(ref.sort(keys))


def test_catalogue_captioner_reads_the_runs_data_dir(tmp_path, data_dir):
    """A submitted job's data travels in its package: the stand-in captioner must read the run's
    data_dir, not the checkout's default; the cache keys do not depend on where it is."""
    import shutil

    from vismem.memory.agent.captioner import CAPTIONERS
    from vismem.memory.agent.features import spec_key
    from vismem.pipelines.dmv.chains import architecture_specs

    data = tmp_path / "moved"
    shutil.copytree(data_dir / "dmv-bench", data / "dmv-bench")
    here = _cfg(tmp_path, data_dir=str(data))
    specs = architecture_specs(here)
    caps = [s["args"]["captioner"] for s in specs if s["args"].get("captioner")]
    assert caps and all(c["name"] == "catalogue" and c["args"]["data_dir"] == str(data) for c in caps)
    from vismem.env.storefront.catalog import load_catalog

    product = load_catalog(data, seed=0).variants[0]
    text = CAPTIONERS.build(caps[0]).caption(None, url_hash=product.url_hash)
    assert product.name in text
    default = [s["args"].get("captioner") for s in architecture_specs(_cfg(tmp_path))]
    assert spec_key("caption", caps[0]) == spec_key("caption", next(c for c in default if c))


def test_probe_units_in_flight_give_the_sequential_table(first_run, tmp_path):
    # Units of a chain run four at once on one worker (threads, their own architecture
    # instances and page envs) and give the same probe outcomes as one after another.
    import shutil

    tmp, cfg, out = first_run
    shutil.copytree(tmp / "store", tmp_path / "store")
    for key in (tmp_path / "store").rglob("*"):  # keep the trajectories and features, redo the probes
        if key.is_dir() and key.name == "probes" and key.parent == tmp_path / "store":
            shutil.rmtree(key)
    par_cfg = _cfg(tmp_path, probes={"in_flight": 4})
    assert par_cfg.run_id == cfg.run_id
    par = run(par_cfg, progress=False)["probes"]
    assert par["ran"] == out["probes"]["ran"] + out["probes"]["cached"] and par["cached"] == 0
    cols = ["architecture", "J", "study", "chain_slug", "seed", "j", "correct", "n_steps"]

    def table(root):
        from vismem.core.store import Store

        df = Store.open(f"file://{root}/store").read_table(f"runs/{cfg.run_id}/results/probes.parquet")
        return df.select([c for c in cols if c in df.columns]).sort([c for c in cols if c in df.columns])

    assert table(tmp_path).equals(table(tmp))

    def steps(root):
        # every probe's step log (pages, replies, recalled items; not the call's latency) and
        # channel scores, unit by unit: a unit's probes ran at once over one bank, each
        # retrieval with its own scores
        import json

        import polars as pl

        out = {}
        for f in sorted((root / "store" / "probes").rglob("*.parquet")):
            rows = pl.read_parquet(f).sort("probe_id").iter_rows(named=True)
            out[f.relative_to(root).as_posix()] = [
                (r["probe_id"], [{k: v for k, v in st.items() if k != "latency_s"} for st in json.loads(r["log"])],
                 json.loads(r["scores"])) for r in rows]
        return out

    def flat(scores):  # a query embedded in another batch may differ in the last printed digit
        return [v for step in scores for item in step for v in item.values() if v is not None]

    # the module's first store may also hold units of architectures later tests added
    conc = steps(tmp_path)
    seq = {k: v for k, v in steps(tmp).items() if k in conc}
    assert seq.keys() == conc.keys() and len(seq) >= 4
    assert {k: [r[:2] for r in rows] for k, rows in conc.items()} == {k: [r[:2] for r in rows] for k, rows in seq.items()}
    assert sum(len(r[1]) for rows in seq.values() for r in rows) > 8
    for k in seq:
        for a, b in zip(seq[k], conc[k]):
            assert flat(b[2]) == pytest.approx(flat(a[2]), abs=2e-6) and len(flat(a[2])) == len(flat(b[2]))
