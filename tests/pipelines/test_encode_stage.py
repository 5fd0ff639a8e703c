"""The encode stage end to end: Ray Data actors with their own storefront and Chromium, the
trajectory cache keyed by (backend, seed, j), and the `encoding` result table."""

from __future__ import annotations

import logging

import polars as pl
import pytest

from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run


def _cfg(tmp_path, **encode):
    encode.setdefault("chains", 1)
    return load_config(overrides={"stages": ["encode"], "runs_dir": str(tmp_path / "runs"),
                                  "store": {"uri": f"file://{tmp_path}/store"}, "encode": encode})


def test_browser_sessions_on_ray_actors(tmp_path, ray_local) -> None:
    from vismem.pipelines.dmv.trajectories import TrajectoryCache
    from vismem.core.store import Store

    out = run(_cfg(tmp_path, J=1, workers=1), progress=False)["encode"]
    assert out["status"] == "done" and (out["ran"], out["cached"]) == (1, 0)
    cache = TrajectoryCache(Store.open(f"file://{tmp_path}/store"), out["backends"][0])
    steps = cache.read_steps(0, 0)
    assert steps["title"][0].endswith("| Studio Living")  # a real rendered page title
    assert steps.filter(pl.col("url_hash").is_not_null())["n_images"].min() == 1
    assert out["table3"][0]["mean_styles"] >= 3


