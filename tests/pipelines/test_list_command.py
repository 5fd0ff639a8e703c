"""`vismem list`: every name a config can use, and each listed name is accepted by a config."""

from __future__ import annotations

import json

from vismem.pipelines.cli import main


def _listed(capsys, kind: str | None = None) -> dict:
    assert main(["list", *([kind] if kind else []), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_list_names_every_kind_and_the_shipped_variants(capsys):
    data = _listed(capsys)
    from vismem.pipelines.commands.listing import KINDS

    assert set(data) == set(KINDS)
    archs = {r["name"]: r for r in data["architectures"]}
    # the seven architectures of Table 2 are among them, each with its family and result table
    for name in ("nomemory", "textonly", "caption", "dualmem", "worldmm-lite", "mma-lite", "m2a-lite"):
        assert name in archs, sorted(archs)
    assert archs["dualmem"]["detail"].startswith("dual · main")
    assert "pocket-clip" in {r["name"] for r in data["models"]}
    assert [r["name"] for r in data["stages"]] == ["memshot", "catalog", "encode", "replay", "probes", "report"]
    assert all(r["description"] for r in data["architectures"])


def test_list_shows_the_env_injector_and_ocr_engine_registries(capsys):
    assert [r["name"] for r in _listed(capsys, "envs")["envs"]] == ["browser", "http"]
    injectors = _listed(capsys, "injectors")["injectors"]
    assert [r["name"] for r in injectors] == ["caption", "image", "image_text", "text"]
    assert {r["name"]: r["description"] for r in injectors}["text"].startswith("``TextOnlyInject``")
    assert {"rapidocr", "rapidocr-lines"} <= {r["name"] for r in _listed(capsys, "ocr-engines")["ocr-engines"]}


def test_every_listed_architecture_is_accepted_by_a_config(capsys):
    from vismem.pipelines.config import parse_config

    names = [r["name"] for r in _listed(capsys, "architectures")["architectures"]]
    cfg = parse_config({"memory": {"architectures": names}}, source="test")
    assert len(cfg.memory.architectures) == len(names)


def test_list_unknown_kind_is_a_usage_error(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["list", "nope"])
    assert e.value.code == 2 and "unknown kind 'nope'; choose from architecture-families" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["list", "architecturs"])
    assert e.value.code == 2 and "unknown kind 'architecturs' (did you mean 'architectures'?)" in \
        capsys.readouterr().err


def test_list_architectures_is_one_line_each_by_default_and_long_gives_the_tables(capsys):
    names = [r["name"] for r in _listed(capsys, "architectures")["architectures"]]
    assert main(["list", "architectures"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert lines[0].startswith("architectures: ") and len(lines) == 1 + len(names)
    assert [ln.split()[0] for ln in lines[1:]] == names  # one line per architecture, in order
    assert all(len(ln) <= 120 for ln in lines[1:])
    for flag in ("--long", "-v"):
        assert main(["list", "architectures", flag]) == 0
        out = capsys.readouterr().out
        assert "description" in out and out.count("\n") > 2 * len(names)  # today's wrapped table


def test_a_reader_that_leaves_early_is_no_traceback():
    """`vismem list | head -1`: the pipe closes before vismem writes; it exits 141 quietly."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "vismem", "list", "architectures"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)})
    proc.stdout.close()  # long before the child has imported anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err
