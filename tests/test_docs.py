"""The docs site: generated references are fresh, the strict MkDocs build passes (and fails on a
broken link), benchmark figures come from recorded JSON, the README stays a short first page.

Fast by design: two strict builds of markdown pages (seconds on an idle machine), no Chromium.
The screenshots are made by ``scripts/docs_screenshots.py``; its end-to-end test is slow.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vismem.pipelines import docsgen

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_generated_references_are_fresh():
    stale = docsgen.stale_pages(DOCS)
    assert not stale, f"stale generated docs pages {stale}: run `.venv/bin/vismem docs --write`"


def test_a_stale_reference_is_caught(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    page = docs / docsgen.CONFIG_PAGE
    page.write_text(page.read_text().replace("| `seed` |", "| `seed_renamed` |"))
    assert docsgen.stale_pages(docs) == [docsgen.CONFIG_PAGE]
    assert docsgen.write_pages(docs) == [docsgen.CONFIG_PAGE] and not docsgen.stale_pages(docs)


def test_config_reference_has_every_field_default_and_bound():
    from vismem.pipelines.config import RunConfig

    text = (DOCS / docsgen.CONFIG_PAGE).read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([\w.]+)` \|.*$", text, re.M)}
    for path, model, _ in docsgen._sections(RunConfig, ""):
        for name, field in model.model_fields.items():
            if docsgen._section_model(field.annotation) is None:
                assert (f"{path}.{name}" if path else name) in rows, f"{path}.{name} missing"
    assert "≥ 0" in rows["seed"] and "`0`" in rows["seed"]
    assert "≤ 64" in rows["probes.max_steps"] and "`8`" in rows["probes.max_steps"]
    # The presets' columns come from their YAML: local browses 3 chains of J = 5, paper 20 of 15.
    assert rows["encode.chains"].split(" | ")[3:5] == ["`3`", "`20`"]
    assert rows["encode.J"].split(" | ")[3:5] == ["`5`", "`15`"]


def test_cli_reference_has_every_command():
    from vismem.pipelines.cli import build_parser

    text = (DOCS / docsgen.CLI_PAGE).read_text()
    names = [name for name, _ in docsgen._subcommands(build_parser(), "vismem")]
    assert {"vismem run", "vismem docs", "vismem store ls", "vismem serve up"} <= set(names)
    for name in names:
        assert f"\n## `{name}`\n" in text, name


def _record(tmp_path: Path) -> Path:
    results = tmp_path / "bench-results"
    results.mkdir()
    recs = [{"name": "stats-scoring", "metric": "wall_s", "value": 0.42, "unit": "s", "target": 5.0,
             "better": "lower", "machine": "2 cores, test", "load": 1.0},
            {"name": "stats-scoring", "metric": "peak_mib", "value": 310.0, "unit": "MiB", "target": None,
             "better": "lower", "machine": "2 cores, test", "load": 1.0}]
    (results / "stats.json").write_text(json.dumps(recs))
    return results


def test_strict_build_passes_with_figures_from_recorded_json(tmp_path, monkeypatch):
    monkeypatch.setenv("VISMEM_BENCH_RESULTS", str(_record(tmp_path)))
    code, log = docsgen.build_site(tmp_path / "site")
    assert code == 0, log
    site = tmp_path / "site"
    for page in ("index.html", "getting-started.html", "reference/config.html", "reference/cli.html", "extending.html"):
        assert (site / page).is_file(), page
    bench = (site / "bench-recorded.html").read_text()
    assert "stats-scoring" in bench and "img/bench/stats.svg" in bench
    assert (site / "img" / "bench" / "stats.svg").read_text().lstrip().startswith("<?xml")
    # Offline: no page pulls fonts or scripts from the network.
    assert "fonts.googleapis" not in (site / "index.html").read_text()


def test_strict_build_fails_on_a_broken_link_and_builds_without_recorded_json(tmp_path, monkeypatch):
    from importlib.util import module_from_spec, spec_from_file_location

    root = tmp_path / "checkout"
    shutil.copytree(DOCS, root / "docs")
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    (root / "docs" / "data.md").write_text((root / "docs" / "data.md").read_text() + "\n[gone](no-such-page.md)\n")
    code, log = docsgen.build_site(tmp_path / "site", root=root)
    assert code != 0 and "no-such-page.md" in log

    # No recorded JSON: the page says so (the hook's render, without a third build).
    spec = spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    hooks = module_from_spec(spec)
    spec.loader.exec_module(hooks)
    text, figures = hooks.render(tmp_path / "empty")
    assert "No benchmark JSON is recorded" in text and figures == {}


def test_docs_server_listens_on_loopback_only(tmp_path):
    from vismem.pipelines.commands.docs import make_server

    with make_server(tmp_path, 0) as server:
        assert server.server_address[0] == "127.0.0.1"
        from vismem.core.errors import ConfigError
        from vismem.pipelines.commands.docs import _serve

        with pytest.raises(ConfigError, match="pick another --port"):  # a taken port: one line
            _serve(tmp_path, server.server_address[1])


def test_readme_is_a_short_first_page_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    block = re.search(r"## Quickstart.*?```bash\n(.*?)```", text, re.S).group(1)
    assert [line.split()[0] for line in block.strip().splitlines()] == ["scripts/run_local.sh", "scripts/test.sh"]
    for script in ("scripts/run_local.sh", "scripts/test.sh"):
        assert (ROOT / script).is_file()
    links = re.findall(r"\]\(((?:docs/)[^)#]+)", text)
    assert links and all((ROOT / link).is_file() for link in links), [l for l in links if not (ROOT / l).is_file()]


def test_committed_screenshots_are_small_pngs():
    shots = sorted((DOCS / "img").glob("*.png"))
    assert {p.name for p in shots} >= {"report.png", "trajectories.png", "samples.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in shots)
    assert sum(p.stat().st_size for p in shots) < 600 * 1024


@pytest.mark.slow
def test_screenshot_script_draws_a_real_local_run(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_screenshots.py"), "--out", str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    for name in ("report.png", "trajectories.png", "samples.png"):
        assert (tmp_path / name).stat().st_size > 10_000, name


EXAMPLES = """
import re, sys, types
from pathlib import Path

text = Path(sys.argv[1]).read_text()
blocks = dict(re.findall(r"```python\\n# ([\\w/]+\\.py)\\n(.*?)```", text, re.S))
for path, code in blocks.items():
    if "stage_order" in path:
        continue  # a one-line excerpt of an existing file, not a module
    mod = types.ModuleType(path.replace("/", ".")[:-3])
    exec(compile(code, path, "exec"), mod.__dict__)

from vismem.memory.agent.base import ARCHITECTURES
from vismem.memory.dialogue.datasets import get_dataset
from vismem.serve.build import build_vlm
from vismem.serve.vlm import Message

vlm = build_vlm({"name": "echo", "args": {"text": "Paris"}})
assert vlm.chat([Message("user", "Where?")]).text == "Paris" and vlm.stand_in
assert get_dataset("locomo-mini").default_path == "locomo/locomo10.json"
assert "recent" in ARCHITECTURES.names()
print(sorted(blocks))
"""


def test_extending_examples_run():
    # The worked examples register and work as the page says (in a fresh interpreter: they
    # must not leak their names into this process's registries).
    out = subprocess.run([sys.executable, "-c", EXAMPLES, str(DOCS / "extending.md")], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "serve/backends/echo.py" in out.stdout and "pipelines/report/hello.py" in out.stdout
