"""Stand-ins named in every DMV-Bench table they affect, read from what the run recorded.

The replay stage records each architecture it built in the manifest
(``components["memory.<architecture>"]``: every component role with the label of what ran and
whether it is a stand-in, :meth:`vismem.memory.agent.base.ArchitectureBase.describe`). From that:

* :func:`stand_in_note`: one caption sentence naming the stand-in components of the
  architectures a table shows (``visual encoder pocket-clip (stand-in) in dualmem, ...``);
* :func:`relabel` / :func:`relabel_row`: an ablation row's paper label with what ran beside it
  (``encoder=siglip2 (ran: pocket-clip stand-in)``);
* :func:`equal_rows_note`: rows that are equal probe by probe under a stand-in recall back-end
  (the scripted policy opens the first recalled item, so variants that recall the same first
  item cannot differ): said in the caption instead of passing for a finding.

Nothing here names a model: every label comes from the manifest or the result rows. Pure.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import polars as pl

#: How a component role reads in a caption.
ROLE_NAMES = {"visual": "visual encoder", "text": "text encoder", "captioner": "captioner",
              "m2a_captioner": "M2A captioner", "semantic_captioner": "semantic captioner",
              "visual_captioner": "visual captioner", "router": "router"}
#: Variant-label keys (the probes' ``variant`` string) that name a component role.
LABEL_ROLES = {"encoder": "visual"}


def component_runs(manifest: dict[str, Any] | None) -> dict[str, dict[str, tuple[str, bool]]]:
    """``{architecture: {role: (label that ran, stand_in)}}`` from the manifest's components."""
    out: dict[str, dict[str, tuple[str, bool]]] = {}
    for key, rec in ((manifest or {}).get("components") or {}).items():
        if not (isinstance(key, str) and key.startswith("memory.") and isinstance(rec, dict)):
            continue
        roles = rec.get("components") if isinstance(rec.get("components"), dict) else {}
        out[str(rec.get("name") or key[len("memory."):])] = {
            str(role): (str(v.get("label")), bool(v.get("stand_in"))) for role, v in roles.items() if isinstance(v, dict)}
    return out


def _names(items: list[str], limit: int = 6) -> str:
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def stand_in_note(runs: dict[str, dict[str, tuple[str, bool]]], architectures: Iterable[str]) -> str:
    """``Stand-ins (as the run recorded them): visual encoder pocket-clip in a, b; captioner
    catalogue/caption in c.`` for the stand-in components of ``architectures``; '' when none."""
    shown = [a for a in dict.fromkeys(str(a) for a in architectures) if a in runs]
    by: dict[tuple[str, str], list[str]] = {}
    for a in shown:
        for role, (label, flag) in runs[a].items():
            if flag:
                by.setdefault((role, label), []).append(a)
    if not by:
        return ""
    parts = []
    for (role, label), archs in by.items():
        with_role = [a for a in shown if role in runs[a]]
        where = "every architecture here that has one" if archs == with_role and len(archs) > 1 else _names(archs)
        parts.append(f"{ROLE_NAMES.get(role, role)} {label} (stand-in) in {where}")
    return "Stand-ins, as the run recorded them (not the paper's models): " + "; ".join(parts) + "."


def relabel(variant: str | None, architecture: str, runs: dict[str, dict[str, tuple[str, bool]]]) -> str | None:
    """A probes ``variant`` string (``alpha=0.5, encoder=siglip2, ...``) with what ran beside each
    label a stand-in replaced: ``encoder=siglip2 (ran: pocket-clip stand-in)``."""
    if not variant or architecture not in runs:
        return variant

    def sub(m: re.Match) -> str:
        role = LABEL_ROLES.get(m.group(1))
        ran = runs[architecture].get(role) if role else None
        if ran is None or not ran[1]:
            return m.group(0)
        return f"{m.group(0)} (ran: {ran[0]} stand-in)"

    return re.sub(r"\b(\w+)=([^,]+)", sub, variant)


def relabel_row(row: str | None, block: str | None, architecture: str,
                runs: dict[str, dict[str, tuple[str, bool]]]) -> str | None:
    """A Table 4 row label with what ran beside it in the encoder block (``CLIP (ran: ...)``)."""
    ran = runs.get(architecture, {}).get("visual")
    if not row or not block or not str(block).startswith("encoder") or ran is None or not ran[1]:
        return row
    return f"{row} (ran: {ran[0]} stand-in)"


def _recallers(backends: Iterable[str]) -> list[str]:
    """The stand-in recall back-ends in result back-end labels (``browse / recaller``)."""
    out = []
    for b in backends:
        rec = str(b).rsplit(" / ", 1)[-1]
        if "(stand-in)" in rec and rec not in out:
            out.append(rec)
    return out


def _same_stand_in(probes: pl.DataFrame, groups: list[list[str]],
                   runs: dict[str, dict[str, tuple[str, bool]]]) -> list[str]:
    """``encoder=a and encoder=b both ran x (stand-in)`` for equal rows whose paper encoders differ
    but ran one stand-in (e.g. SigLIP-2 and CLIP rows, both pocket-clip here)."""
    if "encoder" not in probes.columns:
        return []
    enc = dict(probes.select("architecture", "encoder").unique("architecture").iter_rows())
    out = []
    for names in groups:
        ran: dict[str, set[str]] = {}
        for a in names:
            v = runs.get(a, {}).get("visual")
            if v and v[1] and enc.get(a):
                ran.setdefault(v[0], set()).add(str(enc[a]))
        out += [f"encoder={' and encoder='.join(sorted(labels))} both ran {label} (stand-in)"
                for label, labels in ran.items() if len(labels) > 1]
    return list(dict.fromkeys(out))


