"""``test-suite``: the default test suite's wall time and where it goes (issue 37).

    python -m vismem.bench.suite                  # run the README's test command, print the profile
    python -m vismem.bench.suite --from OUT.txt   # profile a saved `pytest --durations=0` output
    python -m vismem.bench.suite -- tests/core    # extra pytest arguments after `--`

The profile is pytest's own ``--durations=0`` report regrouped: the wall, per-file totals split
into set-up / call / teardown (a file whose set-up dominates pays for a fixture: a Ray, an S3
server, a browser, a model), the slowest tests, and the end-to-end tests kept out of the default
run with the fast tests that check the same behaviour (``SLOW_TIER``). ``vismem bench test-suite``
records the same wall (target: 10 minutes on an idle reference machine, set-up excluded, as a
ratio over the run's calibration unit) and the
20 slowest tests. Run it on an idle machine: on a shared one every figure is inflated, and only
the shares (which files dominate) carry over.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vismem.bench.calibration import per_unit
from vismem.bench.harness import benchmark, record

REPO = Path(__file__).resolve().parents[1]
#: Issue 37: the default suite in <= 10 minutes on an idle 2-core / 24 GiB machine.
TARGET_S = 600.0
TOP = 20

#: End-to-end tests in the slow tier (``-m slow``) -> the fast tests of the default run that check
#: each behaviour they check (issue 37: moving a test to `slow` loses no behaviour).
SLOW_TIER: dict[str, tuple[str, ...]] = {
    # every listener of a real `vismem run` (weed, Ray, driver, shop) on loopback: Ray's (driver,
    # GCS, raylet, agents, workers) in a fresh process; weed's and the shop's as a run starts them
    "tests/pipelines/test_rayctx_loopback.py::test_a_real_local_run_listens_on_loopback_only": (
        "tests/pipelines/test_rayctx_loopback.py::test_local_ray_listens_on_loopback_only",
        "tests/pipelines/test_rayctx_loopback.py::test_the_store_server_and_the_shop_listen_on_loopback_only"),
    # a `vismem run` on local-s3 SIGKILLed mid-encode, then rerun: no orphan (weed, Ray) and the
    # same trajectories as a clean run -- each half checked on its own part
    "tests/pipelines/test_kill_local_s3.py::test_sigkill_mid_run_on_local_s3_then_rerun_is_identical_and_leaves_no_orphan": (
        "tests/core/test_lifeline.py::test_weed_dies_with_a_sigkilled_owner_and_the_rerun_starts_at_once",
        "tests/core/test_lifeline.py::test_child_and_marked_processes_die_when_the_owner_is_sigkilled",
        "tests/pipelines/test_localcluster.py::test_an_owner_killed_without_stop_leaves_neither_processes_nor_its_temp_dir",
        "tests/pipelines/test_memory_stages.py::test_sigkill_mid_probes_then_rerun_gives_the_same_table_and_no_duplicates",
        "tests/pipelines/test_encode_stage.py::test_extending_J_runs_only_new_sessions"),
    # a whole local `vismem run` prints no Ray core-worker line, no "constructor arguments" line and
    # no deprecation warning: all three come as Ray and the stage's actors start, which the killed
    # run prints too before its actor dies (and its stderr is checked for all three)
    "tests/pipelines/test_ray_quiet.py::test_a_local_run_prints_no_ray_core_worker_line": (
        "tests/pipelines/test_ray_quiet.py::test_an_actor_dying_mid_stage_is_one_line_and_the_run_prints_no_ray_core_worker_line",),
}

_LINE = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S.*)$")
_SUMMARY = re.compile(r"^=*\s*(.*?\d+ (?:passed|failed|error|errors|skipped).*?) in (\d+(?:\.\d+)?)s")
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed)")


@dataclass
class Profile:
    """One suite run, regrouped from its ``--durations=0`` lines."""

    wall_s: float | None  # pytest's own "in N s" (collection included, set-up script excluded)
    counts: dict[str, int]
    tests: dict[str, dict[str, float]] = field(default_factory=dict)  # nodeid -> phase -> s
    failures: list[str] = field(default_factory=list)  # pytest's "FAILED ..." / "ERROR ..." summary lines

    def test_totals(self) -> list[tuple[str, float]]:
        return sorted(((t, sum(p.values())) for t, p in self.tests.items()), key=lambda x: -x[1])

    def file_totals(self) -> list[tuple[str, dict[str, float]]]:
        files: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for nodeid, phases in self.tests.items():
            f = files[nodeid.split("::", 1)[0]]
            for phase, s in phases.items():
                f[phase] += s
            f["tests"] += 1
        return sorted(((k, dict(v)) for k, v in files.items()),
                      key=lambda x: -(x[1].get("setup", 0) + x[1].get("call", 0) + x[1].get("teardown", 0)))


def parse(text: str) -> Profile:
    """A profile from pytest's terminal output (run with ``--durations=0 --durations-min=0``)."""
    tests: dict[str, dict[str, float]] = defaultdict(dict)
    wall, counts, failures = None, {}, []
    for line in text.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            failures.append(line.strip()[:300])
            continue
        m = _LINE.match(line.strip())
        if m:
            tests[m.group(3)][m.group(2)] = float(m.group(1))
            continue
        m = _SUMMARY.match(line.strip())
        if m:
            wall = float(m.group(2))
            counts = {("error" if k.startswith("error") else k): int(n) for n, k in _COUNT.findall(m.group(1))}
    return Profile(wall_s=wall, counts=counts, tests=dict(tests), failures=failures)


