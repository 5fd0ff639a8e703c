"""A failed browsing call is an outage, not a forced navigation: the session is browsed again on its own."""

from __future__ import annotations

from vismem.core.store import Store


def _http_env(shop_url, **kw):
    from vismem.env.envs import make_env

    return make_env("http", shop_url, **kw)


def test_a_session_with_failed_calls_is_browsed_again_until_every_call_is_answered(tmp_path, data_dir):
    from vismem.pipelines.dmv.encode_job import EncodeWorker

    store = Store.open(f"file://{tmp_path}/store")
    reply = 'Thought: look\nAction: navigate("/collection/chair-modern")'
    spec = {"name": "scripted", "args": {"replies": [reply], "fail_first": 2}}
    for retries, ok in ((3, True), (0, False)):
        w = EncodeWorker(store, [spec], [f"t-{retries}"], data_dir=str(data_dir), max_failed_calls=0.5,
                         session_retries=retries, env_factory=_http_env)
        try:
            out = w({"backend": [0], "seed": [0], "j": [0]})
        finally:
            w.close()
        assert out["ok"] == [ok], out["error"]
        assert w.caches[0].is_done(0, 0) is ok
        if ok:
            summary = w.caches[0].read_summary(0, 0)
            assert summary["failed_calls"] == 0, summary  # the re-run, not the session the outage cut
        else:
            assert "2 model calls still failed after 0 re-runs of the session (encode.session_retries)" in out["error"][0]


def test_a_session_cached_with_a_failed_call_is_browsed_again_and_good_ones_stay(tmp_path, ray_local, dmv_seed):
    """A session committed before the retry rule, whose steps record a failed call (a forced
    navigation after an outage), is not a trajectory: the next encode run discards it (with the
    probe units that read it), browses it again and counts it; the good sessions stay cached,
    byte for byte."""
    import io

    import polars as pl

    from vismem.core.store import parquet_bytes
    from vismem.pipelines.config import load_config
    from vismem.pipelines.dmv.encode import describe
    from vismem.pipelines.dmv.trajectories import TrajectoryCache
    from vismem.pipelines.runner import run

    cfg = load_config(overrides={"stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
                                 "store": {"uri": f"file://{tmp_path}/store"},
                                 "encode": {"chains": 1, "J": 3, "env": "http"}})
    dmv_seed(cfg, features=False)  # the session's browsed chain (tests/pipelines/conftest.py)
    first = run(cfg, progress=False)["encode"]
    assert (first["ran"], first["cached"]) == (0, 3) and "outages_redone" not in first
    store = Store.open(f"file://{tmp_path}/store")
    cache = TrajectoryCache(store, first["backends"][0])
    good = {j: (store.get_bytes(cache.steps_key(0, j)), store.get_bytes(cache.done_key(0, j))) for j in range(3)}

    # Session 1 as the old runner cached it: its second call failed and became a forced navigation.
    steps = pl.read_parquet(io.BytesIO(good[1][0]))
    steps = steps.with_columns(pl.when(pl.col("step") == 2).then(pl.lit("failed")).otherwise(pl.col("status"))
                               .alias("status"))
    summary = {**cache.read_summary(0, 1), "failed_calls": 1}
    cache.units.commit("0/1", {".parquet": parquet_bytes(steps.drop("schema_version"), schema_version=1),
                               ".timing.parquet": store.get_bytes(cache.timing_key(0, 1))}, summary)
    assert cache.failed_calls(0, 1) == 1 and cache.failed_calls(0, 0) == 0
    # A marker from before failed_calls was recorded: the steps say it.
    legacy = {k: v for k, v in cache.read_summary(0, 1).items() if k != "failed_calls"}
    cache.units.commit("0/1", {".parquet": store.get_bytes(cache.steps_key(0, 1)),
                               ".timing.parquet": store.get_bytes(cache.timing_key(0, 1))}, legacy)
    assert cache.failed_calls(0, 1) == 1

    # Probe units cached from the old session 1 (any architecture) scored it: they go with it.
    from vismem.pipelines.dmv.probecache import ProbeCache

    units = {(seed, st, j): ProbeCache(store, cache.backend, seed, "dualmem--0123456789")
             for seed, st, j in ((0, "ex", 0), (0, "ex", 1), (0, "ex", 2), (0, "mc5", 0), (1, "ex", 2))}
    for (seed, st, j), pc in units.items():
        pc.write(st, j, [], meta={})

    again = run(cfg, progress=False)["encode"]
    assert (again["ran"], again["cached"], again["outages_redone"], again["failed"]) == (1, 2, 1, [])
    assert cache.failed_calls(0, 1) == 0
    assert store.get_bytes(cache.steps_key(0, 1)) == good[1][0]  # the deterministic stand-in's own session
    assert {k for k, pc in units.items() if pc.is_done(k[1], k[2])} == {(0, "ex", 0), (1, "ex", 2)}
    for j in (0, 2):  # good sessions untouched
        assert (store.get_bytes(cache.steps_key(0, j)), store.get_bytes(cache.done_key(0, j))) == good[j]
    assert "1 cached with a failed call browsed again" in describe(again)


