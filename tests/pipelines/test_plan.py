"""`vismem plan`: its numbers recomputed by hand for a small config, its growth with J, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RATES = ["steps_per_session=10", "products_per_session=2", "questions_per_conversation=4", "latency_s=1",
         "streams_per_gpu=2"]


def _plan(*args):
    return subprocess.run([sys.executable, "-m", "vismem", "plan", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_plan_of_a_small_config_by_hand():
    args = ["--set", "memory.architectures=[nomemory,dualmem]", "--gpus", "2", "--json"]
    for r in RATES:
        args += ["--rate", r]
    r = _plan(*args)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    st = {s["stage"]: s for s in plan["stages"]}
    # local preset: 1 back-end x 3 chains x J=5 sessions x 10 steps
    assert st["encode"]["calls"] == 1 * 3 * 5 * 10
    # exhaustive probes per chain: sum over sessions j=1..4 of j reaches x 2 products = 2*5*4/2 = 20;
    # x 3 chains x 2 architectures = 120 probes, each up to probes.max_steps = 8 recall calls
    assert st["probes"]["probes"] == 120 and st["probes"]["calls"] == 960
    # MemShot: 1 conversation x 4 questions x 3 variants x 2 k, one answer and one judge call each
    assert st["memshot answers"]["calls"] == 24 and st["memshot judge"]["calls"] == 24
    assert plan["calls"] == 150 + 960 + 48
    assert st["encode"]["tokens"] == 150 * (2500 + 120)
    # 1,158 calls x 1 s / 2 streams = 579 GPU-seconds; on 2 GPUs 289.5 s (> the 50-call chain path)
    assert plan["gpu_hours"] == pytest.approx(579 / 3600)
    assert plan["wall_hours"] == pytest.approx(289.5 / 3600)


def test_probe_growth_with_J():
    from vismem.pipelines.plan import exhaustive_per_chain, mc_per_chain

    assert [exhaustive_per_chain(j, 1) for j in (2, 3, 50)] == [1, 3, 1225]  # J(J-1)/2
    # M caps every reach but the last few: J=50, 5 products, M=10 -> 48 reaches of 10 and one of 5
    assert mc_per_chain(50, 5, 10) == 48 * 10 + 5
    assert mc_per_chain(100, 5, 10) / mc_per_chain(50, 5, 10) == pytest.approx(2, rel=0.03)  # O(J*M)
    assert exhaustive_per_chain(100, 5) / exhaustive_per_chain(50, 5) == pytest.approx(4, rel=0.03)  # O(J^2)


@pytest.mark.parametrize("args, msg", [(["--rate", "nope=1"], "bad --rate 'nope=1'"),
                                       (["--rate", "latency_s=fast"], "is not a number"),
                                       (["--rate", "latency_s=0"], "must be positive"),
                                       (["--gpus", "0"], "--gpus must be >= 1")])
def test_plan_bad_input_is_one_line(args, msg):
    r = _plan(*args)
    assert r.returncode != 0 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
