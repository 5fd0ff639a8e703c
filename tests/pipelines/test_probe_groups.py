"""How probe units are handed to the actors: a chain's units together (its query embeddings are
made once), every unit exactly once in plan order, and enough groups that no actor idles."""

from __future__ import annotations

import pytest

from vismem.pipelines.dmv.probes_job import unit_groups


def _units(chains: int, per_chain: int) -> list[dict]:
    return [{"chain": c, "arch": a, "j": 1, "set": "ex"} for c in range(chains) for a in range(per_chain)]


def test_a_chain_stays_on_one_actor_when_there_are_enough_chains():
    groups = unit_groups(_units(4, 6), workers=2)
    assert [{u["chain"] for u in g} for g in groups] == [{0}, {1}, {2}, {3}]
    assert all(len(g) == 6 for g in groups)


@pytest.mark.parametrize("chains,per_chain,workers", [(1, 10, 2), (3, 8, 2), (5, 7, 4), (2, 1, 4), (50, 9, 16)])
def test_every_unit_once_in_plan_order_and_groups_fill_the_actors(chains, per_chain, workers):
    units = _units(chains, per_chain)
    groups = unit_groups(units, workers)
    assert [u for g in groups for u in g] == units  # nothing lost, doubled or reordered
    assert all(len({u["chain"] for u in g}) == 1 for g in groups)  # a group never mixes chains
    # as many groups as the actors can share evenly, unless there are too few units to split
    assert len(groups) % workers == 0 or all(len(g) == 1 for g in groups)
    assert len(groups) >= min(workers, len(units))


def test_probe_and_encode_actors_run_two_batches_at_once_on_a_fixed_pool():
    """An actor takes the next chain's units while the current chain's last probes finish (the
    plan counts two chains in flight per actor); the pool is started whole."""
    from vismem.pipelines.config import RayConfig
    from vismem.pipelines.dmv.protocol import GROUPS_AT_ONCE
    from vismem.pipelines.rayctx import actor_pool

    kw = actor_pool(RayConfig(), size=3, overlap=GROUPS_AT_ONCE)
    s = kw["compute"]
    assert (s.min_size, s.max_size, s.max_concurrent_calls_per_actor, s.max_tasks_in_flight_per_actor) == (3, 3, 2, 2)
    assert s.enable_true_multi_threading and GROUPS_AT_ONCE == 2
    one = actor_pool(RayConfig(), size=3)["compute"]
    assert one.max_concurrent_calls_per_actor is None and not one.enable_true_multi_threading
