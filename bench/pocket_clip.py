"""``pocket-clip``: text→image retrieval of catalogue cues by the pocket dual encoder.

The shipped ``pocket-clip`` weights (a stand-in for SigLIP-2, named as such in every record) embed
the 1,000 procedural catalogue images of the local preset's catalogue (seed 0), with and without
cue, and the probe phrases ``product with {colour} {object}`` (the object actually drawn). Metrics:

* ``recall_at_1`` / ``recall_at_5`` over the 1,000 with-cue images (targets 0.95 / 0.99);
* ``probe_recall_at_1``: the same with the probe's ``CURRENT: /product/<hash>`` tail;
* ``chain_recall_at_1`` over the bank of one J = 15 encoding chain (target 0.97; see ``chain_bank``);
* ``base_recall_at_1`` over the cue-free images, beside ``chance`` (it should be about chance);
* embedding throughput on 2 cores (``images_per_s`` from 512 px PNG bytes: one torch thread, two
  decode/resample threads; ``texts_per_s``), the
  1,000 images' wall time, the training wall time (from the weights' metadata), weights size
  and peak RSS.
"""

from __future__ import annotations

import json
import os
import random
import resource
import time
from typing import Any

import numpy as np

from vismem.bench.calibration import per_unit
from vismem.bench.harness import benchmark, record

NAME = "pocket-clip"
CHAIN_SEED, CHAIN_J, PER_SESSION = 0, 15, 10


def _category_order(seed: int) -> list[str]:
    from vismem.agents.chains import category_order

    return category_order(seed)


def _data_dir() -> str:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import resolve_data_dir

    return str(resolve_data_dir(RunConfig()))


def chain_bank(catalog: Any, seed: int = CHAIN_SEED, J: int = CHAIN_J, per_session: int = PER_SESSION) -> list[str]:
    """The url_hashes a J-session chain visits, without running a browser.

    Session ``j`` browses category ``category_order(seed)[j % 10]`` (the official seeding); it is
    taken to visit ``per_session`` products of that category, drawn without replacement by a rng
    seeded by (seed, j), never one already visited — 150 products for J = 15.
    """
    order, seen, out = _category_order(seed), set(), []
    for j in range(J):
        cat = order[j % len(order)]
        pool = sorted(v.url_hash for v in catalog.variants if v.cat == cat and v.url_hash not in seen)
        picks = random.Random(f"pocket-bench.{seed}.{j}").sample(pool, min(per_session, len(pool)))
        seen.update(picks)
        out += picks
    return out


def recall_at(queries: np.ndarray, items: np.ndarray, k: int) -> float:
    """Share of queries ``i`` whose item ``i`` ranks in the top ``k`` (ties count against it)."""
    s = queries @ items.T
    own = s[np.arange(len(s)), np.arange(len(s))][:, None]
    return float(((s > own).sum(1) < k).mean())


def _render(catalog: Any) -> tuple[list[bytes], list[bytes], float]:
    from vismem.env.storefront.images.sources import ProceduralImageSource

    src = ProceduralImageSource(catalog, cache_items=0)
    t0 = time.perf_counter()
    pairs = [src.get_pair(v.url_hash) for v in catalog.variants]
    return [p[0] for p in pairs], [p[1] for p in pairs], time.perf_counter() - t0


@benchmark(NAME, "pocket-clip (stand-in for SigLIP-2): cue-phrase text→image recall over the catalogue and a J=15 chain bank")
def pocket_clip() -> list[dict[str, Any]]:
    """Embed the catalogue with the shipped weights and score cue-phrase retrieval (module docstring)."""
    from vismem.env.storefront.catalog import load_catalog
    from vismem.env.storefront.images.sources import ProceduralImageSource
    from vismem.serve.build import build_embedder

    load0 = os.getloadavg()[0]
    catalog = load_catalog(_data_dir(), seed=0)
    cued, base, render_s = _render(catalog)
    emb = build_embedder({"name": "pocket-clip", "args": {}})
    depicted = ProceduralImageSource(catalog).depicted_object
    phrases = [f"product with {v.cue_color} {depicted(v.url_hash)}" for v in catalog.variants]
    hashes = [v.url_hash for v in catalog.variants]
    t0 = time.perf_counter()
    I = emb.embed_images(cued)
    images_s = time.perf_counter() - t0
    B = emb.embed_images(base)
    emb.embed_texts(phrases[:8])  # loads MiniLM outside the timed call
    t0 = time.perf_counter()
    Q = emb.embed_texts(phrases)
    texts_s = time.perf_counter() - t0
    probes = emb.embed_queries([f"{p} CURRENT: /product/{hashes[(i * 7 + 3) % len(hashes)]}" for i, p in enumerate(phrases)])
    bank = chain_bank(catalog)
    at = {h: i for i, h in enumerate(hashes)}
    rows = np.array([at[h] for h in bank])
    meta = emb.meta
    timings = json.loads(meta.get("timings", "{}"))
    label = {"embedder": emb.name, "stand_in_for": emb.stands_in_for}
    records = [
        record(NAME, "recall_at_1", recall_at(Q, I, 1), "share", target=0.95, better="higher"),
        record(NAME, "recall_at_5", recall_at(Q, I, 5), "share", target=0.99, better="higher"),
        record(NAME, "probe_recall_at_1", recall_at(probes, I, 1), "share", better="higher"),
        {**record(NAME, "chain_recall_at_1", recall_at(Q[rows], I[rows], 1), "share", target=0.97, better="higher"),
         "description": f"bank of the {len(bank)} products one J={CHAIN_J} chain (seed {CHAIN_SEED}) visits: each "
                        f"session's category from the official seeding (agents.chains.category_order), "
                        f"{PER_SESSION} products of it sampled per session, none twice"},
        record(NAME, "base_recall_at_1", recall_at(Q, B, 1), "share"),
        record(NAME, "chance", 1.0 / len(hashes), "share"),
        record(NAME, "images_per_s", len(cued) / images_s, "images/s", better="higher"),
        record(NAME, "catalog_embed_s", images_s, "s"),
        per_unit(NAME, "catalog_embed_s", target_s=60.0),
        record(NAME, "texts_per_s", len(phrases) / texts_s, "texts/s", better="higher"),
        record(NAME, "train_wall_s", float(timings.get("total_s", float("nan"))), "s"),
        record(NAME, "weights_mb", emb.path.stat().st_size / 2**20, "MiB", target=10.0),
        record(NAME, "render_s", render_s, "s"),
        record(NAME, "peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "MiB"),
        # other processes on the machine: a 1-minute load far above the core count slows images_per_s
        record(NAME, "load_avg_1m", max(load0, os.getloadavg()[0]), "procs"),
    ]
    return [{**r, **label} for r in records]
