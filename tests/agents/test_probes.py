"""Probe sets against the official definition (f2_online_ic.py), on hand-made trajectories."""

from __future__ import annotations

import random

import pytest

from vismem.agents.probes import (MC_SEED, chain_probes, exhaustive_count, exhaustive_probes, mc_probes, probes_at,
                           task_id, visited_per_session)

CUES = {f"h{i:02d}": ("red", f"obj{i}") for i in range(40)}


def cue_of(h):
    return CUES.get(h)


def test_visited_dedupes_in_first_seen_order_and_drops_unregistered():
    v = visited_per_session({0: ["h03", "h01", "h03", "zz", "h02", "h01"], 1: ["h05"]}, cue_of)
    assert v == {0: ["h03", "h01", "h02"], 1: ["h05"]}


def test_exhaustive_counts_ids_reach_and_last_session():
    visits = {0: ["h00", "h01", "h00"], 1: ["h02"], 2: ["h03", "h04", "h05"], 3: ["h06", "h07"]}
    J = 4
    probes = chain_probes(visits, J, seed=0, cue_of=cue_of)
    sizes = [2, 1, 3, 2]
    assert len(probes) == exhaustive_count(sizes) == 2 * 3 + 1 * 2 + 3 * 1 + 2 * 0 == 11
    assert all(p.target_session != J - 1 for p in probes)     # the last session is never a target
    assert all(p.at_session >= 1 for p in probes)             # session 0 has no probes
    assert all(p.reach == p.at_session - p.target_session >= 1 for p in probes)
    ids = [p.probe_id for p in probes]
    assert len(set(ids)) == len(ids)
    assert ids[:3] == ["s1_r1_p00", "s1_r1_p01", "s2_r1_p00"]  # j ascending, then r, then products
    s3 = [p.probe_id for p in probes if p.at_session == 3]
    assert s3 == ["s3_r1_p00", "s3_r1_p01", "s3_r1_p02", "s3_r2_p00", "s3_r3_p00", "s3_r3_p01"]
    p = next(p for p in probes if p.probe_id == "s3_r3_p01")
    assert (p.target_hash, p.target_session, p.cue, p.target_url) == ("h01", 0, "red obj1", "/product/h01")
    # a re-visited product is one target of its first session only
    assert sum(1 for p in probes if p.target_hash == "h00" and p.at_session == 1) == 1


def test_a_shorter_chain_is_a_prefix_of_a_longer_one():
    visits = {j: [f"h{2 * j:02d}", f"h{2 * j + 1:02d}"] for j in range(6)}
    short = {p.probe_id: p for p in chain_probes(visits, 3, 0, cue_of)}
    long = {p.probe_id: p for p in chain_probes(visits, 6, 0, cue_of)}
    assert short.items() <= long.items()


def test_probes_at_runs_by_reach_stable():
    visits = {0: ["h00"], 1: ["h01", "h02"], 2: ["h03"]}
    order = [p.probe_id for p in probes_at(exhaustive_probes(visited_per_session(visits, cue_of), 3, cue_of), 2)]
    assert order == ["s2_r1_p00", "s2_r1_p01", "s2_r2_p00"]


def test_mc_reproduces_the_official_draw():
    # The official test vector (spec §3.1): Random("f2.mc.v6.f2_chain_d50_s0000.reach1").sample(...)
    ref = random.Random("f2.mc.v6.f2_chain_d50_s0000.reach1").sample(
        [(j, j - 1, f"p{i}") for j in range(1, 50) for i in range(3)], 5)
    assert ref == [(41, 40, "p0"), (37, 36, "p2"), (38, 37, "p1"), (22, 21, "p1"), (15, 14, "p1")]
    cues = {f"p{i}": ("blue", f"o{i}") for i in range(3)}
    visited = {t: ["p0", "p1", "p2"] for t in range(50)}
    got = [p for p in mc_probes(visited, 50, 5, 0, cues.get) if p.reach == 1]
    assert [(p.at_session, p.target_session, p.target_hash) for p in got] == ref
    assert [p.probe_id for p in got] == [f"s{j}_r1_p{i:03d}_mc" for i, (j, _, _) in enumerate(ref)]
    assert task_id(0, 50) == "f2_chain_d50_s0000" and MC_SEED == "f2.mc.v6"


def test_mc_draws_min_of_m_and_n_per_reach_and_depend_on_seed_and_J():
    visited = {t: [f"h{t:02d}"] for t in range(10)}
    a = mc_probes(visited, 10, 3, 0, cue_of)
    by_r = {r: [p for p in a if p.reach == r] for r in range(1, 10)}
    assert [len(by_r[r]) for r in range(1, 10)] == [3, 3, 3, 3, 3, 3, 3, 2, 1]  # n = 10 - r candidates
    b = mc_probes(visited, 10, 3, 1, cue_of)
    assert [p.probe_id for p in a] != [p.probe_id for p in b] or [p.target_hash for p in a] != [p.target_hash for p in b]
    with pytest.raises(ValueError):
        mc_probes(visited, 10, 0, 0, cue_of)
