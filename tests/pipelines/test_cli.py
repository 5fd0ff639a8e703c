"""The CLI: every command has --help; store ls and bench work end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vismem.pipelines.cli import build_parser

COMMANDS = [["run"], ["submit"], ["status"], ["logs"], ["store"], ["store", "ls"], ["store", "get"], ["store", "cat"],
            ["runs"], ["report"], ["shots"], ["bench"], ["plan"], ["docs"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c))
def test_help(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*cmd, "--help"])
    assert e.value.code == 0
    assert "usage: vismem" in capsys.readouterr().out


def test_report_command_is_registered():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"run", "submit", "status", "logs", "store", "bench", "runs", "report", "shots"} <= set(sub.choices)


def test_store_ls_on_file_store(tmp_path):
    from vismem.core.store import Store

    s = Store.open(f"file://{tmp_path}/st")
    s.put_bytes("runs/a/x.json", b"{}")
    r = subprocess.run([sys.executable, "-m", "vismem", "store", "ls", "runs", "--store", f"file://{tmp_path}/st"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["2 B  runs/a/x.json", f"1 object, 2 B under file://{tmp_path}/st/runs"]


def test_bench_unknown_name_is_config_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "vismem", "bench", "nope", "--out", str(tmp_path / "o.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "store-roundtrip" in r.stderr
    assert not (tmp_path / "o.json").exists()


def test_bench_harness_records(tmp_path, monkeypatch):
    from vismem.bench import harness

    @harness.benchmark("unit-test-bench", "a test benchmark")
    def _b():
        return [harness.record("unit-test-bench", "recall", 0.5, "share", target=0.4, better="higher")]

    @harness.benchmark("unit-test-broken", "raises")
    def _c():
        raise RuntimeError("boom")

    try:
        recs = harness.run_benchmarks(["unit-test-bench", "unit-test-broken"], calibrate=False)
        out = tmp_path / "r.json"
        harness.write_records(recs, out)
        data = json.loads(out.read_text())
        assert data[0].keys() >= {"name", "metric", "value", "unit", "target", "better", "machine", "load"}
        assert harness.meets(data[0]) is True
        # every benchmark, failed or not, ends with the harness's wall time and peak memory
        assert [(r["name"], r["metric"]) for r in data[1:3]] == [("unit-test-bench", "wall"),
                                                                ("unit-test-bench", "peak memory")]
        assert data[2]["unit"] == "MiB" and data[2]["value"] > 0 and data[2]["peak_rss_mib"] > 0
        assert data[3]["error"] == "RuntimeError: boom" and harness.meets(data[3]) is None
        assert [r["metric"] for r in data[4:]] == ["wall", "peak memory"]
    finally:
        harness.BENCHMARKS.pop("unit-test-bench", None)
        harness.BENCHMARKS.pop("unit-test-broken", None)
