"""Replay rules (visits, skip re-visits, session clock, positions) and TextOnly's cue blindness."""

from __future__ import annotations

import pytest
from agentmem_fakes import LOCAL, make_step, product_hashes

from vismem.memory.agent import (InProcessFeatures, Query, build_architecture, chain_streams, observations_from_steps,
                          replay_chain, with_components)

H = product_hashes()
CH, LA, WA = H["chair"], H["lamp"], H["wall_art"]


def chain_steps():
    """Two sessions: session 0 visits chair0, chair1, chair0 again, a 404 product; session 1 wall
    art and chair1 again; one non-product step each."""
    return [
        make_step(0, 1, None), make_step(0, 3, CH[0]), make_step(0, 2, CH[1]), make_step(0, 4, CH[0]),
        make_step(0, 5, "deadbeef", image=False),
        make_step(1, 2, CH[1]), make_step(1, 1, WA[0]), make_step(1, 3, None),
    ]


def test_observations_are_the_visits_in_stream_order():
    obs = observations_from_steps(chain_steps())
    assert [(o.j, o.step, o.url_hash) for o in obs] == [
        (0, 2, CH[1]), (0, 3, CH[0]), (0, 4, CH[0]), (0, 5, "deadbeef"), (1, 1, WA[0]), (1, 2, CH[1])]
    assert [o.position for o in obs] == list(range(6))
    assert [o.encode_text for o in obs] == ["a chair"] * 3 + ["a item", "a wall art", "a chair"]
    assert obs[3].image_key is None and obs[0].image_key.startswith("blobs/sha256/")
    assert obs[4].style is not None                        # from the hash formula when the row lacks it


def test_observations_from_a_polars_frame_and_many_chains():
    from vismem.agents.records import steps_table

    rows = chain_steps() + [make_step(0, 1, LA[0], seed=7)]
    streams = chain_streams(steps_table(rows))
    assert sorted(streams) == [("b", 0), ("b", 7)]
    assert [o.url_hash for o in streams[("b", 7)]] == [LA[0]]
    with pytest.raises(ValueError, match="more than one chain"):
        observations_from_steps(rows)


class Recorder:
    """A bank that records the clock at every encode (behind the MemoryArchitecture protocol)."""

    name = "recorder"

    def __init__(self):
        self.log, self.slugs, self.session = [], [], None

    def reset(self):
        self.log.append("reset")
        self.slugs = []

    def set_session(self, j):
        self.session = j
        self.log.append(("session", j))

    def encode(self, obs):
        self.slugs.append(obs.url_hash)
        self.log.append(("encode", self.session, obs.url_hash))

    def __contains__(self, slug):
        return slug in self.slugs

    def __len__(self):
        return len(self.slugs)


def test_replay_skips_revisits_and_sets_the_clock_first():
    rec = Recorder()
    done = list(replay_chain(rec, observations_from_steps(chain_steps()), sessions=range(3)))
    assert done == [0, 1, 2]                               # a session without visits still ticks
    assert rec.log == ["reset", ("session", 0), ("encode", 0, CH[1]), ("encode", 0, CH[0]),
                       ("encode", 0, "deadbeef"), ("session", 1), ("encode", 1, WA[0]), ("session", 2)]


def test_banks_keep_first_encoding_and_insertion_order(tmp_path):
    feats = InProcessFeatures(lambda k: b"")
    arch = build_architecture(with_components("textonly", LOCAL), features=feats)
    list(replay_chain(arch, observations_from_steps(chain_steps())))
    assert [(i.slug, i.session, i.position) for i in arch.entries()] == [
        (CH[1], 0, 0), (CH[0], 0, 1), ("deadbeef", 0, 2), (WA[0], 1, 3)]
    got = arch.retrieve(Query("product with red wool scarf CURRENT: /"), 10)
    chairs = [i for i in got if i.encode_text == "a chair"]
    assert [i.slug for i in chairs] == [CH[1], CH[0]]       # tie -> encode order
    assert chairs[0].score == chairs[1].score


def test_textonly_is_blind_to_the_cue():
    """Every product of a category scores exactly alike whatever the cue (real MiniLM)."""
    steps = [make_step(0, n + 1, h) for n, h in enumerate(CH[:3] + LA[:3] + WA[:3])]
    arch = build_architecture(with_components("textonly", LOCAL), features=InProcessFeatures(lambda k: b""))
    list(replay_chain(arch, observations_from_steps(steps)))
    for cue in ("red wool scarf", "blue baseball cap", "yellow ceramic mug", "green paperback book"):
        got = arch.retrieve(Query.probe(cue, "/"), 10)
        by_cat: dict[str, list] = {}
        for i in got:
            by_cat.setdefault(i.encode_text, []).append(i)
        for items in by_cat.values():
            assert len({i.score for i in items}) == 1
            assert [i.position for i in items] == sorted(i.position for i in items)
