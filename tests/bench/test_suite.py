"""The ``test-suite`` benchmark's profile: pytest's durations regrouped per test and per file,
the records carry the issue's target, and every slow-tier test names fast tests that exist."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from vismem.bench import calibration
from vismem.bench.harness import BENCHMARKS, load_all
from vismem.bench.suite import SLOW_TIER, TARGET_S, parse, records, report

REPO = Path(__file__).resolve().parents[2]

OUTPUT = """\
....s.                                                                   [100%]
============================= slowest durations ==============================
3.50s call     tests/a/test_x.py::test_slow[1]
2.00s setup    tests/a/test_x.py::test_slow[1]
0.25s teardown tests/a/test_x.py::test_slow[1]
1.00s call     tests/b/test_y.py::TestK::test_z
0.00s setup    tests/b/test_y.py::TestK::test_z
0.50s call     tests/a/test_x.py::test_fast
==================== 5 passed, 1 skipped, 2 deselected in 9.87s ====================
"""


def test_parse_regroups_durations_per_test_and_per_file():
    prof = parse(OUTPUT)
    assert prof.wall_s == 9.87
    assert prof.counts == {"passed": 5, "skipped": 1, "deselected": 2}
    assert prof.test_totals()[0] == ("tests/a/test_x.py::test_slow[1]", 5.75)
    files = dict(prof.file_totals())
    assert list(files) == ["tests/a/test_x.py", "tests/b/test_y.py"]
    assert files["tests/a/test_x.py"] == {"call": 4.0, "setup": 2.0, "teardown": 0.25, "tests": 2}
    text = report(prof, top=2)
    assert "tests/a/test_x.py::test_slow[1]" in text and "tests/a/test_x.py::test_fast" not in text


def test_records_carry_the_target_and_the_slowest_tests():
    recs = {r["metric"]: r for r in records(parse(OUTPUT), 12.0, 0)}
    wall = recs["wall_s (pytest, set-up excluded)"]
    assert wall["value"] == 9.87 and TARGET_S == 600 and wall["target"] is None  # a time: its target is a ratio
    per_unit = recs["wall_s (pytest, set-up excluded) / calibration unit"]
    assert per_unit["target"] == calibration.units(TARGET_S) == 3500 and per_unit["ratio"]["over"] == ["calibration", "unit_s"]
    assert recs["slowest 1: tests/a/test_x.py::test_slow[1]"]["value"] == 5.75
    assert recs["passed"]["value"] == 5 and recs["passed"]["better"] == "higher"
    load_all()
    assert "test-suite" in BENCHMARKS


def test_parse_reads_a_real_pytest_run(tmp_path):
    (tmp_path / "test_toy.py").write_text("import pytest\n\ndef test_a():\n    assert 1\n\n"
                                          "@pytest.mark.skip(reason='x')\ndef test_b():\n    pass\n\n"
                                          "def test_c():\n    assert 0, 'broken'\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
                          "--durations-min=0", "-c", "/dev/null", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout
    prof = parse(out)
    assert prof.counts == {"failed": 1, "passed": 1, "skipped": 1} and prof.wall_s is not None
    phases = {t.rsplit("::", 1)[1]: set(p) for t, p in prof.tests.items()}
    assert phases == {"test_a": {"setup", "call", "teardown"}, "test_b": {"setup", "teardown"},  # a skip never calls
                      "test_c": {"setup", "call", "teardown"}}
    # which test failed is named in the report and the records, not only counted
    assert len(prof.failures) == 1 and prof.failures[0].startswith("FAILED ") and "test_toy.py::test_c" in prof.failures[0]
    assert prof.failures[0] in report(prof).splitlines()[1]
    failed = [r for r in records(prof, 1.0, 1) if r["metric"].startswith("failure: ")]
    assert len(failed) == 1 and "test_c" in failed[0]["metric"] and failed[0]["target"] == 0


def _marked_slow(nodeid: str) -> bool:
    """Whether a test function (or its module) carries ``pytest.mark.slow`` in the source."""
    path, *names = nodeid.split("::")
    tree = ast.parse((REPO / path).read_text())
    module_mark = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                      and "mark.slow" in ast.unparse(n.value) for n in tree.body)
    fn = names[-1].split("[", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            return module_mark or any("mark.slow" in ast.unparse(d) for d in node.decorator_list)
    raise AssertionError(f"{nodeid}: no such test")


def test_every_test_moved_to_the_slow_tier_names_fast_tests_of_the_default_run():
    assert SLOW_TIER, "issue 37 moved end-to-end tests to the slow tier: they are listed"
    for slow, fast in SLOW_TIER.items():
        assert _marked_slow(slow), f"{slow} is listed as slow but runs by default"
        assert fast, f"{slow}: no fast test checks its behaviour"
        for f in fast:
            assert not _marked_slow(f), f"{f} (standing in for {slow}) is itself slow"


def test_ci_runs_the_readme_test_command_and_it_carries_the_workers():
    readme = (REPO / "README.md").read_text()
    assert "\nscripts/test.sh " in readme  # the quickstart's test command
    ci = [ln for ln in (REPO / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert "bash scripts/test.sh" in ci  # exactly that command, no arguments of its own
    pytest_line = next(ln for ln in (REPO / "scripts" / "test.sh").read_text().splitlines() if "-m pytest" in ln)
    assert "-n 2 --dist loadgroup" in pytest_line and pytest_line.rstrip().endswith('"$@"')
