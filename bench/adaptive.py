"""Adaptive probing benchmarks: the stopping rule (``probes.mode: adaptive``) on simulated studies.

* ``adaptive-synthetic``: 1,000 simulated studies per scenario at the paper's J = 50 size (20
  chains of 50 sessions, 5 products a session: 980 units and 122,500 probes per architecture), four
  architectures (DualMem, M2A-lite, Caption, NoMemory) with chain and unit effects, known
  exhaustive TSRs. Scenarios: ``lead`` (DualMem 0.8 vs M2A-lite 0.7, the paper's picture),
  ``close`` (0.71 vs 0.70) and ``tie`` (0.70 vs 0.70: the exhaustive difference is noise around 0,
  where a wrong decision is most likely; the rule stops on width). Targets: calls
  saved >= 5x (``lead``), interval coverage of the exhaustive TSR >= 0.95, contrast decided
  against the exhaustive sign <= alpha = 0.05.
* ``adaptive-local-run``: the same rule replayed 1,000 times in random orders over one exhaustive
  ``probes`` table: ``VISMEM_BENCH_PROBES`` (a ``probes.parquet`` of a finished exhaustive run,
  e.g. the local preset's), else a synthetic table of the local preset's size (3 chains, J = 5),
  which the record's name says. Coverage and decisions are against that table's own TSRs.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from vismem.bench.harness import benchmark, record

SCENARIOS = {"lead": {"nomemory": 0.0, "caption": 0.45, "m2a-lite": 0.7, "dualmem": 0.8},
             "close": {"nomemory": 0.0, "caption": 0.45, "m2a-lite": 0.70, "dualmem": 0.71},
             "tie": {"nomemory": 0.0, "caption": 0.45, "m2a-lite": 0.70, "dualmem": 0.70}}
STUDIES = 1_000


def scenario_records(name: str, p: dict[str, float], *, studies: int = STUDIES, chains: int = 20, J: int = 50,
                     products: int = 5, seed: int = 0) -> list[dict[str, Any]]:
    """Simulate ``studies`` studies of one scenario; records of saving, coverage and decisions."""
    from vismem.analysis.adaptive import Rule
    from vismem.analysis.adaptive_sim import simulate, synthetic

    rule = Rule()  # the config's defaults: width 0.1, alpha 0.05, batches of 32 units
    names = list(p)
    t0 = time.perf_counter()
    c, sizes = synthetic(studies, chains=chains, J=J, products=products, p=p, seed=seed)
    out = simulate(c, sizes, rule, seed=seed, contrast=(names.index("dualmem"), names.index("m2a-lite")))
    wall = time.perf_counter() - t0
    bench = f"adaptive-synthetic-{name}"
    return [record(bench, "calls_saved", out.saving(), "x", target=5.0 if name == "lead" else None, better="higher"),
            record(bench, "coverage", out.coverage(), "share", target=0.95, better="higher"),
            record(bench, "wrong_decisions", out.wrong_decisions(), "share", target=rule.alpha),
            record(bench, "sign_flips", out.sign_flips(), "share"),
            record(bench, "studies", studies, "studies", better="higher"),
            record(bench, "wall_s", wall, "s")]


@benchmark("adaptive-synthetic", "adaptive probing on 1,000 simulated J = 50 studies per scenario: calls saved, "
           "coverage, headline decisions")
def adaptive_synthetic() -> list[dict[str, Any]]:
    return [r for name, p in SCENARIOS.items() for r in scenario_records(name, p)]


def table_records(probes: Any, label: str, *, studies: int = STUDIES, seed: int = 0,
                  contrast: tuple[str, str] = ("dualmem", "m2a-lite")) -> list[dict[str, Any]]:
    """The rule replayed ``studies`` times over one exhaustive probes table, per back-end."""
    import polars as pl

    from vismem.analysis.adaptive import Rule, units_from_probes
    from vismem.analysis.adaptive_sim import simulate

    units = units_from_probes(probes.filter(pl.col("study") == "main"), seed=seed)
    rule = Rule(min_units=8, batch=8)
    outs = []
    for (backend,), block in units.group_by(["backend"], maintain_order=True):
        wide = block.pivot(on="architecture", index=["chain", "j", "n"], values="correct").sort("chain", "j")
        archs = [a for a in wide.columns if a not in ("chain", "j", "n")]
        c = np.repeat(wide.select(archs).to_numpy().T[None].astype(np.float64), studies, axis=0)
        pair = tuple(archs.index(a) for a in contrast) if set(contrast) <= set(archs) else None
        outs.append(simulate(c, wide["n"].to_numpy(), rule, seed=seed, contrast=pair))  # type: ignore[arg-type]
    bench = f"adaptive-local-run-{label}"
    scored = sum(float(o.probes_scored.sum()) for o in outs)
    total = sum(o.probes_total * o.stop_units.size for o in outs)
    return [record(bench, "calls_saved", total / scored, "x", better="higher"),
            record(bench, "coverage", float(np.mean([o.coverage() for o in outs])), "share", target=0.95,
                   better="higher"),
            record(bench, "wrong_decisions", float(np.mean([o.wrong_decisions() for o in outs])), "share",
                   target=rule.alpha)]


@benchmark("adaptive-local-run", "adaptive probing replayed 1,000 times over an exhaustive probes table "
           "(VISMEM_BENCH_PROBES, else a synthetic one of the local preset's size)")
def adaptive_local_run() -> list[dict[str, Any]]:
    import polars as pl

    from vismem.analysis import synthetic
    from vismem.analysis.schemas import validate

    path = os.environ.get("VISMEM_BENCH_PROBES")
    if path:
        return table_records(validate(pl.read_parquet(path), "probes"), "given")
    return table_records(synthetic.probes(Js=(5,), chains=3, seed=0), "synthetic-local-size")
