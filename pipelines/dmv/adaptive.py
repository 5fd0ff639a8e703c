"""Adaptive probing for the ``probes`` stage (``probes.mode: adaptive``; docs/adaptive-probing.md).

Each back-end's exhaustive units (chain, recall session j) are put in one seeded random order
(from the run seed and the back-end's trajectory slug), shared by every architecture. Rounds
score the next ``probes.adaptive.batch`` units of every back-end still open, for every
architecture that has them, through the stage's ordinary scoring (so each is the exhaustive
run's own cached unit: a later exhaustive run, or a narrower width, re-scores none). After each
round the stopping rule (:func:`vismem.analysis.adaptive.cell_status`) looks at every cell. A
unit's probe count comes from the cached trajectories before it is scored (the rule's
population); units without probes are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import polars as pl

    from vismem.pipelines.config import RunConfig


def rule_of(config: "RunConfig", names: list[str]) -> Any:
    """The stopping rule of the config; the contrast is ``probes.adaptive.contrast``, else
    ``report.compare``, kept only when both architectures are probed."""
    from vismem.analysis.adaptive import Rule

    a = config.probes.adaptive
    pair = a.contrast or (tuple(config.report.compare) if config.report.compare else None)
    if pair is not None and not set(pair) <= set(names):
        pair = None
    return Rule(width=a.width, alpha=a.alpha, batch=a.batch, min_units=a.min_units, contrast=pair)


def unit_sizes(observations: list[Any], cue_of: Callable[[str], Any], J: int) -> dict[int, int]:
    """Probes of each exhaustive unit j = 1..J-1 of a chain: ``sum_{t<j} |V_t|``, ``V_t`` the
    distinct registered products of session t (as :func:`vismem.agents.probes.exhaustive_probes`)."""
    from vismem.agents.probes import visited_per_session

    visits: dict[int, list[str]] = {}
    for o in observations:
        if o.j < J:
            visits.setdefault(o.j, []).append(o.url_hash)
    visited = visited_per_session(visits, cue_of)
    out, total = {}, 0
    for j in range(1, J):
        total += len(visited.get(j - 1, ()))
        out[j] = total
    return out


def eligible_frame(config: "RunConfig", units: list[dict[str, Any]], chains: list[Any], archs: list[Any],
                   labels: list[str], sizes: dict[tuple[int, int], int]) -> "pl.DataFrame":
    """One row per planned unit with probes: back-end label, architecture, study, chain, j, its
    place in the back-end's draw order and its probe count (``correct`` null: not scored yet)."""
    import polars as pl

    from vismem.analysis.adaptive import draw_order
    from vismem.core.identity import content_digest
    from vismem.pipelines.dmv.chains import variant_info

    slots: dict[int, list[tuple[int, int]]] = {}
    for u in units:
        if sizes.get((u["chain"], u["j"]), 0) > 0:
            slots.setdefault(chains[u["chain"]].backend, []).append((u["chain"], u["j"]))
    draw: dict[tuple[int, int], int] = {}
    for b, sl in slots.items():
        sl = sorted(set(sl))
        slug = next(c.slug for c in chains if c.backend == b)
        stream = int(content_digest({"block": slug}, 8), 16)
        for rank, i in enumerate(draw_order(len(sl), config.seed, stream)):
            draw[sl[i]] = rank
    study = [variant_info(a)["study"] for a in archs]
    rows = [{"backend": labels[chains[u["chain"]].backend], "architecture": archs[u["arch"]].name,
             "study": study[u["arch"]], "chain": u["chain"], "j": u["j"], "draw": draw[(u["chain"], u["j"])],
             "n": sizes[(u["chain"], u["j"])], "arch": u["arch"]}
            for u in units if (u["chain"], u["j"]) in draw]
    return pl.DataFrame(rows).with_columns(pl.lit(None, pl.Int64).alias("correct"))


def run_rounds(config: "RunConfig", frame: "pl.DataFrame", units: list[dict[str, Any]],
               score: Callable[[list[dict[str, Any]]], dict[str, Any]], correct_of: Callable[[dict[str, Any]], int],
               rule: Any, log: Any) -> tuple[list[dict[str, Any]], "pl.DataFrame", int]:
    """Score rounds until no back-end has an open main-study cell; returns the units scored,
    the last cell status and the number of rounds. ``score(units)`` runs (or reads) units and
    returns ``{"finished": [unit, ...]}``; ``correct_of(unit)`` a finished unit's correct count."""
    import polars as pl

    from vismem.analysis.adaptive import cell_status, open_blocks

    Js = config.probes.J or (config.encode.J,)
    by_slot = {(u["chain"], u["j"], u["arch"]): u for u in units}
    taken = 0  # draws taken from every open back-end so far
    backends = frame["backend"].unique().sort().to_list()
    open_now, rounds, chosen = backends, 0, []
    status = cell_status(frame, rule, Js)
    while open_now:
        step = max(rule.min_units, rule.batch) if rounds == 0 else rule.batch
        pick = frame.filter(pl.col("backend").is_in(open_now) & (pl.col("draw") >= taken)
                            & (pl.col("draw") < taken + step))
        taken += step
        if pick.height == 0:
            break
        batch = [by_slot[k] for k in pick.select("chain", "j", "arch").iter_rows()]
        res = score(batch)
        chosen += batch
        done = {(u["chain"], u["j"], u["arch"]): correct_of(u) for u in res["finished"]}
        got = pl.DataFrame([{"chain": c, "j": j, "arch": a, "c": v} for (c, j, a), v in done.items()],
                           schema={"chain": pl.Int64, "j": pl.Int64, "arch": pl.Int64, "c": pl.Int64})
        frame = (frame.join(got, on=["chain", "j", "arch"], how="left")
                 .with_columns(pl.coalesce("correct", "c").alias("correct")).drop("c"))
        status = cell_status(frame, rule, Js)
        rounds += 1
        open_now = [b for b in open_blocks(status) if b in open_now]
        log.info("probes (adaptive) round %d: %d units scored, %d back-end(s) still open", rounds, len(chosen),
                 len(open_now))
        if res.get("failed"):
            break  # a unit failed: the stage ends partial, a re-run resumes from the cache
    return chosen, status, rounds


def summary(status: "pl.DataFrame", rounds: int) -> dict[str, Any]:
    """What the stage summary records of an adaptive run."""
    import polars as pl

    # the longest J's cells hold every unit (a shorter J's are a part of them)
    tsr = status.filter((pl.col("kind") == "tsr") & (pl.col("J") == pl.col("J").max()))
    return {"adaptive": {"rounds": rounds, "units_probed": int(tsr["units_probed"].sum()),
                         "units_eligible": int(tsr["units_eligible"].sum()),
                         "reasons": dict(sorted(tsr.group_by("reason").len().iter_rows()))}}


__all__ = ["rule_of", "unit_sizes", "eligible_frame", "run_rounds", "summary"]
