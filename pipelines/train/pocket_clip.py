"""Train ``pocket-clip`` from scratch on procedural scenes (CPU, seeded, deterministic).

    python -m vismem.pipelines.train.pocket_clip --out serve/embedders/weights/pocket-clip.safetensors

Recipe: render ``samples`` scenes of ``vismem.env.storefront.images.trainset`` (never a catalogue image)
at ``render_size`` px; keep of each the whole frame at the locator's resolution and a window
around its pictograph (jittered, with a margin for per-step shifts) at the recogniser's. Train all
three towers at once: a symmetric in-batch contrastive loss between images and freshly drawn
captions whose text side also holds hard negatives (same object in another colour, same colour on
another object), auxiliary colour and object heads on the image features (dropped after
training), and the locator's cross-entropy on the pictograph's cell. The recogniser trains on
windows around the true position; at inference it gets the locator's.

Everything random flows from ``seed``: scenes are pure functions of (seed, index), batches,
shifts and captions come from seeded generators, torch runs with fixed threads and deterministic
algorithms, so the same command reproduces the shipped weights.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vismem.env.storefront.images import trainset as ts

RENDER_WORKERS = 2  # scene rendering is pure Python + Pillow: one process per core
# One intra-op thread for training: on a 2-core machine that something else also uses, two OpenMP
# threads wait on each other whenever a core is taken (measured 3-5x slower per step than one).
TRAIN_THREADS = 1
CHUNK = 400  # scenes per render task


@dataclass(frozen=True)
class Recipe:
    """Every knob of a training run (written into the weights' metadata)."""

    seed: int = 0
    samples: int = 24000
    steps: int = 1400
    batch: int = 128
    lr: float = 3e-3
    weight_decay: float = 0.05
    warmup: int = 40
    render_size: int = 192
    jitter: float = 0.02  # render-time offset of the stored window's centre (frame units)
    aux_weight: float = 0.5
    locator_weight: float = 1.0
    config: dict = field(default_factory=dict)  # architecture overrides of DEFAULT_CONFIG


def full_config(recipe: Recipe) -> dict[str, Any]:
    """The architecture a recipe trains: ``DEFAULT_CONFIG`` with the recipe's overrides."""
    from vismem.serve.embedders.pocket import DEFAULT_CONFIG

    return {**DEFAULT_CONFIG, **recipe.config}


def text_words() -> list[str]:
    """The text tower's vocabulary: every word a training caption can contain (sorted)."""
    from vismem.env.storefront.images.scene import PAINTERS
    from vismem.env.storefront.images.styles import STYLES
    from vismem.serve.embedders.pocket import tokenize

    parts = [*ts.VOCAB, *ts.PALETTE, *ts.TEMPLATES, *ts.PLAIN_TEMPLATES, "current product category",
             *(ts.CATEGORY_WORDS.get(c, c) for c in PAINTERS), *(s.replace("_", " ") for s in STYLES)]
    return sorted({w for p in parts for w in tokenize(p.replace("{c}", "").replace("{o}", "")
                                                      .replace("{cat}", "").replace("{style}", ""))})


def _render_chunk(args: tuple[int, int, int, int, dict]) -> dict[str, np.ndarray]:
    from vismem.serve.embedders.pocket import crop_window, resized

    seed, lo, hi, size, cfg = args
    n, big = hi - lo, cfg["crop_res"] + 2 * cfg["crop_margin"]
    share = cfg["crop"] * big / cfg["crop_res"]
    cells = cfg["locator_res"] // 4  # the locator's heatmap side (stem /2, one stride-2 stage)
    out = {"whole": np.empty((n, cfg["locator_res"], cfg["locator_res"], 3), np.uint8),
           "window": np.empty((n, big, big, 3), np.uint8),
           **{k: np.empty(n, np.int64) for k in ("cell", "obj", "colour", "plain")}}
    for k, i in enumerate(range(lo, hi)):
        s = ts.render_sample(seed, i, size)
        rng = ts.sample_rng(seed, i, salt="pocket-window")
        if s.cue_bbox is None:  # cue-free: a window anywhere (the locator points somewhere)
            cx, cy, cell = rng.uniform(0.15, 0.85), rng.uniform(0.15, 0.85), -1
        else:
            x0, y0, x1, y1 = s.cue_bbox
            cx, cy = (x0 + x1) / 2 / size, (y0 + y1) / 2 / size
            cell = min(int(cy * cells), cells - 1) * cells + min(int(cx * cells), cells - 1)
        j = lambda: rng.uniform(-1, 1) * cfg.get("jitter", 0.02)  # noqa: E731
        out["whole"][k] = resized(s.image, cfg["locator_res"])
        out["window"][k] = crop_window(s.image, cx + j(), cy + j(), share, big)
        out["cell"][k], out["obj"][k], out["colour"][k] = cell, s.obj, s.colour
        out["plain"][k] = -1 if s.obj >= 0 else _plain_key(s.style, s.category)
    return out


def _plain_key(style: str, cat: str) -> int:
    from vismem.env.storefront.images.scene import PAINTERS
    from vismem.env.storefront.images.styles import STYLES

    return sorted(STYLES).index(style) * len(PAINTERS) + sorted(PAINTERS).index(cat)


def render_dataset(recipe: Recipe, workers: int = RENDER_WORKERS) -> dict[str, np.ndarray]:
    """The training arrays (whole frames, windows, labels), in index order whatever ``workers``."""
    cfg = {**full_config(recipe), "jitter": recipe.jitter}
    n = recipe.samples
    chunks = [(recipe.seed, lo, min(n, lo + CHUNK), recipe.render_size, cfg) for lo in range(0, n, CHUNK)]
    if workers > 1:
        with mp.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_render_chunk, chunks, chunksize=1)
    else:
        parts = [_render_chunk(c) for c in chunks]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def batch_texts(rng: random.Random, objs: np.ndarray, cols: np.ndarray, plain: np.ndarray,
                confused: np.ndarray | None = None) -> tuple[list[str], np.ndarray]:
    """This step's captions: one per distinct positive, plus hard negatives per cue image (same
    object in another colour, same colour on a random other object, and — given ``confused``, the
    object the model currently mistakes each image for — same colour on that object); returns
    ``(texts, target)`` with ``target[i]`` the index of image ``i``'s caption."""
    from vismem.env.storefront.images.scene import PAINTERS
    from vismem.env.storefront.images.styles import STYLES

    cats, styles = sorted(PAINTERS), sorted(STYLES)
    keys: dict[tuple, int] = {}
    texts: list[str] = []

    def add(key: tuple) -> int:
        if key not in keys:
            keys[key] = len(texts)
            if key[0] == "cue":
                texts.append(ts.caption_for(ts.PALETTE[key[2]], ts.VOCAB[key[1]], rng))
            else:
                texts.append(ts.plain_caption(cats[key[1] % len(cats)], styles[key[1] // len(cats)], rng))
        return keys[key]

    target = np.array([add(("cue", int(o), int(c)) if o >= 0 else ("plain", int(p)))
                       for o, c, p in zip(objs, cols, plain)])
    V, C = len(ts.VOCAB), len(ts.PALETTE)
    for i, (o, c) in enumerate(zip(objs, cols)):
        if o >= 0:
            add(("cue", int(o), (int(c) + rng.randrange(1, C)) % C))
            add(("cue", (int(o) + rng.randrange(1, V)) % V, int(c)))
            if confused is not None:
                add(("cue", int(confused[i]), int(c)))
    return texts, target


def most_confused(logits, objs: np.ndarray) -> np.ndarray:
    """Per image, the wrong object its object head scores highest (online hard-negative mining:
    random negatives are mostly easy; the look-alike glyphs are what retrieval gets wrong)."""
    torch = _torch()
    scores = logits.detach().clone()
    rows = torch.from_numpy(np.nonzero(objs >= 0)[0])
    scores[rows, torch.from_numpy(objs[objs >= 0])] = float("-inf")
    return scores.argmax(1).numpy()


def _torch():
    import torch

    return torch


@contextmanager
def torch_mode(seed: int):
    """Seeded, deterministic, fixed-thread torch for a training run; the process's previous
    settings come back afterwards (the tests train inside a pytest process shared with others)."""
    torch = _torch()
    det = torch.utils.deterministic
    prev = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(), det.fill_uninitialized_memory)
    torch.set_num_threads(TRAIN_THREADS)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    # CPU kernels are deterministic already; filling every fresh tensor (this mode's default, to
    # catch reads of uninitialised memory) doubles a step's time on 2 cores
    det.fill_uninitialized_memory = False
    try:
        yield torch
    finally:
        torch.set_num_threads(prev[0])
        torch.use_deterministic_algorithms(prev[1])
        det.fill_uninitialized_memory = prev[2]


def _shifted_crops(window: np.ndarray, res: int, rng: np.random.Generator) -> np.ndarray:
    """A ``res`` crop of each stored window at a random offset (the locator's error, simulated)."""
    m = window.shape[1] - res
    off = rng.integers(0, m + 1, (len(window), 2))
    return np.stack([w[y: y + res, x: x + res] for w, (y, x) in zip(window, off)])


def _contrastive(F, logits, target: np.ndarray):
    """Symmetric InfoNCE: each image against every caption; each positive caption against every
    image, with images that share the caption as equal targets."""
    torch = _torch()
    tgt = torch.from_numpy(target)
    pos_cols = torch.unique(tgt)  # captions that are some image's positive
    soft = (tgt[None, :] == pos_cols[:, None]).float()
    return 0.5 * (F.cross_entropy(logits, tgt) + F.cross_entropy(logits.T[pos_cols], soft / soft.sum(1, keepdim=True)))


def _optimiser(torch, model, heads, log_scale, recipe: Recipe):
    params = [*model.parameters(), *heads.parameters()]
    decay = [p for p in params if p.ndim > 1 and p is not model.text.words.weight]
    rest = [p for p in params if not (p.ndim > 1 and p is not model.text.words.weight)] + [log_scale]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=recipe.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / recipe.warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / max(1, recipe.steps)))))
    return opt, sched


