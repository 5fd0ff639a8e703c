"""``trajectory-viewer``: the DMV-Bench trajectory viewer of a paper-sized run opens fast and small.

Setup (``build_s``: making the data and writing the page): synthetic data the size of the ``paper`` preset's
main run -- 2 back-ends x 20 chains x J = 15 sessions x 25 steps (15,000 encoding steps with
thoughts and observation images), the exhaustive probes of those chains (about 840 a chain) for
17 architectures (~570,000 probe rows), step logs with memory blocks and replies for the probes
the page samples (``vismem.pipelines.report.viewers.MAX_PROBE_LOGS`` episodes), written with
its images as files into a temp folder as the report stage does.

Measured in Chromium from ``file://`` (``$VISMEM_CHROMIUM`` or ``chromium`` on the PATH):
``open_s`` from navigation to the page marking itself ready (target 2 s on the reference machine,
as a ratio over the run's calibration unit), ``probe_open_s`` to show
one probe side by side with its logs, and the page's size (``html_mb``, target 20 MB);
``open_cpu_s``: the renderer's CPU seconds to ready (what the open costs on an idle core).
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from vismem.bench.calibration import per_unit
from vismem.bench.harness import benchmark, record, renderer_cpu
from vismem.bench.prose import prose

NAME = "trajectory-viewer"
TARGET_OPEN_S = 2.0
TARGET_MB = 20.0
SHAPE = {"backends": 2, "chains": 20, "J": 15, "steps": 25, "products_per_session": 8, "architectures": 17}


def _text(rng: random.Random, n: int) -> str:
    # English-like words: the page gzips its text, and a few repeated words would halve its size.
    return prose(rng, n)


def _png(i: int) -> bytes:
    import io

    from PIL import Image, ImageDraw

    im = Image.new("RGB", (512, 512), (150 + i * 37 % 100, 120 + i * 13 % 120, 100 + i * 7 % 150))
    ImageDraw.Draw(im).ellipse((100 + i % 200, 150, 400, 420), fill=(i * 53 % 255, 40, 40))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def synthetic_run(seed: int = 0, **shape: Any) -> tuple[Any, Any, dict[str, bytes], dict[str, str]]:
    """``(steps, probes, images, product_images)`` of a paper-sized run (probes without logs)."""
    import polars as pl

    sh = {**SHAPE, **shape}
    rng = random.Random(seed)
    images = {f"blobs/sha256/{i:064x}": _png(i) for i in range(64)}  # a few distinct bytes suffice
    keys = sorted(images)
    steps: dict[str, list] = {c: [] for c in ("backend", "seed", "j", "step", "url", "url_hash", "image_key",
                                               "thought", "action_text", "status")}
    probes: dict[str, list] = {c: [] for c in ("backend", "chain_slug", "seed", "J", "architecture", "arch_key",
                                                "probe_id", "visit_session", "recall_session", "reach",
                                                "target_url", "final_url", "correct", "steps", "target_cue", "failure")}
    products: dict[str, str] = {}
    archs = [f"arch-{a:02d}" for a in range(sh["architectures"])]
    for b in range(sh["backends"]):
        chain = f"backend-{b}"
        for s in range(sh["chains"]):
            visits: list[list[str]] = []
            for j in range(1, sh["J"] + 1):
                seen = [f"{b}{s:02d}{j:02d}{p:02d}aa" for p in range(sh["products_per_session"])]
                visits.append(seen)
                for n in range(1, sh["steps"] + 1):
                    h = seen[n % len(seen)] if n % 3 else None
                    key = keys[(s * 31 + j * 7 + n) % len(keys)] if h else None
                    if h:
                        products.setdefault(h, key)
                    for c, v in (("backend", chain), ("seed", s), ("j", j), ("step", n),
                                 ("url", f"/product/{h}" if h else f"/category/c{n}"), ("url_hash", h),
                                 ("image_key", key), ("thought", _text(rng, 40)),
                                 ("action_text", f'navigate("/product/{h}")'), ("status", "ok")):
                        steps[c].append(v)
            for at in range(1, sh["J"]):
                for t in range(at):
                    for h in visits[t]:
                        for a in archs:
                            ok = rng.random() < 0.6
                            for c, v in (("backend", chain), ("chain_slug", chain), ("seed", s), ("J", sh["J"]),
                                         ("architecture", a), ("arch_key", a + "--k"), ("probe_id", f"s{t}_{h}"),
                                         ("visit_session", t + 1), ("recall_session", at + 1), ("reach", at - t),
                                         ("target_url", f"/product/{h}"),
                                         ("final_url", f"/product/{h}" if ok else "/product/ffff"), ("correct", ok),
                                         ("steps", 4), ("target_cue", "red ball"),
                                         ("failure", None if ok else "wrong_product")):
                                probes[c].append(v)
    return pl.DataFrame(steps), pl.DataFrame(probes), images, products


@functools.lru_cache(maxsize=None)
def _caption(h: str) -> str:
    """A product's stored caption: the same text every time the product is recalled."""
    return _text(random.Random(h), 30)


