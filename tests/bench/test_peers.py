"""The peers written for the benchmarks (issue 43): the plain Pillow shot renderer and the
plain-loop memory replay do the work they stand beside, on small inputs."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def test_the_naive_renderer_draws_shots_of_the_variants_size(data_dir):
    from vismem.bench.naive_shots import NaiveRenderer, measure, peer_records
    from vismem.env.dialogue import load_locomo
    from vismem.memory.dialogue.variants import load_variant

    conv = load_locomo(data_dir / "locomo/locomo10.json")[0]
    variant = load_variant("memshot")
    shots = NaiveRenderer(variant).session_shots(conv.sessions[0], conv.speakers)
    assert len(shots) >= 2
    for png in shots:
        img = Image.open(io.BytesIO(png))
        assert img.format == "PNG" and img.width == variant.style.width and img.height <= variant.max_height
        # drawn, not blank: the header band, bubbles and text give many colours
        assert len(img.convert("RGB").getcolors(maxcolors=1 << 16) or []) > 20
    m = measure(conv, variant, sessions=2)
    assert m["shots"] >= 4 and m["ms_per_shot"] == m["wall_s"] * 1e3 / m["shots"]
    recs = {r["metric"]: r for r in peer_records(conv, variant)}
    assert recs["naive.ms_per_shot"]["unit"] == "ms" and recs["naive.ms_per_shot"]["target"] is None


def test_the_plain_loop_replay_reads_each_variants_features_once_per_new_product():
    from vismem.bench.memory_replay import plain_loop_replay
    from vismem.memory.agent.features import FeatureSpec, FeatureTables, caption_id, content_id, text_id
    from vismem.memory.agent.types import Observation

    cap = FeatureSpec("caption", {}, "cap", "cap", True)
    img = FeatureSpec("image_embedding", {}, "img", "img", True)
    txt = FeatureSpec("text_embedding", {}, "txt", "txt", True)
    obs = [Observation(f"/product/h{i % 3}", f"h{i % 3}", "item", None, i // 2, i % 2,
                       f"blobs/sha256/{i % 3:064x}.png", i) for i in range(6)]

    class Counting(dict):
        reads = 0

        def get(self, key, default=None):
            Counting.reads += 1
            return super().get(key, default)

    tables = FeatureTables(captions=Counting(), image_embeddings=Counting(), text_embeddings=Counting())
    for o in obs:
        tables.captions[("cap", caption_id(o.image_key, o.url_hash))] = f"a {o.url_hash}"
        tables.image_embeddings[("img", content_id(o.image_key))] = np.ones(4, np.float32)
        tables.text_embeddings[("txt", text_id(f"a {o.url_hash}"))] = np.ones(3, np.float32)
    seconds = plain_loop_replay(tables, {"chain": obs}, [[cap, img, txt], [cap]])
    # 3 distinct products: 3 lookups each for the first variant, 1 for the second
    assert seconds >= 0 and Counting.reads == 3 * 3 + 3 * 1
