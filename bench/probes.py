"""``probe-throughput``: exhaustive recall probes of 4 chains x J = 5 for every memory variant.

The ``probes`` stage exactly as a run executes it (local Ray, 2 fractional-CPU probe actors,
each with its own storefront and the HTTP page env; the scripted recall stand-in; features
already cached by the ``replay`` stage), from an empty probe cache. Set-up (scripted encoding
chains, the catalogue captioner and the encoders' features) is outside the clock. Target: the
wall over the run's calibration unit (issue 43; the first issue's 60 s on 2 cores); probes/s
and VLM calls per probe are reported beside it.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from vismem.bench.calibration import per_unit
from vismem.bench.harness import benchmark, record

TARGET_S = 60.0
CHAINS, J = 4, 5


def _config(tmp: Path, stages: list[str]) -> Any:
    from vismem.pipelines.config import load_config

    return load_config(overrides={
        "name": "bench-probes", "stages": stages, "runs_dir": str(tmp / "runs"),
        "store": {"uri": f"file://{tmp}/store"},
        "ray": {"num_cpus": 2, "object_store_mb": 400, "actor_cpus": 0.5, "concurrency": 2},
        "encode": {"chains": CHAINS, "J": J, "env": "http"},
        "probes": {"backends": ["scripted-recall"], "env": "http", "workers": 2}})


@benchmark("probe-throughput", "exhaustive probes of 4 chains x J=5 for every memory variant (scripted recall, 2 actors)")
def probe_throughput() -> list[dict[str, Any]]:
    from vismem.pipelines.runner import run

    name = "probe-throughput"
    with tempfile.TemporaryDirectory(prefix="vismem-bench-probes-") as tmp:
        tmp_p = Path(tmp)
        t0 = time.perf_counter()
        setup = run(_config(tmp_p, ["encode", "replay"]), progress=False)
        setup_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        out = run(_config(tmp_p, ["probes"]), progress=False)["probes"]
        wall = time.perf_counter() - t1
    n = out.get("probes", 0)
    archs = len(setup["replay"]["architectures"])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return [record(name, "wall_s", wall, "s"),
            per_unit(name, "wall_s", target_s=TARGET_S),
            record(name, "probes", n, "probes", better="higher"),
            record(name, "architectures", archs, "variants", better="higher"),
            record(name, "probes_per_s", n / wall if wall else 0.0, "probes/s", better="higher"),
            record(name, "vlm_calls_per_probe", out.get("vlm_calls_per_probe") or 0.0, "calls"),
            record(name, "setup_s", setup_s, "s"),
            record(name, "peak_rss_driver_mb", rss, "MiB")]