def train(recipe: Recipe, data: dict[str, np.ndarray], *, log=print) -> dict[str, Any]:
    """Train the model; returns ``{"model", "words", "config", "losses"}``."""
    with torch_mode(recipe.seed) as torch:
        return _train(torch, recipe, data, log)


def _train(torch, recipe: Recipe, data: dict[str, np.ndarray], log) -> dict[str, Any]:
    from vismem.serve.embedders.pocket import Vocab, build_model, pixels_to_tensor

    F = torch.nn.functional
    config, words = full_config(recipe), text_words()
    vocab = Vocab(words)
    model = build_model(config, words).to(memory_format=torch.channels_last)
    width = model.proj.in_features
    heads = torch.nn.ModuleDict({"colour": torch.nn.Linear(width, len(ts.PALETTE)),
                                 "object": torch.nn.Linear(width, len(ts.VOCAB))})
    log_scale = torch.nn.Parameter(torch.tensor(math.log(1 / 0.07)))
    opt, sched = _optimiser(torch, model, heads, log_scale, recipe)
    rng = np.random.default_rng(recipe.seed)
    crng = random.Random(f"pocket-captions|{recipe.seed}")
    n = len(data["obj"])
    order, pos, losses, t0 = rng.permutation(n), 0, [], time.perf_counter()
    for step in range(recipe.steps):
        if pos + recipe.batch > n:
            order, pos = rng.permutation(n), 0
        idx = np.sort(order[pos: pos + recipe.batch])
        pos += recipe.batch
        objs, cols = data["obj"][idx], data["colour"][idx]
        crops = _shifted_crops(data["window"][idx], config["crop_res"], rng)
        heat, feats = model.image_features(pixels_to_tensor(data["whole"][idx]), pixels_to_tensor(crops))
        obj_logits = heads["object"](feats)
        texts, target = batch_texts(crng, objs, cols, data["plain"][idx], most_confused(obj_logits, objs))
        img = F.normalize(model.proj(feats), dim=-1)
        txt = F.normalize(model.text(torch.from_numpy(vocab.encode(texts))), dim=-1)
        contrast = _contrastive(F, log_scale.clamp(max=math.log(100.0)).exp() * img @ txt.T, target)
        aux = F.cross_entropy(obj_logits, torch.from_numpy(objs), ignore_index=-1) + \
            F.cross_entropy(heads["colour"](feats), torch.from_numpy(cols), ignore_index=-1)
        locate = F.cross_entropy(heat, torch.from_numpy(data["cell"][idx]), ignore_index=-1)
        loss = contrast + recipe.aux_weight * aux + recipe.locator_weight * locate
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if step % 50 == 0 or step == recipe.steps - 1:
            log(f"step {step:4d}  loss {np.mean(losses[-50:]):.3f}  contrast {float(contrast.detach()):.3f}  aux {float(aux.detach()):.3f}  "
                f"locate {float(locate.detach()):.3f}  scale {float(log_scale.detach().exp()):.1f}  {time.perf_counter() - t0:.0f}s")
    model.eval()
    return {"model": model, "words": words, "config": config, "losses": losses}


