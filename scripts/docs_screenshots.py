#!/usr/bin/env python
"""Screenshots for the docs, from a real local run, in headless Chromium.

Runs a small local job (a few `--set` flags over the `local` preset, into a temporary
file:// store), opens the report and the two viewers it wrote from file://, and saves each
as a palette PNG under ``docs/img/`` (small enough to commit: a few hundred KB in all).
Run by hand after a change to the report or viewers::

    .venv/bin/python scripts/docs_screenshots.py            # run + screenshots
    .venv/bin/python scripts/docs_screenshots.py --report-dir runs/RUN_ID/report   # reuse a report

The pictures are only ever made here, so they show what the code draws.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "img"
# The small run: one chain of 3 sessions, MemShot's text units only (OCR of shots is the slow
# part of the local preset and adds nothing to the pictures' layout).
SMALL_RUN = ["--set", "encode.chains=1", "--set", "encode.J=3",
             "--set", "memshot.variants=[no-render,text-rag]", "--set", "memshot.memories=[]"]
# Same flags as the test suite's Chromium (tests/conftest.py): closed network, root, no GPU.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
#: page file -> (png name, viewport height): what each screenshot shows.
PAGES = {"index.html": ("report.png", 900), "trajectories.html": ("trajectories.png", 800),
         "samples.html": ("samples.png", 800)}


def small_run(workdir: Path) -> Path:
    """Run the small local job into ``workdir``; return its copied-out report folder."""
    cmd = [sys.executable, "-m", "vismem", "run", "--store", f"file://{workdir}/store", "--no-progress",
           "--json", "--set", f"runs_dir={workdir}/runs", *SMALL_RUN]
    env = {**os.environ, "VISMEM_PROGRESS": "0"}
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"the small run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    run_id = json.loads(done.stdout[done.stdout.index("{"):])["_run_id"]
    copied = workdir / "runs" / run_id / "report"
    # A file:// store is already local: the run leaves its report there instead of copying it.
    return copied if copied.is_dir() else workdir / "store" / "runs" / run_id / "report"


def shoot(report_dir: Path, out: Path = OUT, width: int = 1200) -> list[Path]:
    """Screenshot each page of ``report_dir`` into ``out`` as a 256-colour PNG; return the files."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            for page_name, (png, height) in PAGES.items():
                if not (report_dir / page_name).is_file():
                    print(f"skipped {page_name}: not in {report_dir}", file=sys.stderr)
                    continue
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto((report_dir / page_name).resolve().as_uri(), wait_until="load")
                page.wait_for_timeout(1500)  # the viewers fill their lists from script
                raw = page.screenshot(full_page=False)
                page.close()
                # A palette PNG: UI screenshots have few colours, ~5x smaller than RGB.
                img = Image.open(io.BytesIO(raw)).convert("RGB").quantize(colors=256)
                img.save(out / png, optimize=True)
                written.append(out / png)
        finally:
            browser.close()
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report-dir", type=Path, help="screenshot this report folder instead of running")
    ap.add_argument("--workdir", type=Path, help="keep the small run's store and runs here (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vismem-shots-") as tmp:
        report = args.report_dir or small_run((args.workdir or Path(tmp)).resolve())
        for path in shoot(report, args.out):
            print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}  {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