def test_extending_J_runs_only_new_sessions(tmp_path, ray_local, caplog, dmv_seed) -> None:
    # The HTTP fast path keeps this multi-run test quick; the browser path runs on Ray above.
    # The first three sessions are the session's (tests/pipelines/conftest.py; a fresh store runs
    # every session: test_sessions_in_flight_give_the_sequential_trajectories).
    from vismem.analysis.schemas import validate
    from vismem.pipelines.dmv.trajectories import TrajectoryCache
    from vismem.core.store import Store

    dmv_seed(_cfg(tmp_path, J=3, env="http"), features=False)
    first = run(_cfg(tmp_path, J=3, env="http"), progress=False)["encode"]
    assert first["status"] == "done" and (first["ran"], first["cached"]) == (0, 3)
    store = Store.open(f"file://{tmp_path}/store")
    (slug,) = first["backends"]
    assert slug.startswith("scripted-shopper-stand-in-s0--")
    cache = TrajectoryCache(store, slug)
    before = {j: store.get_bytes(cache.steps_key(0, j)) for j in range(3)}
    markers = {j: store.get_bytes(cache.done_key(0, j)) for j in range(3)}

    second = run(_cfg(tmp_path, J=5, env="http"), progress=False)["encode"]
    assert (second["ran"], second["cached"], second["failed"]) == (2, 3, [])
    assert cache.done_keys() == {(0, j) for j in range(5)}
    for j in range(3):  # untouched: byte-identical steps and markers
        assert store.get_bytes(cache.steps_key(0, j)) == before[j]
        assert store.get_bytes(cache.done_key(0, j)) == markers[j]

    df = store.read_table(second["results"])
    assert second["results"].endswith("/results/encoding.parquet")
    validate(df, "encoding")
    assert df.height == 5 and df["j"].to_list() == [1, 2, 3, 4, 5]
    assert set(df["backend_name"]) == {"scripted-shopper (stand-in)"}
    assert (df["styles"] >= 3).all() and (df["distinct_products"] >= 8).all()
    steps = cache.read_steps(0, 4)
    assert steps["url"][0].startswith("/category/") and steps.height == df["n_steps"][4]
    images = steps.filter(pl.col("image_key").is_not_null())["image_key"]
    assert images.len() > 0 and all(store.exists(k) for k in images)
    t3 = second["table3"]
    assert t3[0]["sessions"] == 5 and t3[0]["mean_distinct_products"] >= 8

    # A third run finds everything cached and re-runs nothing.
    third = run(_cfg(tmp_path, J=5, env="http"), progress=False)["encode"]
    assert (third["ran"], third["cached"]) == (0, 5)

    # A run killed after a session's steps were written but before its done marker: the
    # session is re-run from scratch and its rows replaced (no duplicates).
    store.delete(cache.done_key(0, 4))
    again = run(_cfg(tmp_path, J=5, env="http"), progress=False)["encode"]
    assert (again["ran"], again["cached"]) == (1, 4)
    rerun = cache.read_steps(0, 4)
    assert rerun["step"].to_list() == list(range(1, rerun.height + 1))
    assert rerun["url"].to_list() == steps["url"].to_list()  # deterministic stand-in

    # A damaged cached session (truncated steps, an overwritten marker) is never trusted: the
    # next run names it, discards it and browses it again, to the same bytes.
    good = store.get_bytes(cache.steps_key(0, 2))
    store.put_bytes(cache.steps_key(0, 2), good[: len(good) // 2])
    store.put_bytes(cache.done_key(0, 3), b"{not json")
    healed = run(_cfg(tmp_path, J=5, env="http"), progress=False)["encode"]
    assert (healed["healed"], healed["ran"], healed["cached"]) == (2, 2, 3)
    assert store.get_bytes(cache.steps_key(0, 2)) == good and cache.verify(0, 2) == cache.verify(0, 3) == []

    # A damaged observation image (its key is its digest) is named, deleted with every session
    # that showed it, and those are browsed again, which writes the same image back.
    from vismem.pipelines.dmv.encode import describe

    shown = {j: cache.image_keys(0, j) for j in range(5)}
    blob = sorted(shown[4] - shown[0])[0]
    image = store.get_bytes(blob)
    store.put_bytes(blob, image[: len(image) // 2])
    with caplog.at_level(logging.WARNING, logger="vismem"):
        redone = run(_cfg(tmp_path, J=5, env="http"), progress=False)["encode"]
    showing = sum(blob in keys for keys in shown.values())
    assert (redone["healed_blobs"], redone["ran"], redone["cached"]) == (1, showing, 5 - showing)
    assert store.get_bytes(blob) == image and f"damaged blob {blob}: " in caplog.text
    assert describe(redone).endswith(", 1 damaged images redone")


def test_cli_flags_map_to_config() -> None:
    import argparse

    from vismem.pipelines.dmv import encode

    p = argparse.ArgumentParser()
    encode.add_cli_args(p)
    args = p.parse_args(["--chains", "4", "--J", "15", "--backend", "scripted-shopper",
                         "--backend", '{"name": "openai", "args": {"model": "m"}}'])
    over = encode.cli_overrides(args)
    cfg = load_config(overrides=over)
    assert cfg.encode.chains == 4 and cfg.encode.J == 15
    assert [b.raw() for b in cfg.encode.backends] == [{"name": "scripted-shopper", "args": {}},
                                                      {"name": "openai", "args": {"model": "m"}}]
    specs, slugs, keys = encode.plan(cfg)
    assert len(keys) == 2 * 4 * 15 and len(set(slugs)) == 2
    assert specs[0]["args"]["seed"] == cfg.seed
    with pytest.raises(Exception):
        load_config(overrides={"encode": {"backends": [{"name": "x", "argz": {}}]}})


def test_storefront_serves_the_catalogue_images(file_store) -> None:
    from types import SimpleNamespace

    from vismem.pipelines.dmv import protocol as encode
    from vismem.pipelines.dmv.protocol import source_spec

    cfg = load_config()
    ctx = SimpleNamespace(config=cfg, store=file_store, run_prefix="runs/x")
    # Without the catalogue stage's images: the same source renders on demand.
    assert encode.image_source(ctx) == source_spec(cfg.catalog)
    prefix = encode.images_identity(cfg)
    serve = {"name": "store", "args": {"uri": file_store.uri, "prefix": prefix}}
    file_store.put_json("runs/x/catalog.json", {"prefix": prefix, "serve_spec": serve, "variants": 20})
    assert encode.image_source(ctx) == source_spec(cfg.catalog)  # partial (catalog.limit) image set
    file_store.put_json("runs/x/catalog.json", {"prefix": prefix, "serve_spec": serve, "variants": 1000})
    assert encode.image_source(ctx) == serve
    # Pixels identity, not serving route, keys the cache; a different image size is a new key.
    other = load_config(overrides={"catalog": {"image_size": 256}})
    assert encode.plan(other)[1] != encode.plan(cfg)[1]
    assert encode.plan(load_config(overrides={"encode": {"images": "placeholder"}}))[1] != encode.plan(cfg)[1]



def test_sessions_in_flight_give_the_sequential_trajectories(tmp_path, ray_local, dmv_encoded) -> None:
    # Four sessions at once on one actor (threads, one page env each) write the same bytes as
    # one after another, and the run id does not change with how much runs at once. The
    # sequential run is the session's (tests/pipelines/conftest.py: this config, on a fresh store).
    from vismem.core.store import Store
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    seq_cfg = _cfg(tmp_path / "seq", J=3, chains=2, env="http", workers=1)
    par_cfg = _cfg(tmp_path / "par", J=3, chains=2, env="http", workers=1, in_flight=4)
    assert seq_cfg.run_id == par_cfg.run_id
    assert dmv_encoded.cfg.encode == seq_cfg.encode and dmv_encoded.cfg.seed == seq_cfg.seed
    seq = dmv_encoded.out
    par = run(par_cfg, progress=False)["encode"]
    assert seq["ran"] == par["ran"] == 6 and seq["cached"] == par["cached"] == 0 and seq["backends"] == par["backends"]
    (slug,) = seq["backends"]
    a = TrajectoryCache(Store.open(f"file://{dmv_encoded.root}/store"), slug)
    b = TrajectoryCache(Store.open(f"file://{tmp_path}/par/store"), slug)
    for s in (0, 1):
        for j in range(3):
            assert a.store.get_bytes(a.steps_key(s, j)) == b.store.get_bytes(b.steps_key(s, j))
            assert a.read_summary(s, j)["visited"] == b.read_summary(s, j)["visited"]


def test_episodes_per_actor_fill_the_clients_limits() -> None:
    from vismem.pipelines.dmv.protocol import episodes_per_actor

    scripted = {"name": "scripted-shopper", "args": {"seed": 0}}
    served = {"name": "openai", "args": {"model": "m", "max_concurrency": 32}}
    assert episodes_per_actor(None, [scripted], 4) == 1  # no client limit: the sequential path
    assert episodes_per_actor(None, [served], 4) == 8  # 32 in flight over 4 actors
    assert episodes_per_actor(None, [served, served], 3) == 22  # ceil(64 / 3)
    assert episodes_per_actor(None, [served, scripted], 4) == 9  # ceil((32 + 4) / 4)
    assert episodes_per_actor(10, [scripted], 4) == 3


def test_a_client_that_cannot_fill_the_fleet_is_named_before_the_run(caplog) -> None:
    from vismem.pipelines.dmv import encode
    from vismem.pipelines.dmv.protocol import fleet_shortfall

    paper = load_config(preset="paper")
    assert paper.encode.in_flight == paper.probes.in_flight == 2048  # 1,024 for each of the two back-ends
    assert fleet_shortfall(list(paper.encode.backends), paper.encode.in_flight, 16) == []  # the preset fills it
    lines = fleet_shortfall(list(paper.encode.backends), None, 16)  # the client's own 64
    assert len(lines) == 1 and lines[0].startswith("qwen2.5-vl-7b: 64 requests in flight")
    assert "= 1024" in lines[0]  # max_replicas 4 x target_ongoing_requests 256 (its KV capacity)
    assert fleet_shortfall(["scripted-shopper"], None, 4) == []  # no fleet to fill
    assert fleet_shortfall(list(paper.encode.backends), 1152, 16)[0].startswith("qwen2.5-vl-7b: 576 requests")
    short = load_config(preset="paper", overrides={"encode": {"in_flight": 40}})
    with caplog.at_level("WARNING", logger="vismem.encode"):
        encode.check(short)
    assert "raise the stage's in_flight to 1024" in caplog.text
