"""Targets as ratios measured in the same run, and what moved between two recorded runs (issue 43).

A time means little off a fixed machine, so no benchmark record with a time unit carries a
target (:func:`vismem.bench.harness.record` refuses one). A timed goal is a *ratio record*
instead: its value is one record of the run divided by another record of the same run -- a
peer doing the same work (boto3 for the store, scipy for statistics, a plain Pillow renderer for
shots, a plain-loop replay for memory) or the run's calibration unit
(:mod:`vismem.bench.calibration`). A ratio record names both by ``(benchmark, metric)``;
:func:`resolve` fills in its value from the run's records, so the figure and the two absolute
figures it was made from stay side by side in the JSON.

:func:`compare` is a pure function over two recorded runs: the machine-independent records
(ratios, shares, fractions, speed-ups, targeted sizes) of both, with the relative change of each
and whether it moved the wrong way past the noise, so a regression shows whatever machines the
runs were on.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Literal

from vismem.bench.records import SECONDS, meets, record, timed_unit

#: Units of records that compare across machines (besides ratio records): dimensionless figures.
MACHINE_FREE_UNITS = frozenset({"x", "share", "fraction"})
#: A relative change smaller than this is reported as noise ("same").
NOISE = 0.10

Ref = tuple[str, str]


def ratio(name: str, metric: str, of: str | Ref, over: str | Ref, *, target: float | None = None,
          better: Literal["lower", "higher"] = "lower") -> dict[str, Any]:
    """A ratio record: ``of / over``, both records of this run (a bare metric name is one of
    benchmark ``name``'s own records); its value is filled in by :func:`resolve`."""
    rec = record(name, metric, math.nan, "x", target=target, better=better)
    rec["ratio"] = {"of": list(_ref(name, of)), "over": list(_ref(name, over))}
    return rec


def _ref(name: str, ref: str | Ref) -> Ref:
    return (name, ref) if isinstance(ref, str) else (ref[0], ref[1])


def resolve(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with every ratio record's value computed from the same list (the last record of
    each ``(benchmark, metric)`` counts); a ratio whose parts are missing or failed gets an
    ``error`` naming the part. Other records are returned unchanged."""
    records = list(records)
    by_key = {(r["name"], r["metric"]): r for r in records if "ratio" not in r}
    out = []
    for r in records:
        if "ratio" not in r:
            out.append(r)
            continue
        r = {**r, "ratio": dict(r["ratio"])}
        r.pop("error", None)
        parts = [by_key.get(tuple(r["ratio"][k])) for k in ("of", "over")]
        bad = next((tuple(r["ratio"][k]) for k, p in zip(("of", "over"), parts)
                    if p is None or p.get("error") or not math.isfinite(p["value"])), None)
        if bad is not None:
            r["value"], r["error"] = math.nan, f"ratio: no usable record {bad[0]} / {bad[1]} in this run"
        else:
            num, den = parts
            scale = SECONDS[num["unit"]] / SECONDS[den["unit"]] if {num["unit"], den["unit"]} <= SECONDS.keys() else 1.0
            r["value"] = num["value"] * scale / den["value"] if den["value"] else math.inf
            r["ratio"].update(of_value=num["value"], of_unit=num["unit"], over_value=den["value"],
                              over_unit=den["unit"])
        out.append(r)
    return out


def describe(rec: dict[str, Any]) -> str:
    """``'2.02 s / 0.27 s'``: the absolute figures a resolved ratio record was made from."""
    q = rec.get("ratio") or {}
    if "of_value" not in q:
        return ""
    return f"{q['of_value']:.4g} {q['of_unit']} / {q['over_value']:.4g} {q['over_unit']}"


def comparable(rec: dict[str, Any]) -> bool:
    """Whether a record means the same on any machine: a ratio, a dimensionless figure, or a
    targeted figure that is not a time (a page's size, a peak memory)."""
    if rec.get("error"):
        return False
    return "ratio" in rec or rec.get("unit") in MACHINE_FREE_UNITS or (
        rec.get("target") is not None and not timed_unit(str(rec.get("unit", ""))))


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]], *, noise: float = NOISE) -> list[dict[str, Any]]:
    """One row per machine-independent record of either run: ``old``, ``new``, ``change`` (new /
    old - 1), ``verdict`` (``worse`` / ``better`` past ``noise`` in the record's direction,
    ``same``, ``new`` or ``gone``) and the target with whether each run met it."""
    olds = {(r["name"], r["metric"]): r for r in resolve(old) if comparable(r)}
    news = {(r["name"], r["metric"]): r for r in resolve(new) if comparable(r)}
    rows = []
    for key in [*olds, *(k for k in news if k not in olds)]:
        o, n = olds.get(key), news.get(key)
        ref = n or o
        row = {"name": key[0], "metric": key[1], "old": o and o["value"], "new": n and n["value"],
               "target": ref.get("target"), "better": ref.get("better", "lower"),
               "met_old": o and meets(o), "met_new": n and meets(n), "change": None}
        if o is None or n is None:
            row["verdict"] = "new" if o is None else "gone"
        else:
            row["change"] = n["value"] / o["value"] - 1 if o["value"] else math.inf
            worse = row["change"] > 0 if row["better"] == "lower" else row["change"] < 0
            row["verdict"] = "same" if abs(row["change"]) < noise else ("worse" if worse else "better")
        rows.append(row)
    return rows


def run_info(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The machine, the calibration unit and the calibration workload's version of a recorded run."""
    cal = next((r for r in records if r.get("name") == "calibration" and r.get("metric") == "unit_s"), None)
    machine = next((r.get("machine") for r in records if r.get("machine")), "unknown machine")
    return {"machine": machine, "unit_s": cal and cal["value"], "version": cal and cal.get("calibration_version"),
            "load": cal and cal.get("load")}


def compare_report(old: list[dict[str, Any]], new: list[dict[str, Any]], *, noise: float = NOISE) -> str:
    """:func:`compare` as text: the two runs' machines and calibration units, then one line per
    record, the ones that got worse first."""
    a, b = run_info(old), run_info(new)
    lines = [f"old: {a['machine']}; calibration unit {_fmt(a['unit_s'])} s",
             f"new: {b['machine']}; calibration unit {_fmt(b['unit_s'])} s"]
    if a["version"] != b["version"]:
        lines.append(f"note: the calibration workloads differ (version {a['version']} vs {b['version']}): "
                     "ratios over the calibration unit do not compare")
    rows = compare(old, new, noise=noise)
    order = {"worse": 0, "better": 1, "new": 2, "gone": 3, "same": 4}
    rows.sort(key=lambda r: order[r["verdict"]])
    lines.append(f"{'verdict':8s} {'benchmark':24s} {'metric':44s} {'old':>10s} {'new':>10s} {'change':>8s} target")
    for r in rows:
        change = "" if r["change"] is None else f"{100 * r['change']:+.0f} %"
        target = "" if r["target"] is None else f"{'<=' if r['better'] == 'lower' else '>='} {r['target']:g}" + (
            "" if r["met_new"] in (None, True) else " (missed)")
        lines.append(f"{r['verdict']:8s} {r['name'][:24]:24s} {r['metric'][:44]:44s} {_fmt(r['old']):>10s} "
                     f"{_fmt(r['new']):>10s} {change:>8s} {target}")
    worse = sum(r["verdict"] == "worse" for r in rows)
    lines.append(f"{len(rows)} machine-independent records; {worse} moved the wrong way by {noise:.0%} or more")
    return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"