def equal_rows_note(probes: pl.DataFrame | None, architectures: Iterable[str],
                    runs: dict[str, dict[str, tuple[str, bool]]] | None = None) -> str:
    """Name the rows among ``architectures`` that are equal probe by probe in some (back-end, J)
    block whose recall back-end is a stand-in; '' when there are none. ``runs``
    (:func:`component_runs`) adds which paper encoders ran one and the same stand-in."""
    archs = list(dict.fromkeys(str(a) for a in architectures))
    if probes is None or probes.height == 0 or len(archs) < 2:
        return ""
    p = (probes.filter(pl.col("architecture").is_in(archs))
         .unique(["backend", "J", "seed", "probe_id", "architecture"], keep="first", maintain_order=True))
    recs = _recallers(p["backend"].unique().to_list())
    if not recs:
        return ""
    p = p.filter(pl.col("backend").str.contains("(stand-in)", literal=True))
    sig = (p.sort("seed", "probe_id").group_by("backend", "J", "architecture", maintain_order=True)
           .agg(pl.format("{}:{}:{}", "seed", "probe_id", pl.col("correct").cast(pl.Int8)).str.join(",").alias("sig")))
    groups: list[list[str]] = []
    for (_, _, _), g in sig.group_by("backend", "J", "sig", maintain_order=True):
        names = sorted(g["architecture"].to_list(), key=archs.index)
        if len(names) > 1 and names not in groups:
            groups.append(names)
    if not groups:
        return ""
    same = _same_stand_in(p, groups, runs or {})
    return (f"Equal probe by probe in this run: {'; '.join(' = '.join(g) for g in groups)}. The recall back-end "
            f"({', '.join(recs)}) is a scripted stand-in that opens the first recalled item, so rows that recall "
            "the same first item -- e.g. variants differing only in what they inject"
            + (f", or whose paper encoders ran one stand-in ({'; '.join(same)})" if same else "")
            + " -- score the same by construction here; with a real VLM they can differ.")


#: Tables whose rows are ablation variants: equal rows there are said to be equal by construction.
ABLATION_TABLES = ("ablations", "table4", "alpha")


def table_architectures(t: Any, probes: pl.DataFrame | None) -> list[str]:
    """The architectures a DMV-Bench table shows: its ``architecture`` / ``source`` / ``a``, ``b`` /
    ``A``, ``B`` (headline) columns; every main-grid architecture for the leader bins (each is compared)."""
    df = t.df
    cols = [c for c in ("architecture", "source", "a", "b") if c in df.columns]
    if "study" in df.columns and {"A", "B"} <= set(df.columns):
        df = df.filter(pl.col("study") == "DMV-Bench")
        cols = ["A", "B"]
    names = [str(v) for c in cols for v in df[c].drop_nulls().to_list()]
    if t.id == "leader-bins" and probes is not None and probes.height:
        names += probes.filter(pl.col("study") == "main")["architecture"].unique().sort().to_list()
    return [n for n in dict.fromkeys(names) if n != "n_r"]


def _captioner_note(t: Any, runs: dict[str, dict[str, tuple[str, bool]]]) -> str:
    """For a table listing captioners by label (the cue-verbalisation rate)."""
    if "captioner" not in t.df.columns:
        return ""
    stand = {label for roles in runs.values() for role, (label, flag) in roles.items() if flag and "captioner" in role}
    shown = [c for c in t.df["captioner"].drop_nulls().unique().sort().to_list() if c in stand]
    return f"Stand-ins, as the run recorded them: captioner {', '.join(shown)} (stand-in)." if shown else ""


def annotate(tables: Iterable[Any], probes: pl.DataFrame | None, manifest: dict[str, Any] | None) -> None:
    """Name the stand-ins in every given DMV-Bench table's caption, relabel ablation rows with what
    ran, and say which ablation rows are equal by construction (in place)."""
    runs = component_runs(manifest)
    for t in tables:
        archs = table_architectures(t, probes)
        notes = [stand_in_note(runs, archs) or _captioner_note(t, runs)]
        if t.id in ABLATION_TABLES:
            notes.append(equal_rows_note(probes, archs, runs))
        if runs and "variant" in t.df.columns and "architecture" in t.df.columns:
            t.df = t.df.with_columns(pl.struct("variant", "architecture").map_elements(
                lambda r: relabel(r["variant"], r["architecture"], runs), return_dtype=pl.String).alias("variant"))
        if runs and {"row", "block", "architecture"} <= set(t.df.columns):
            t.df = t.df.with_columns(pl.struct("row", "block", "architecture").map_elements(
                lambda r: relabel_row(r["row"], r["block"], r["architecture"], runs), return_dtype=pl.String)
                .alias("row"))
        extra = " ".join(n for n in notes if n)
        if extra:
            t.caption = f"{t.caption} {extra}".strip()


__all__ = ["ABLATION_TABLES", "annotate", "component_runs", "equal_rows_note", "relabel", "relabel_row",
           "stand_in_note", "table_architectures"]
