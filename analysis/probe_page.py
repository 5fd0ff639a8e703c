"""The trajectory viewer's probe side, as pure functions over the run's probe rows.

A *probe* is one recall question of one chain (chain back-end, seed, probe id, recall session);
every architecture answers it. The viewer shows a probe with all architectures side by side, so
rows are grouped by probe here, and on a paper-sized run (20 chains x 2 back-ends x J = 15 is
about 34,000 probes per architecture) only a sample of probes goes into the page:
:func:`sample_probes` takes, per architecture x reach, the probes whose seeded hash is smallest,
and keeps every architecture's row of each chosen probe (a hash of the probe, not of the row, so
the same probes are chosen for every architecture and side-by-side rows are complete).

Each probe's step logs (every architecture's) are one gzipped JSON chunk, inflated by the page
only when the probe is opened: the page's start-up work does not grow with the logs.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from typing import Any, Iterable, Mapping

import polars as pl

from vismem.core.failures import shorten

#: Characters of a reply / memory block kept per probe step in the page.
TEXT_CAP = 4000
#: Columns naming one probe (the chain it recalls in, the question, when it was asked).
IDENTITY = ("chain_slug", "seed", "probe_id", "recall_session")


def _identity(probes: pl.DataFrame) -> list[str]:
    return [c if c in probes.columns else "backend" for c in IDENTITY]


def probe_uid(chain: Any, seed: Any, probe_id: Any, recall: Any) -> str:
    """The probe's key in the page and its permalinks: ``chain|seed|probe id|recall session``."""
    return f"{chain}|{seed}|{probe_id}|{recall}"


