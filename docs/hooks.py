"""MkDocs hook: the "Recorded benchmark JSON" page and its figures, drawn at build time.

Benchmark JSON (``vismem bench ... --out bench/results/NAME.json``) is generated data and stays
out of git, so the page is made from whatever is recorded in ``bench/results/`` when the docs
are built (``$VISMEM_BENCH_RESULTS`` names another folder): per file a table of its records
and one figure of each targeted metric against its target. With no JSON recorded the page
says so and the build still passes. Nothing here is fetched; matplotlib draws offline (Agg,
text as paths).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from mkdocs.structure.files import File

PAGE = "bench-recorded.md"
ROOT = Path(__file__).resolve().parent.parent


def results_dir() -> Path:
    """Where recorded benchmark JSON is read from."""
    return Path(os.environ.get("VISMEM_BENCH_RESULTS") or ROOT / "bench" / "results")


def load_records(folder: Path) -> dict[str, list[dict]]:
    """``file stem -> records`` for every readable ``*.json`` list of records in ``folder``."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        try:
            recs = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        recs = [r for r in recs if isinstance(r, dict) and {"name", "metric", "value"} <= r.keys()] \
            if isinstance(recs, list) else []
        if recs:
            out[path.stem] = recs
    return out


def figure_svg(records: list[dict]) -> bytes | None:
    """A horizontal bar per targeted metric: its value as a share of its target (1 = on target)."""
    targeted = [r for r in records if r.get("target") and not r.get("error")]
    if not targeted:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "path"  # text as paths: no font is looked up by a browser
    plt.rcParams["svg.hashsalt"] = "vismem"  # stable ids across builds
    labels = [f"{r['name']}: {r['metric']}"[:60] for r in targeted]
    shares = [r["value"] / r["target"] for r in targeted]
    good = [(s <= 1) if r.get("better", "lower") == "lower" else (s >= 1) for r, s in zip(targeted, shares)]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(targeted) + 1))
    ax.barh(labels, shares, color=["#2e7d32" if g else "#c62828" for g in good])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xlabel("value / target (green: target met)")
    ax.invert_yaxis()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


def _table(records: list[dict]) -> list[str]:
    rows = ["| benchmark | metric | value | unit | target | load |", "|---|---|---|---|---|---|"]
    for r in records:
        target = "" if r.get("target") is None else f"{'≤' if r.get('better') == 'lower' else '≥'} {r['target']:g}"
        value = r.get("error") or f"{r['value']:.4g}"
        q = r.get("ratio") or {}
        if "of_value" in q and not r.get("error"):  # a ratio over a record of the same run: both figures
            value += f" ({q['of_value']:.4g} {q['of_unit']} / {q['over_value']:.4g} {q['over_unit']})"
        load = "" if r.get("load") is None else f"{r['load']:.1f}"
        rows.append(f"| {r['name']} | {r['metric']} | {value} | {r.get('unit', '')} | {target} | {load} |")
    return rows


def render(folder: Path) -> tuple[str, dict[str, bytes]]:
    """The page's markdown and its figures (``img/bench/NAME.svg`` -> SVG bytes)."""
    recorded = load_records(folder)
    lines = ["# Recorded benchmark JSON\n",
             "Drawn when the docs are built from the records `vismem bench NAME --out bench/results/NAME.json` "
             "wrote (the JSON itself stays out of git). See [Benchmarks](benchmarks.md) for what each "
             "benchmark measures and the last full run.\n"]
    figures: dict[str, bytes] = {}
    if not recorded:
        lines.append(f"No benchmark JSON is recorded in `{folder.name}/` of this checkout: run "
                     "`vismem bench --out bench/results/all.json` and rebuild the docs.\n")
    for stem, recs in recorded.items():
        machine = recs[0].get("machine", "unknown machine")
        lines += [f"\n## {stem}.json\n", f"Measured on {machine}.\n", *_table(recs), ""]
        svg = figure_svg(recs)
        if svg is not None:
            figures[f"img/bench/{stem}.svg"] = svg
            lines.append(f"![{stem}: value against target](img/bench/{stem}.svg)\n")
    return "\n".join(lines) + "\n", figures


def on_files(files, config):  # noqa: ANN001 -- MkDocs' hook signature
    """Add the generated page and its figures to the build."""
    text, figures = render(results_dir())
    files.append(File.generated(config, PAGE, content=text))
    for uri, svg in figures.items():
        files.append(File.generated(config, uri, content=svg))
    return files
