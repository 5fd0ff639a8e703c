"""Statistics benchmarks: scoring every cell of a paper-sized grid, and the exact K=25 test.

* ``stats-scoring``: 35,410 probes x 7 architectures x 3 values of J (743,610 probe rows, 25
  chains): validate, then every (J, architecture) cell's TSR with naive and 10,000-resample
  cluster bootstrap CIs. Target <= 5 s on 2 cores.
* ``stats-permutation-k25``: the exact paired cluster sign-permutation test on 25 chains
  (2^25 assignments, meet in the middle). Target <= 1 s.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vismem.bench.harness import benchmark, record


@benchmark("stats-scoring", "35,410 probes x 7 architectures x 3 J: naive + 10k cluster bootstrap CIs per cell")
def stats_scoring() -> list[dict[str, Any]]:
    from vismem.analysis import dmv, synthetic
    from vismem.analysis.schemas import validate

    probes = synthetic.bernoulli_probes(35_410, Js=(5, 10, 15), chains=25, seed=0)
    t0 = time.perf_counter()
    probes = validate(probes, "probes")
    cells = dmv.tsr_cells(probes, n_resamples=10_000, seed=0)
    wall = time.perf_counter() - t0
    assert cells.height == 21 and cells["cluster_low"].is_not_nan().sum() >= 15, cells
    return [record("stats-scoring", "wall_s", wall, "s", target=5.0),
            record("stats-scoring", "probe_rows", probes.height, "rows", better="higher")]


@benchmark("stats-permutation-k25", "exact paired cluster sign-permutation test on 25 chains (2^25 assignments)")
def stats_permutation_k25() -> list[dict[str, Any]]:
    from vismem.analysis.permutation import sign_permutation_test

    rng = np.random.default_rng(0)
    chains = np.repeat(np.arange(25), 110)
    diffs = rng.choice([-1, 0, 1], size=chains.size, p=[0.2, 0.6, 0.2]) + (rng.random(chains.size) < 0.02)
    diffs = np.clip(diffs, -1, 1)
    t0 = time.perf_counter()
    res = sign_permutation_test(diffs, chains)
    wall = time.perf_counter() - t0
    assert res.n_assignments == 2**25
    return [record("stats-permutation-k25", "wall_s", wall, "s", target=1.0)]
