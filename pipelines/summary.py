"""The end-of-run summary: per stage what ran or was reused, headline numbers, where things are.

:func:`collect` gathers it after a run (the stages' summaries, stage times from the manifest, the
headline numbers scored from the run's result tables by ``vismem.analysis.report.headline`` -- the same
scoring as the report -- and the local paths of the report and viewers); :func:`render` prints it
as rich tables. ``vismem run --json`` prints the machine-readable form instead.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from vismem.pipelines.stage import count

def stage_rows(results: dict[str, Any], manifest: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per stage that ran: name, status, wall seconds, what happened."""
    times = {k: v for k, v in ((manifest or {}).get("stages") or {}).items() if isinstance(v, dict)}
    rows = []
    for name, s in results.items():
        if name.startswith("_") or not isinstance(s, dict):
            continue
        status = s.get("status") or (times.get(name) or {}).get("status") or "done"
        t = times.get(name) or {}
        wall = t.get("wall_s", s.get("wall_s"))
        what = "disabled in the config" if status == "disabled" else _describe(name, s)
        # Peak memory (MiB) of the stage: this driver alone, and with the processes it started.
        rows.append({"stage": name, "status": status, "wall_s": wall, "peak_rss_mib": t.get("peak_rss_mib"),
                     "tree_peak_mib": t.get("tree_peak_mib"), "what": what})
    return rows


def _describe(name: str, summary: dict[str, Any]) -> str:
    """The stage's own line for its summary (empty for a name that is no stage)."""
    from vismem.pipelines.stage import get_stage
    from vismem.pipelines.stage_order import STAGE_ORDER

    return get_stage(name).describe(summary) if name in STAGE_ORDER else ""


def collect(results: dict[str, Any], *, manifest: dict[str, Any] | None, tables: dict[str, Any],
            options: Any, wall_s: float, store_uri: str, run_id: str, report: str | None,
            viewers: dict[str, str], run_log: str | None) -> dict[str, Any]:
    """Everything the summary shows, JSON-able (headline frames as lists of records)."""
    from vismem.analysis.report import headline

    heads = headline(tables, options) if tables else {}
    rows = stage_rows(results, manifest)
    peaks = [r["tree_peak_mib"] for r in rows if r.get("tree_peak_mib") is not None]
    return {"run_id": run_id, "wall_s": round(wall_s, 1), "peak_mib": max(peaks) if peaks else None, "stages": rows,
            "headline": {k: v.to_dicts() for k, v in heads.items()},
            "where": {"store": store_uri, "results": f"{store_uri}/runs/{run_id}/results/",
                      "result_tables": sorted(tables), "report": report, **viewers, "run_log": run_log},
            "partial": results.get("_partial") or []}