def run_suite(pytest_args: list[str] = ()) -> tuple[Profile, float, int]:
    """The README's test command (``scripts/test.sh``) with the durations report; returns the
    profile, the whole command's wall (its quick set-up check included) and its exit status."""
    cmd = ["bash", str(REPO / "scripts" / "test.sh"), "--durations=0", "--durations-min=0", *pytest_args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return parse(proc.stdout), wall, proc.returncode


def report(prof: Profile, *, top: int = TOP, files: int = 25) -> str:
    """The profile as text: wall and counts, per-file totals, slowest tests, the slow tier."""
    out = [f"wall (pytest): {prof.wall_s if prof.wall_s is None else f'{prof.wall_s:.0f} s'}; "
           + ", ".join(f"{n} {k}" for k, n in prof.counts.items())]
    out += prof.failures  # which tests failed, before any figure: a failing run's wall means little
    total = sum(sum(p.values()) for p in prof.tests.values()) or 1.0
    out += ["", f"{'file':60s} {'tests':>5s} {'setup':>8s} {'call':>8s} {'teardown':>8s} {'share':>6s}"]
    for name, t in prof.file_totals()[:files]:
        s = t.get("setup", 0) + t.get("call", 0) + t.get("teardown", 0)
        out.append(f"{name:60.60s} {t['tests']:5.0f} {t.get('setup', 0):8.1f} {t.get('call', 0):8.1f} "
                   f"{t.get('teardown', 0):8.1f} {100 * s / total:5.1f}%")
    out += ["", f"slowest {top} tests (set-up + call + teardown):"]
    out += [f"{s:8.1f} s  {nodeid}" for nodeid, s in prof.test_totals()[:top]]
    out += ["", "slow tier (-m slow) -> the default-run tests that check the same behaviour:"]
    for slow, fast in SLOW_TIER.items():
        out += [f"  {slow}"] + [f"      = {f}" for f in fast]
    return "\n".join(out)


def records(prof: Profile, command_wall: float, rc: int) -> list[dict[str, Any]]:
    name = "test-suite"
    out = [record(name, "wall_s (pytest, set-up excluded)", prof.wall_s if prof.wall_s is not None else float("nan"),
                  "s"),
           per_unit(name, "wall_s (pytest, set-up excluded)", target_s=TARGET_S),
           record(name, "wall_s (scripts/test.sh, set-up check included)", command_wall, "s"),
           record(name, "exit status", rc, "", target=0)]
    out += [record(name, k, n, "tests", better="higher" if k == "passed" else "lower") for k, n in prof.counts.items()]
    out += [record(name, f"slowest {i}: {nodeid}", s, "s") for i, (nodeid, s) in enumerate(prof.test_totals()[:TOP], 1)]
    out += [record(name, f"failure: {line}", 1, "tests", target=0) for line in prof.failures]
    return out


@benchmark("test-suite", "the default test suite (scripts/test.sh): wall and the 20 slowest tests")
def suite_benchmark() -> list[dict[str, Any]]:
    prof, wall, rc = run_suite()
    print(report(prof), flush=True)
    return records(prof, wall, rc)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vismem.bench.suite", description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="src", metavar="OUT.txt", help="profile a saved pytest output instead of running")
    p.add_argument("--top", type=int, default=TOP)
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = p.parse_args(argv)
    if args.src:
        prof, rc = parse(Path(args.src).read_text()), 0
    else:
        prof, _, rc = run_suite(args.pytest_args)
    print(report(prof, top=args.top))
    return rc


if __name__ == "__main__":
    sys.exit(main())