def _rank(seed: int, uid: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{uid}".encode()).digest()[:8], "big")


def sample_probes(probes: pl.DataFrame, max_episodes: int, *, seed: int = 0) -> tuple[pl.DataFrame, dict[str, int]]:
    """A seeded sample of ``probes`` stratified by architecture x reach, within ``max_episodes``
    rows, and what was kept (``probes``/``sampled_probes``: distinct probes; ``episodes``/
    ``sampled_episodes``: rows; ``per_stratum``: probes chosen per architecture x reach).

    Every stratum gets the same number of probes (those with the smallest ``sha256(seed:probe)``);
    all rows of a chosen probe are kept. A run within the budget is returned whole.
    """
    ident = _identity(probes)
    uids = [probe_uid(*r) for r in probes.select(ident).iter_rows()]
    df = probes.with_columns(pl.Series("_uid", uids, dtype=pl.String))
    n_probes = df["_uid"].n_unique()
    info = {"probes": n_probes, "episodes": probes.height}
    if probes.height <= max_episodes:
        return probes, {**info, "sampled_probes": n_probes, "sampled_episodes": probes.height, "per_stratum": 0}
    arch = "architecture" if "architecture" in df.columns else "arch_key"
    reach = "reach" if "reach" in df.columns else "recall_session"
    ranks = {u: _rank(seed, u) for u in set(uids)}
    pairs = sorted(df.select(arch, reach, "_uid").unique().iter_rows(), key=lambda r: (str(r[0]), r[1], ranks[r[2]]))
    rows_of = dict(df.group_by("_uid").len().iter_rows())
    # The largest per-stratum count whose probes' rows fit (rows grow with it: a binary search).
    lo, hi = 1, max(1, df.group_by(arch, reach).len()["len"].max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(rows_of[u] for u in _chosen(pairs, mid)) <= max_episodes:
            lo = mid
        else:
            hi = mid - 1
    n, chosen = lo, _chosen(pairs, lo)
    out = df.filter(pl.col("_uid").is_in(list(chosen))).drop("_uid")
    return out, {**info, "sampled_probes": len(chosen), "sampled_episodes": out.height, "per_stratum": n}


def pair_counts(probes: pl.DataFrame) -> dict[str, dict[str, list[int]]]:
    """Over the whole run (before any sample): for every ordered pair of architectures, on the
    probes both answered, ``[hit-hit, hit-miss, miss-hit, miss-miss]`` (``out[a][b]``), so the
    page can say how often "hit in A, miss in B" happens beyond the probes it holds."""
    if probes.height == 0:
        return {}
    ident = _identity(probes)
    wide = (probes.select(*ident, "architecture", "correct").unique([*ident, "architecture"], keep="first")
            .pivot(on="architecture", index=ident, values="correct"))
    archs = [a for a in dict.fromkeys(probes["architecture"].to_list())]
    out: dict[str, dict[str, list[int]]] = {}
    for a in archs:
        for b in archs:
            if a == b:
                continue
            both = wide.select(pl.col(a), pl.col(b)).drop_nulls()
            x, y = pl.col(a), pl.col(b)
            row = both.select((x & y).sum().alias("hh"), (x & ~y).sum().alias("hm"), (~x & y).sum().alias("mh"),
                              (~x & ~y).sum().alias("mm")).row(0)
            out.setdefault(a, {})[b] = [int(v) for v in row]
    return out


def sample_note(info: dict[str, int]) -> str:
    """The page's line on what a sample kept ('' when the run is whole)."""
    if info["sampled_probes"] >= info["probes"]:
        return ""
    return (f"Probes: a seeded sample of {info['sampled_probes']:,} of {info['probes']:,} "
            f"({info['per_stratum']:,} per architecture x reach; {info['sampled_episodes']:,} of "
            f"{info['episodes']:,} episodes).")


def _chosen(pairs: list[tuple], n: int) -> set[str]:
    taken: dict[tuple, int] = {}
    out: set[str] = set()
    for a, r, u in pairs:
        if taken.get((a, r), 0) < n:
            taken[(a, r)] = taken.get((a, r), 0) + 1
            out.add(u)
    return out


def _s(v: Any, cap: int = TEXT_CAP) -> Any:
    return shorten(v, cap) if isinstance(v, str) else v


def step_entry(st: Mapping[str, Any], scores: Any = None) -> dict[str, Any]:
    """One probe step as the page shows it (``scores``: per recalled item, channel -> score)."""
    return {"url": st.get("url"), "status": st.get("status"),
            "action": " ".join(str(x) for x in (st.get("action_type"), st.get("action_arg")) if x) or None,
            "reply": _s(st.get("reply")), "error": _s(st.get("error"), 500),
            "recalled": list(st.get("recalled") or []), "memory": _s(st.get("memory_text")),
            "n_images": st.get("n_images"), "scores": scores}


def pack(obj: Any) -> str:
    """``obj`` as base64 of gzipped JSON (mtime 0: the same bytes every time)."""
    raw = json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode()


def _json(v: Any) -> Any:
    return json.loads(v) if isinstance(v, str) else v


def probe_groups(probes: pl.DataFrame | None, *, banks: Mapping[tuple, Mapping[str, Any]] | None = None
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """The page's probes (one per question, every architecture's outcome in ``o``) and the
    architectures in table order.

    ``probes``: the run's probe rows (``vismem.analysis.schemas`` ``probes``) with optional ``log``
    (step log JSON), ``scores`` (JSON: per step, per recalled item, channel -> score),
    ``target_image`` and ``chain_backend``. ``banks``: ``(architecture, chain, seed, product hash)
    -> bank entry`` (what the architecture wrote about a product) for the targets and recalled
    items, put in the probe's chunk. Each probe's logs and entries are one packed chunk (``z``).
    """
    if probes is None or probes.height == 0:
        return [], []
    cols = set(probes.columns)
    archs = list(dict.fromkeys(probes["architecture"].to_list()))
    groups: dict[str, dict[str, Any]] = {}
    chunks: dict[str, dict[str, Any]] = {}
    for r in probes.iter_rows(named=True):
        get = (lambda c, r=r: r.get(c) if c in cols else None)
        chain = get("chain_backend") or r["backend"]
        uid = probe_uid(chain, r["seed"], r["probe_id"], r["recall_session"])
        g = groups.get(uid)
        if g is None:
            g = groups[uid] = {
                "k": uid, "chain": chain, "backend": r["backend"], "seed": r["seed"], "id": r["probe_id"],
                "visit": get("visit_session"), "recall": r["recall_session"], "reach": get("reach"),
                "cue": get("target_cue"), "target": get("target_url"), "timg": get("target_image"),
                "bank": get("bank_size"), "o": {}, "z": None}
            chunks[uid] = {"logs": {}, "entries": {}}
        arch = r["architecture"]
        if arch in g["o"]:
            continue
        g["o"][arch] = {"ok": bool(r["correct"]), "fin": get("final_url"), "fail": get("failure"), "n": get("steps"),
                        "v": get("variant")}
        log = _json(get("log"))
        if log is not None:
            scores = _json(get("scores")) or []
            chunks[uid]["logs"][arch] = [step_entry(st, scores[i] if i < len(scores) else None)
                                         for i, st in enumerate(log)]
        if banks:
            chunks[uid]["entries"][arch] = _entries(banks, arch, r, g, log)
    for uid, g in groups.items():
        c = chunks[uid]
        if c["logs"] or any(c["entries"].values()):
            g["z"] = pack(c)
    return list(groups.values()), archs


def _entries(banks: Mapping[tuple, Mapping[str, Any]], arch: str, r: Mapping[str, Any], g: Mapping[str, Any],
             log: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The bank entries of ``arch`` for the probe's target and the products it recalled."""
    target = (g["target"] or "").rsplit("/", 1)[-1]
    hashes = [target] + [h for st in (log or []) for h in (st.get("recalled") or [])]
    chain = r.get("chain_slug") or r["backend"]
    out = {}
    for h in dict.fromkeys(hashes):
        e = banks.get((arch, chain, r["seed"], h))
        if e is not None:
            out[h] = dict(e)
    return out


__all__ = ["IDENTITY", "TEXT_CAP", "pack", "pair_counts", "probe_groups", "probe_uid", "sample_note", "sample_probes", "step_entry"]
