"""A damaged observation image (a content-addressed blob: its key is its digest) never reaches a
memory or a model: replay and probes without encode name it in one line, discard it with the
sessions that showed it and name the encode stage, which browses them again and writes it back."""

from __future__ import annotations

import logging

import pytest


def test_replay_refuses_a_damaged_image_and_encode_writes_it_back(tmp_path, ray_local, caplog, dmv_seed):
    from vismem.core.cache import CacheDamaged
    from vismem.core.store import Store
    from vismem.pipelines.dmv.trajectories import TrajectoryCache
    from vismem.pipelines.runner import run

    from tests.pipelines.test_encode_outage import one_chain_config

    def cfg(stages):
        return one_chain_config(tmp_path, stages)

    dmv_seed(cfg(["encode"]))  # the session's browsed chain and features (tests/pipelines/conftest.py)
    first = run(cfg(["encode"]), progress=False)["encode"]
    store = Store.open(f"file://{tmp_path}/store")
    cache = TrajectoryCache(store, first["backends"][0])
    shown = {j: cache.image_keys(0, j) for j in range(2)}
    blob = sorted(shown[1] - shown[0])[0]  # shown by session 1 only
    image = store.get_bytes(blob)
    store.put_bytes(blob, bytes(len(image)))  # same size, zeroed: only the digest tells
    with caplog.at_level(logging.WARNING, logger="vismem"), \
            pytest.raises(CacheDamaged, match=r"^1 image\(s\) .* \(damaged blob .*\): discarded with the 1 session\(s\) "
                                              r"that showed them; run the encode stage") as err:
        run(cfg(["replay"]), progress=False)
    assert blob in str(err.value) and "\n" not in str(err.value) and f"damaged blob {blob}" in caplog.text
    assert not store.exists(blob) and cache.done_keys() == {(0, 0)}
    out = run(cfg(["encode", "replay"]), progress=False)
    assert (out["encode"]["ran"], out["encode"]["cached"]) == (1, 1) and out["replay"]["status"] == "done"
    assert store.get_bytes(blob) == image  # the deterministic stand-in saw the same image again