def test_a_stage_that_reads_chains_refuses_a_session_cached_with_a_failed_call(tmp_path, ray_local, dmv_seed):
    """Run without the encode stage, replay and probes must not read a session cached with a failed
    call as a trajectory (nor score probe units cached from it): they stop before any work, naming
    the outage and the encode stage that browses it again; a run with encode then re-browses it."""
    import io

    import polars as pl
    import pytest

    from vismem.core.errors import ConfigError
    from vismem.core.store import parquet_bytes
    from vismem.pipelines.dmv.chains import missing_sessions, outage_cached, plan_chains
    from vismem.pipelines.dmv.trajectories import TrajectoryCache
    from vismem.pipelines.runner import run

    def cfg(stages):
        return one_chain_config(tmp_path, stages)

    dmv_seed(cfg(["encode"]))  # the session's browsed chain and features (tests/pipelines/conftest.py)
    first = run(cfg(["encode"]), progress=False)["encode"]
    store = Store.open(f"file://{tmp_path}/store")
    cache = TrajectoryCache(store, first["backends"][0])
    chains = plan_chains(cfg(["replay"]))
    assert missing_sessions(store, chains, 2) == [] and outage_cached(store, chains, 2) == []
    steps = pl.read_parquet(io.BytesIO(store.get_bytes(cache.steps_key(0, 1))))
    steps = steps.with_columns(pl.when(pl.col("step") == 1).then(pl.lit("failed")).otherwise(pl.col("status"))
                               .alias("status"))
    cache.units.commit("0/1", {".parquet": parquet_bytes(steps.drop("schema_version"), schema_version=1),
                               ".timing.parquet": store.get_bytes(cache.timing_key(0, 1))},
                       {**cache.read_summary(0, 1), "failed_calls": 1})
    slug = first["backends"][0]
    assert outage_cached(store, chains, 2) == [(slug, 0, 1)] and missing_sessions(store, chains, 2) == [(slug, 0, 1)]
    for stages in (["replay"], ["probes"]):
        with pytest.raises(ConfigError, match="1 of them cached with a failed model call .*run the encode stage first"):
            run(cfg(stages), progress=False)
    out = run(cfg(["encode", "replay"]), progress=False)
    assert out["encode"]["outages_redone"] == 1 and out["encode"]["ran"] == 1
    assert outage_cached(store, chains, 2) == [] and out["replay"]["status"] == "done"


def one_chain_config(tmp_path, stages):
    """A one-chain, J = 2 DMV-Bench run on a file store under ``tmp_path`` (two architectures, the
    scripted recaller): the smallest run whose encode, replay and probes read cached sessions."""
    from vismem.pipelines.config import load_config

    return load_config(overrides={
        "stages": stages, "runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"},
        "encode": {"chains": 1, "J": 2, "env": "http"},
        "memory": {"architectures": ["nomemory", "dualmem"],
                   "components": {"captioner": "catalogue", "visual_encoder": "pocket-clip"}},
        "probes": {"backends": ["scripted-recall"], "workers": 1}})
