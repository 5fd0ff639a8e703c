"""Content-addressed features: spec keys, computed once across variants, table-backed replay."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from agentmem_fakes import LOCAL, CountingCaptioner, CountingEmbedder, make_step, product_hashes

from vismem.memory.agent import (InProcessFeatures, MissingFeature, Query, TableFeatures, build_architecture, list_variants,
                          observations_from_steps, replay_chain, tables_from_frames, tables_to_frames,
                          with_components)
from vismem.memory.agent.features import caption_feature, embedder_feature, spec_key

H = product_hashes()


def test_spec_key_ignores_transport_and_location_only():
    base = {"name": "openai", "args": {"model": "m", "base_url": "http://a/v1", "timeout_s": 5, "label": "x"}}
    moved = {"name": "openai", "args": {"model": "m", "base_url": "http://b/v1", "max_concurrency": 64}}
    other = {"name": "openai", "args": {"model": "m2", "base_url": "http://a/v1"}}
    assert spec_key("caption", base) == spec_key("caption", moved) != spec_key("caption", other)
    p1 = {"name": "siglip2", "args": {"path": "/models/siglip2-base-patch16-384", "device": "cuda"}}
    p2 = {"name": "siglip2", "args": {"path": "/mnt/w/siglip2-base-patch16-384/", "batch_size": 8}}
    assert spec_key("image_embedding", p1) == spec_key("image_embedding", p2)
    assert spec_key("image_embedding", p1) != spec_key("text_embedding", p1)


def test_caption_tasks_are_distinct_features_of_one_backend():
    keys = {t: caption_feature("catalogue", t).key for t in ("caption", "worldmm-semantic", "mma", "m2a")}
    assert len(set(keys.values())) == 4
    assert caption_feature({"name": "catalogue", "args": {"data_dir": "/elsewhere"}}, "caption").key == keys["caption"]
    assert embedder_feature("image_embedding", "tiny-siglip2").stand_in
    assert not embedder_feature("text_embedding", "minilm").stand_in


def chain():
    hs = H["chair"] + H["lamp"]
    steps = [make_step(j, n + 1, h) for j in range(3) for n, h in enumerate(hs[j * 3: j * 3 + 5])]
    steps.append(make_step(1, 9, "deadbeef", image=False))
    return observations_from_steps(steps)


def counting_features(made):
    def emb(spec):
        made.append(CountingEmbedder(spec["name"]))
        return made[-1]

    def cap(spec):
        made.append(CountingCaptioner(spec["args"]["task"]))
        return made[-1]

    return InProcessFeatures(lambda k: k.encode(), build_embedder=emb, build_captioner=cap)


def all_variants(feats):
    return [build_architecture(with_components(v, LOCAL), features=feats) for v in list_variants()]


def test_every_feature_is_computed_once_across_all_variants():
    made: list = []
    feats = counting_features(made)
    obs = chain()
    for arch in all_variants(feats):
        list(replay_chain(arch, obs))
    images = {o.image_key for o in obs if o.image_key}
    captioners = [m for m in made if isinstance(m, CountingCaptioner)]
    assert sorted(c.task for c in captioners) == ["caption", "m2a", "mma", "worldmm-semantic", "worldmm-visual"]
    for c in captioners:
        assert max(Counter(c.seen).values()) == 1, c.task      # each product captioned once per task
    # The F2 caption is asked only for visits with an image; adapters also caption image-less ones.
    assert len(next(c for c in captioners if c.task == "caption").seen) == len(images)
    assert len(next(c for c in captioners if c.task == "mma").seen) == len(images) + 1
    embedders = [m for m in made if isinstance(m, CountingEmbedder)]
    assert len(embedders) == 2                                   # tiny-siglip2 (visual) and minilm (text)
    for e in embedders:
        assert max(Counter(e.images).values(), default=1) == 1
        assert max(Counter(e.texts).values(), default=1) == 1
    assert len(next(e for e in embedders if e.name == "siglip2").images) == len(images)


def test_precompute_then_replay_calls_no_model_and_tables_round_trip():
    made: list = []
    feats = counting_features(made)
    obs = chain()
    archs = all_variants(feats)
    done = feats.precompute(obs, archs, batch_size=4)
    assert done["caption"] > 0 and done["image_embedding"] == len({o.image_key for o in obs if o.image_key})
    calls = Counter(feats.calls)
    for arch in archs:
        list(replay_chain(arch, obs))
    assert feats.calls == calls                                 # replay read only cached features

    frames = tables_to_frames(feats.tables)
    table = TableFeatures(tables_from_frames(frames), read_blob=lambda k: k.encode(), fallback=feats)
    q = Query.probe("red wool scarf", "/")
    for v, arch in zip(list_variants(), archs):
        again = build_architecture(with_components(v, LOCAL), features=table)
        list(replay_chain(again, obs))
        a, b = arch.retrieve(q, 10), again.retrieve(q, 10)
        assert [i.slug for i in a] == [i.slug for i in b], v
        assert np.allclose([i.score for i in a], [i.score for i in b]), v
        assert arch.inject(a[:3]) == again.inject(b[:3]), v


def test_table_features_without_fallback_name_what_is_missing():
    table = TableFeatures(tables_from_frames(tables_to_frames(InProcessFeatures(lambda k: b"").tables)))
    arch = build_architecture(with_components("dualmem", LOCAL), features=table)
    with pytest.raises(MissingFeature, match="tiny-siglip2"):
        list(replay_chain(arch, chain()))


def test_required_features_union_is_small():
    feats = InProcessFeatures(lambda k: b"")
    union = {fs for a in all_variants(feats) for fs in a.required_features()}
    kinds = Counter(fs.kind for fs in union)
    # 5 caption tasks of one captioner; 1 visual encoder locally (clip swapped too); 1 text encoder
    assert kinds == {"caption": 5, "image_embedding": 1, "text_embedding": 1}


class _Flaky:
    """Fails (the official error text) on its first call for each product, then answers."""

    def __init__(self):
        self.seen: list[str] = []

    def caption(self, image, *, url_hash=None):
        self.seen.append(url_hash)
        return "<caption error: TimeoutError>" if self.seen.count(url_hash) == 1 else f"ok {url_hash}"


def test_failed_captions_are_not_kept_and_workers_run_batches():
    flaky = _Flaky()
    feats = InProcessFeatures(lambda k: b"png", build_captioner=lambda spec: flaky, caption_workers=4)
    fs = caption_feature("catalogue", "caption")
    assert feats.caption("blobs/sha256/" + "a" * 64 + ".png", "h1", fs) == "<caption error: TimeoutError>"
    assert feats.caption("blobs/sha256/" + "a" * 64 + ".png", "h1", fs) == "ok h1"      # retried, then kept
    assert feats.caption("blobs/sha256/" + "a" * 64 + ".png", "h1", fs) == "ok h1"
    assert flaky.seen == ["h1", "h1"]
    items = [(f"blobs/sha256/{i:064x}.png", f"p{i}") for i in range(8)]
    assert feats._caption_batch(fs, items) == ["<caption error: TimeoutError>"] * 8
    assert feats._caption_batch(fs, items) == [f"ok p{i}" for i in range(8)]


def test_feature_cache_key_ignores_credentials():
    from vismem.memory.agent.features import spec_key

    base = {"name": "openai", "args": {"model": "gemini-2.5-flash", "temperature": 0}}
    with_key = {"name": "openai", "args": {**base["args"], "api_key": "sk-CANARY-123456", "auth_token": "t0k3n-xyz"}}
    assert spec_key("caption", base) == spec_key("caption", with_key)
    assert spec_key("caption", base) != spec_key("caption", {"name": "openai", "args": {**base["args"], "temperature": 1}})