def with_logs(probes: Any, seed: int = 0) -> Any:
    """``probes`` with a synthetic step log (4 steps: memory block, reply, 5 recalled) and channel
    scores per row."""
    import json

    import polars as pl

    rng = random.Random(seed)
    logs, scores = [], []
    for target in probes["target_url"]:
        h = target.rsplit("/", 1)[-1]
        rec = [h] + [f"{h[:-2]}{i:02d}" for i in range(4)]
        logs.append(json.dumps([{"url": "/", "status": "ok", "action_type": "navigate", "action_arg": target,
                                 "reply": "Thought: " + _text(rng, 60) + "\nAction: navigate", "recalled": rec,
                                 "n_images": 6, "memory_text": "\n".join(f"({i + 1}) /product/{r} " + _caption(r)
                                                                         for i, r in enumerate(rec))}
                                for _ in range(4)]))
        scores.append(json.dumps([[{"visual": rng.random(), "verbal": rng.random(), "fused": rng.random()}
                                   for _ in rec] for _ in range(4)]))
    return probes.with_columns(pl.Series("log", logs), pl.Series("scores", scores))


def build(out: Path, seed: int = 0, **shape: Any) -> tuple[Path, dict[str, Any]]:
    """Write the viewer of a synthetic paper-sized run into ``out``; ``(page path, sample info)``."""
    from vismem.analysis.probe_page import pair_counts, sample_note, sample_probes
    from vismem.analysis.viewer import trajectory_viewer
    from vismem.pipelines.report.viewers import MAX_PROBE_LOGS

    steps, probes, images, products = synthetic_run(seed, **shape)
    pairs = pair_counts(probes)
    probes, info = sample_probes(probes, MAX_PROBE_LOGS, seed=seed)
    assets: dict[str, bytes] = {}
    html = trajectory_viewer(steps, with_logs(probes, seed), images, product_images=products, run_id="bench",
                             note=sample_note(info), assets=assets, pairs=pairs)
    for rel, data in assets.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    page = out / "trajectories.html"
    page.write_text(html)
    return page, info


def open_times(page: Path, chromium: str) -> tuple[float, float, float]:
    """Seconds to the page's ready mark, to one probe shown side by side (from ``file://``), and
    the renderer's CPU seconds to the ready mark (:func:`vismem.bench.harness.renderer_cpu`)."""
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=args)
        try:
            tab = browser.new_page()
            tab.goto("about:blank")
            clock = renderer_cpu(tab)
            c0, t0 = clock(), time.perf_counter()
            tab.goto(page.as_uri(), wait_until="commit")
            tab.wait_for_selector("body[data-ready]", timeout=120_000)
            opened, cpu = time.perf_counter() - t0, clock() - c0
            tab.click("#tab-probes")
            t1 = time.perf_counter()
            tab.locator(".probe-item").nth(1).click()
            tab.wait_for_selector("#detail .arch-log .probe-step", timeout=60_000)
            return opened, time.perf_counter() - t1, cpu
        finally:
            browser.close()


@benchmark(NAME, "the trajectory viewer of a synthetic paper-sized run (40 chains x J=15, 17 architectures): "
           "opens in Chromium in <= 2 s, HTML <= 20 MB")
def run() -> list[dict[str, Any]]:
    chromium = os.environ.get("VISMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory(prefix="vismem-bench-viewer-") as tmp:
        t0 = time.perf_counter()
        page, info = build(Path(tmp))
        build_s = time.perf_counter() - t0
        out = [record(NAME, "html_mb", page.stat().st_size / 1e6, "MB", target=TARGET_MB),
               record(NAME, "build_s", build_s, "s"),
               record(NAME, "sampled_probes", info["sampled_probes"], "probes", better="higher"),
               record(NAME, "sampled_episodes", info["sampled_episodes"], "episodes", better="higher"),
               record(NAME, "probes", info["probes"], "probes", better="higher")]
        opened, probe, cpu = open_times(page, chromium)
        return out + [record(NAME, "open_s", opened, "s"), per_unit(NAME, "open_s", target_s=TARGET_OPEN_S),
                      record(NAME, "open_cpu_s", cpu, "s"),
                      record(NAME, "probe_open_s", probe, "s")]