def _pct(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def _ci(r: dict[str, Any], lo: str, hi: str) -> str:
    a, b = r.get(lo), r.get(hi)
    return "" if a is None or b is None or math.isnan(a) or math.isnan(b) else f"[{_pct(a)}, {_pct(b)}]"


def _secs(v: Any) -> str:
    if v is None:
        return ""
    v = float(v)
    return f"{v:.1f} s" if v < 90 else f"{int(v // 60)} min {int(v % 60)} s"


def _mib(r: dict[str, Any]) -> str:
    tree, own = r.get("tree_peak_mib"), r.get("peak_rss_mib")
    if tree is None and own is None:
        return ""
    return f"{tree or own:,.0f} MiB" + (f" ({own:,.0f} driver)" if tree and own else "")


def render(summary: dict[str, Any], console: Any = None) -> None:
    """Print ``summary`` (from :func:`collect`) as rich tables on ``console`` (default: stdout)."""
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    status = "finished with failed shards" if summary["partial"] else "done"
    peak = f", peak memory {summary['peak_mib']:,.0f} MiB" if summary.get("peak_mib") else ""
    con.print(f"\n[bold]vismem run {summary['run_id']}[/bold] {status} in {_secs(summary['wall_s'])}{peak}")
    con.print("[bold]Stages[/bold] [dim](peak memory: PSS of the driver and the processes it started, "
              "e.g. a local Ray)[/dim]", soft_wrap=True)
    t = Table(show_edge=False)
    for c in ("stage", "status", "time", "peak memory", "what ran / was reused"):
        t.add_column(c, justify="right" if c in ("time", "peak memory") else "left")
    for r in summary["stages"]:
        colour = {"partial": "yellow", "failed": "red"}.get(r["status"], "green")
        t.add_row(r["stage"], f"[{colour}]{r['status']}[/{colour}]", _secs(r["wall_s"]), _mib(r), r["what"])
    con.print(t)
    h = summary["headline"]
    blocks: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in h.get("dmv") or []:
        blocks.setdefault((r["backend"], r["J"]), []).append(r)
    for (backend, J), rows in blocks.items():
        # Long titles as lines of their own: a table title wraps at the table's width.
        con.print(f"[bold]DMV-Bench task success rate[/bold]: {backend}, J={J} "
                  "[dim](common probe set; 95% CI: chain-cluster bootstrap)[/dim]", soft_wrap=True)
        t = Table(show_edge=False)
        for c in ("architecture", "TSR %", "95% CI", "probes", "chains"):
            t.add_column(c, justify="left" if c == "architecture" else "right")
        for r in rows:
            t.add_row(r["architecture"], _pct(r["tsr"]), _ci(r, "low", "high"), count(r["n_probes"]), count(r["n_chains"]))
        con.print(t)
    if h.get("memshot_recall"):
        con.print("[bold]MemShot evidence recall@k[/bold] [dim](95% CI: question bootstrap)[/dim]", soft_wrap=True)
        t = Table(show_edge=False)
        for c in ("variant", "k", "recall %", "95% CI", "hit %", "95% CI ", "questions"):
            t.add_column(c, justify="left" if c == "variant" else "right")
        for r in h["memshot_recall"]:
            t.add_row(r["variant"], str(r["k"]), _pct(r["recall"]), _ci(r, "recall lo", "recall hi"), _pct(r["hit"]),
                      _ci(r, "hit lo", "hit hi"), count(r["n"]))
        con.print(t)
    if h.get("memshot_answers"):
        con.print("[bold]MemShot answers[/bold] [dim](Acc: LLM judge, F1: token F1; 95% CI: question "
                  "bootstrap)[/dim]", soft_wrap=True)
        t = Table(show_edge=False)
        for c in ("variant", "k", "Acc %", "95% CI", "F1 %", "95% CI ", "answers"):
            t.add_column(c, justify="left" if c == "variant" else "right")
        for r in h["memshot_answers"]:
            t.add_row(r["variant"], str(r["k"]), _pct(r.get("acc")), _ci(r, "acc lo", "acc hi"), _pct(r["f1"]),
                      _ci(r, "f1 lo", "f1 hi"), count(r["n"]))
        con.print(t)
    if h.get("encoding"):
        con.print("[bold]DMV-Bench encoding sessions[/bold] [dim](means per session)[/dim]", soft_wrap=True)
        t = Table(show_edge=False)
        for c in ("back-end", "sessions", "chains", "steps", "products", "styles"):
            t.add_column(c, justify="left" if c == "back-end" else "right")
        for r in h["encoding"]:
            t.add_row(r["backend"], count(r["sessions"]), count(r["chains"]), f"{r['steps_mean']:.1f}",
                      f"{r['products_mean']:.1f}", f"{r['styles_mean']:.1f}")
        con.print(t)
    w = summary["where"]
    # Plain lines, not a table: paths must stay whole to be clicked or copied.
    con.print("[bold]Where things are[/bold]")
    rows = [("store", w["store"]), ("result tables", f"{w['results']} ({', '.join(w['result_tables']) or 'none'})")]
    for key, label in (("report", "report"), ("trajectories", "trajectory viewer"), ("samples", "sample viewer"),
                       ("run_log", "run log")):
        if w.get(key):
            rows.append((label, w[key]))
    # Quoted for the shell: a store folder may hold spaces or quotes.
    flag = "" if w["store"].startswith("local-s3://") else f" --store {shlex.quote(w['store'])}"
    rows.append(("browse", f"vismem runs{flag}  |  vismem store ls runs/{summary['run_id']}/results/{flag}"))
    for label, value in rows:
        con.print(f"  {label:<18} {value}", soft_wrap=True, highlight=False)
