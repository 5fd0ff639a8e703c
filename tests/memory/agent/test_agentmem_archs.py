"""Each architecture's retrieval on a hand-built 3-item bank (fake features, hand-computed scores)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from agentmem_fakes import LOCAL, FakeFeatures, unit

from vismem.memory.agent import Observation, Query, build_architecture, with_components

A, B, C = "aaaa0001", "bbbb0002", "cccc0003"
IMG = {A: "blobs/sha256/" + "a" * 64 + ".png", B: "blobs/sha256/" + "b" * 64 + ".png",
       C: "blobs/sha256/" + "c" * 64 + ".png"}


def obs(slug, j=0, step=1, cat="chair", image=True, pos=0):
    return Observation(url=f"/product/{slug}", url_hash=slug, category=cat, style="modern", j=j, step=step,
                       image_key=IMG[slug] if image else None, position=pos)


def build(variant, feats, **args):
    return build_architecture(with_components({"model": variant, "args": args}, LOCAL), features=feats)


def fill(arch, observations):
    for o in observations:
        arch.set_session(o.j)
        arch.encode(o)
    return arch


def slugs(items):
    return [i.slug for i in items]


# -- DualMem ---------------------------------------------------------------------------------
Q = "product with red cap CURRENT: /"


def dual_feats():
    # v = [1, 0, 0.6] (SigLIP text->image); t = [0.6, 1.0, missing] (SBERT query->caption)
    return FakeFeatures(
        captions={("caption", A): "cap a", ("caption", B): "cap b"},   # C: no caption
        images={IMG[A]: unit(1, 0), IMG[B]: unit(0, 1), IMG[C]: unit(0.6, 0.8)},
        texts={"cap a": unit(0, 1), "cap b": unit(0.8, 0.6)},
        queries={("visual", Q): unit(1, 0), ("text", Q): unit(0.8, 0.6)})


@pytest.mark.parametrize("variant, order, scores", [
    ("dualmem", [A, C, B], [0.75, 0.45, 0.25]),         # 0.75 minmax(v) + 0.25 minmax(t)
    ("dualmem-a0.25", [B, A, C], [0.75, 0.25, 0.15]),
    ("dualmem-a0.5", [A, B, C], [0.5, 0.5, 0.3]),       # tie -> encode order
    ("dualmem-vis", [A, C, B], [1.0, 0.6, 0.0]),        # raw cosine
    ("dualmem-verb", [B, A, C], [1.0, 0.6, -math.inf]),  # raw cosine, missing caption last
])
def test_dualmem_retrieval(variant, order, scores):
    arch = fill(build(variant, dual_feats()), [obs(A, pos=0), obs(B, pos=1), obs(C, pos=2)])
    got = arch.retrieve(Query(Q), 10)
    assert slugs(got) == order
    assert [i.score for i in got] == pytest.approx(scores, abs=1e-6)
    assert [i.position for i in arch.entries()] == [0, 1, 2]


def test_dualmem_channel_scores_per_recalled_item():
    """The viewer's per-channel scores: raw cosines of each channel beside the fused min-max score;
    a missing caption is None, not -inf."""
    arch = fill(build("dualmem", dual_feats()), [obs(A, pos=0), obs(B, pos=1), obs(C, pos=2)])
    got = arch.retrieve(Query(Q), 10)
    assert arch.channel_scores(got) == [
        pytest.approx({"visual": 1.0, "verbal": 0.6, "fused": 0.75}),
        {"visual": pytest.approx(0.6), "verbal": None, "fused": pytest.approx(0.45)},
        pytest.approx({"visual": 0.0, "verbal": 1.0, "fused": 0.25})]
    vis = fill(build("dualmem-vis", dual_feats()), [obs(A, pos=0), obs(B, pos=1)])
    assert set(vis.channel_scores(vis.retrieve(Query(Q), 10))[0]) == {"visual", "fused"}


def test_dualmem_stores_caption_or_empty_and_skips_missing_image():
    f = dual_feats()
    arch = fill(build("dualmem", f), [obs(A), obs(C, image=False)])
    assert [i.caption for i in arch.entries()] == ["cap a", ""]
    # The official replay captions only visits with an image.
    assert ("caption", "caption", None, C) not in f.asked


def test_dualmem_verb_falls_back_to_token_overlap_without_captions():
    f = FakeFeatures(images={})
    arch = fill(build("dualmem-verb", f), [obs(A, cat="lamp"), obs(B, cat="chair")])
    assert slugs(arch.retrieve(Query("the red chair"), 10)) == [B, A]   # overlap with "a chair"


def test_dualmem_zero_span_is_half():
    f = FakeFeatures(captions={("caption", A): "same", ("caption", B): "same"},
                     images={IMG[A]: unit(1, 0), IMG[B]: unit(1, 0)}, texts={"same": unit(0, 1)},
                     queries={("visual", Q): unit(1, 0), ("text", Q): unit(0, 1)})
    got = fill(build("dualmem", f), [obs(A), obs(B)]).retrieve(Query(Q), 10)
    assert [i.score for i in got] == pytest.approx([0.5, 0.5])
    assert slugs(got) == [A, B]


# -- TextOnly / Caption ----------------------------------------------------------------------
def test_textonly_embeds_the_encode_text_and_ties_by_insertion_order():
    f = FakeFeatures(texts={"a chair": unit(1, 0), "a lamp": unit(0, 1)},
                     queries={("text", Q): unit(0.6, 0.8)})
    arch = fill(build("textonly", f), [obs(A, cat="chair"), obs(B, cat="lamp"), obs(C, cat="chair")])
    got = arch.retrieve(Query(Q), 10)
    assert slugs(got) == [B, A, C]
    assert [i.score for i in got] == pytest.approx([0.8, 0.6, 0.6])
    assert got[1].score == got[2].score                  # exactly equal: one row per distinct text


def test_caption_ranks_on_captions_with_missing_last():
    f = FakeFeatures(captions={("caption", A): "x", ("caption", B): "y"},
                     texts={"x": unit(1, 0), "y": unit(0, 1)}, queries={("text", Q): unit(0.1, 1)})
    arch = fill(build("caption", f), [obs(A), obs(B), obs(C, image=False)])
    assert slugs(arch.retrieve(Query(Q), 10)) == [B, A, C]
    assert [i.caption for i in arch.entries()] == ["x", "y", ""]


def test_caption_lexical_fallback_when_no_entry_has_a_caption():
    arch = fill(build("caption", FakeFeatures()), [obs(A, cat="lamp", image=False), obs(B, cat="rug", image=False)])
    assert slugs(arch.retrieve(Query("a rug please"), 10)) == [B, A]


def test_nomemory_encodes_nothing():
    arch = fill(build("nomemory", FakeFeatures()), [obs(A), obs(B)])
    assert len(arch) == 0 and A not in arch
    assert arch.retrieve(Query(Q), 10) == []
    assert arch.inject([]).text == "(no memory retrieved this step)"


# -- WorldMM-lite ----------------------------------------------------------------------------
def worldmm_feats():
    return FakeFeatures(captions={("worldmm-visual", A): "red wool scarf chair", ("worldmm-visual", B): "blue lamp",
                                  ("worldmm-visual", C): "red cap",
                                  ("worldmm-semantic", A): "modern chair", ("worldmm-semantic", B): "lamp",
                                  ("worldmm-semantic", C): "scarf style"})


def test_worldmm_multigrain_scores_by_hand():
    arch = fill(build("worldmm-lite", worldmm_feats()), [obs(A, j=0), obs(B, j=0), obs(C, j=1)])
    got = arch.retrieve(Query("product with red wool scarf CURRENT: /"), 10)   # routes to visual
    # s1 = [3, 0, 1]; session grain = [3, 3, 1]; chain grain = 3
    assert slugs(got) == [A, B, C]
    assert [i.score for i in got] == pytest.approx([0.55 * 3 + 0.3 * 3 + 0.15 * 3, 0.3 * 3 + 0.45, 0.55 + 0.3 + 0.45])
    assert arch.texts["episodic"] == [f"Session 0, turn 0: user viewed {A}.", f"Session 0, turn 1: user viewed {B}.",
                                      f"Session 1, turn 2: user viewed {C}."]
    assert all(i.caption is None for i in arch.entries())      # injects 'Caption: "a chair"'


def test_worldmm_fixed_routing_sums_the_rounds():
    router = {"name": "scripted", "args": {"replies": ["Thought\nNEXT: Semantic"], "cycle": False}}
    f = worldmm_feats()
    fixed = fill(build("worldmm-lite", f, routing="fixed", router=router), [obs(A), obs(B), obs(C, j=1)])
    official = fill(build("worldmm-lite", f), [obs(A), obs(B), obs(C, j=1)])
    q = "product with red wool scarf CURRENT: /"
    want = official.module_scores(q, "visual") + official.module_scores(q, "semantic")
    assert [i.score for i in fixed.retrieve(Query(q), 10)] == pytest.approx(sorted(want, reverse=True))
    assert "router=scripted (stand-in)" in fixed.label


# -- MMA-lite --------------------------------------------------------------------------------
E1, E2, E3 = unit(1, 0, 0), unit(0, 1, 0), unit(1, 1, 0)


def mma_feats(q):
    caps = {("mma", A): "one", ("mma", B): "two", ("mma", C): "three"}
    return FakeFeatures(captions=caps, texts={"a chair one": E1, "a chair two": E2, "a chair three": E3},
                        queries={("text", "q"): q})


def test_mma_reliability_by_hand_and_the_session_clock():
    q = unit(1, 0.1031, 0)
    rel = [float(q @ E1), float(q @ E2), float(q @ E3)]
    # C: e1 and e2 against the sum of the other two (cos = .7071 / |(.7071, 1.7071)|); e3 against e1 + e2 (1)
    c = [0.7071067811865476 / math.hypot(0.7071067811865476, 1.7071067811865475)] * 2 + [1.0]
    t = [2 ** (-2 / 5), 2 ** (-1 / 5), 1.0]                # ages 2, 1, 0 at session 2
    replay = [r * (0.4 + 0.3 * ti + 0.3 * ci) for r, ti, ci in zip(rel, t, c)]
    official = [r * (0.4 + 0.3 + 0.3 * ci) for r, ci in zip(rel, c)]
    seq = [obs(A, j=0), obs(B, j=1), obs(C, j=2)]
    fixed = fill(build("mma-lite", mma_feats(q)), seq)
    bug = fill(build("mma-lite-official", mma_feats(q)), seq)
    assert fixed.consensus().tolist() == pytest.approx(c, abs=1e-6)
    got_f, got_o = fixed.retrieve(Query("q"), 10), bug.retrieve(Query("q"), 10)
    assert [i.score for i in got_f] == pytest.approx(sorted(replay, reverse=True), abs=1e-6)
    assert [i.score for i in got_o] == pytest.approx(sorted(official, reverse=True), abs=1e-6)
    assert slugs(got_f) == [C, A, B] and slugs(got_o) == [A, C, B]   # decay flips the top two
    assert [i.session for i in fixed.entries()] == [0, 1, 2]


def test_mma_single_entry_consensus_and_zero_fallback():
    arch = fill(build("mma-lite", mma_feats(unit(0, 0, 1))), [obs(A)])
    assert arch.consensus().tolist() == [1.0]
    f = mma_feats(unit(0, 0, 1))
    f.texts.update({"a lamp one": E1, "a chair two": E2})
    f.queries[("text", "q two")] = unit(0, 0, 1)
    arch = fill(build("mma-lite", f), [obs(A, cat="lamp"), obs(B, cat="chair")])
    # q is orthogonal to every entry: R = 0 everywhere -> token overlap with "encode_text caption"
    assert slugs(arch.retrieve(Query("q two"), 10)) == [B, A]


# -- M2A-lite --------------------------------------------------------------------------------
def test_m2a_fusion_by_hand():
    q = "product with red cap"
    caps = {("m2a", A): "red cap here", ("m2a", B): "red lamp", ("m2a", C): "blue vase",
            ("caption", A): "F2 caption of a", ("caption", B): "F2 caption of b"}
    f = FakeFeatures(captions=caps, images={IMG[A]: unit(1, 0), IMG[B]: unit(-1, 0)},
                     queries={("visual", q): unit(0.5, math.sqrt(0.75))})
    arch = fill(build("m2a-lite", f), [obs(A), obs(B), obs(C, image=False)])
    texts = ["a chair red cap here", "a chair red lamp", "a chair blue vase"]
    assert arch.semantic_texts == texts
    from vismem.memory.agent.scoring import bm25_scores

    bm = bm25_scores(q, texts)
    overlap = np.array([2.0, 1.0, 0.0]) / 2.0               # {red, cap}, {red}, {}
    cos = np.array([0.5, -0.5, 0.0]) / 0.5                  # no image -> 0
    want = 0.35 * overlap + 0.25 * bm / np.max(np.abs(bm)) + 0.40 * cos
    got = arch.retrieve(Query(q), 10)
    assert [i.score for i in got] == pytest.approx(sorted(want, reverse=True))
    assert [i.caption for i in arch.entries()] == ["F2 caption of a", "F2 caption of b", None]
    assert arch.inject(got[:1]).images == ()                 # caption only
    ch = {i.slug: c for i, c in zip(got, arch.channel_scores(got))}  # each channel's raw score, by item
    assert ch[A] == pytest.approx({"overlap": 2.0, "bm25": bm[0], "visual": 0.5, "fused": want[0]})
    assert ch[C] == pytest.approx({"overlap": 0.0, "bm25": bm[2], "visual": 0.0, "fused": want[2]})


def test_encode_skips_a_product_already_banked():
    arch = fill(build("dualmem", dual_feats()), [obs(A, j=0), obs(B, j=0), obs(A, j=1)])
    assert len(arch) == 2 and arch.entries()[0].session == 0


def test_bank_size_is_the_probes_not_the_architectures():
    from vismem.memory.agent import bank_size_at, replay_chain

    stream = [obs(A, j=0), obs(B, j=0, step=2), obs(A, j=1), obs(C, j=2), obs(B, j=2, step=2)]
    dual, nomem = build("dualmem", dual_feats()), build("nomemory", FakeFeatures())
    for arch in (dual, nomem):
        sizes = {j: bank_size_at(stream, j) for j in replay_chain(arch, stream)}
        assert sizes == {0: 2, 1: 2, 2: 3}
    # the replayed bank of a memory that keeps visits has exactly that size; NoMemory keeps none,
    # yet its probes recall at the same bank size (issue 27: its rows carried 0)
    assert len(dual) == bank_size_at(stream, 2) and len(nomem) == 0