def save(path: str | Path, result: dict[str, Any], recipe: Recipe, timings: dict[str, float]) -> None:
    """Write the model as safetensors, with config, vocabulary, recipe and timings as metadata."""
    from safetensors.torch import save_file

    meta = {"format": "pocket-clip/2", "config": json.dumps(result["config"], sort_keys=True),
            "words": json.dumps(result["words"]), "recipe": json.dumps(asdict(recipe), sort_keys=True),
            "timings": json.dumps(timings, sort_keys=True), "final_loss": f"{np.mean(result['losses'][-20:]):.4f}",
            "trainset": f"env.storefront.images.trainset salt={ts.SALT} vocab={len(ts.VOCAB)} palette={len(ts.PALETTE)}"}
    state = {k: v.detach().contiguous() for k, v in result["model"].state_dict().items()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path), metadata=meta)


def run(recipe: Recipe, out: str | Path | None, *, log=print) -> dict[str, Any]:
    """Render, train, save; returns the training result with its timings."""
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    data = render_dataset(recipe)
    t1 = time.perf_counter()
    log(f"rendered {recipe.samples} scenes in {t1 - t0:.0f}s")
    result = train(recipe, data, log=log)
    t2 = time.perf_counter()
    timings = {"render_s": round(t1 - t0, 1), "train_s": round(t2 - t1, 1), "total_s": round(t2 - t0, 1),
               "train_threads": TRAIN_THREADS, "render_workers": RENDER_WORKERS,
               "load_avg_1m": round(max(load0, os.getloadavg()[0]), 2), "cpus": os.cpu_count() or 0}
    log(f"trained {recipe.steps} steps in {t2 - t1:.0f}s (total {t2 - t0:.0f}s)")
    if out:
        save(out, result, recipe, timings)
        log(f"wrote {out}")
    return {**result, "timings": timings}


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(prog="python -m vismem.pipelines.train.pocket_clip", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="safetensors file to write")
    p.add_argument("--seed", type=int, default=Recipe.seed)
    p.add_argument("--steps", type=int, default=Recipe.steps)
    p.add_argument("--samples", type=int, default=Recipe.samples)
    p.add_argument("--batch", type=int, default=Recipe.batch)
    p.add_argument("--config", default="{}", help="JSON architecture overrides (e.g. '{\"crop_res\": 64}')")
    a = p.parse_args(argv)
    recipe = Recipe(seed=a.seed, steps=a.steps, samples=a.samples, batch=a.batch, config=json.loads(a.config))
    run(recipe, a.out, log=lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
