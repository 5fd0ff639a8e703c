"""The floors hold: every module imports only packages below its own (the rule lives in
``pyproject.toml`` under ``[tool.vismem.floors]``), and no two modules import each other at
module level. Registries import their plugins by entry point, never by an upward import."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["vismem"]["floors"]


def _modules(pkg: str) -> list[Path]:
    return sorted((ROOT / pkg).rglob("*.py"))


def _module_name(path: Path) -> str:
    rel = (path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, top_level_only: bool = False) -> list[tuple[str, int]]:
    """Absolute module names a file imports (relative imports resolved), with line numbers."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module_name(path).split(".")
    is_pkg = path.name == "__init__.py"
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, node.lineno))
            out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]  # `from pkg import module`
    return out


def test_floors_cover_every_top_level_package():
    pkgs = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"}
    assert pkgs == set(FLOORS), f"packages without a floor (or floors without a package): {pkgs ^ set(FLOORS)}"
    for pkg, allowed in FLOORS.items():  # the rule itself is acyclic
        assert pkg not in allowed and all(pkg not in FLOORS[a] for a in allowed), pkg


@pytest.mark.parametrize("pkg", sorted(FLOORS))
def test_no_import_goes_up_or_sideways(pkg):
    project = set(FLOORS)
    bad = []
    for path in _modules(pkg):
        for mod, line in _imports(path):
            top = mod.split(".")[0]
            if top in project and top != pkg and top not in FLOORS[pkg]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, f"{pkg} may import only {FLOORS[pkg] or 'nothing of the project'}:\n" + "\n".join(sorted(set(bad)))


def test_no_module_level_import_cycles():
    graph: dict[str, set[str]] = {}
    known = {_module_name(p) for pkg in FLOORS for p in _modules(pkg)}
    for pkg in FLOORS:
        for path in _modules(pkg):
            name = _module_name(path)
            graph[name] = {m for m, _ in _imports(path, top_level_only=True) if m in known and m != name}
    # A package's __init__ importing its own submodules is the usual public-API pattern, and a
    # submodule importing its package's __init__ (for a registry) is a plugin registering: only
    # cycles that do not pass through a package __init__ count.
    inits = {_module_name(p) for pkg in FLOORS for p in _modules(pkg) if p.name == "__init__.py"}
    state: dict[str, int] = {}
    cycles = []

    def visit(n: str, stack: list[str]) -> None:
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if m in inits:
                continue
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m] if m in stack else [n, m])
            elif m not in state:
                visit(m, stack + [m])
        state[n] = 2

    for n in sorted(graph):
        if n not in state and n not in inits:
            visit(n, [n])
    assert not cycles, "module-level import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_checker_sees_a_forbidden_import(tmp_path):
    # The walker must see imports inside functions and relative imports (or the rule is hollow).
    f = tmp_path / "mod.py"
    f.write_text("def f():\n    from pipelines.store import Store\n")
    assert ("pipelines.store", 2) in _imports(f)


FRESH = """
import json
from serve.vlm import VLMS
from serve.embed import EMBEDDERS
from env.storefront.imagesource import IMAGE_SOURCES
from memory.dialogue.datasets import DATASETS
print(json.dumps({"vlm": VLMS.names(), "embedder": EMBEDDERS.names(), "image_source": IMAGE_SOURCES.names(),
                  "dataset": DATASETS.names()}))
"""


def test_registries_know_every_name_in_a_fresh_interpreter():
    import json

    out = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    names = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"openai", "scripted", "transformers", "scripted-shopper"} <= set(names["vlm"])
    assert {"minilm", "siglip2", "clip", "qwen3-vl-embedding", "openai-embed"} <= set(names["embedder"])
    assert {"placeholder", "store", "procedural", "official"} <= set(names["image_source"])
    assert {"locomo", "longmemeval"} <= set(names["dataset"])


BUILD = """
import json, sys
from serve.vlm import build_vlm
from serve.embed import build_embedder
from serve.models import list_models, load_model_spec
built = {}
for name in list_models():
    spec = load_model_spec(name)
    # cluster models need weights or an endpoint; MiniLM's weights ship in a package
    if spec.source != "local" and name != "minilm":
        continue
    obj = (build_vlm if spec.kind == "vlm" else build_embedder)(name)
    built[name] = {"stand_in": bool(getattr(obj, "stand_in", False))}
shopper = build_vlm("scripted-shopper")   # a plugin of a higher floor, by name only
built["scripted-shopper"] = {"stand_in": shopper.stand_in}
from core.paths import resolve_data_dir
from env.storefront.catalog import load_catalog
from env.storefront.imagesource import build_image_source
cat = load_catalog(resolve_data_dir(), seed=0)
for name in ("placeholder", "procedural"):
    src = build_image_source(name, cat)
    built[name] = {"png": src.get(cat.variants[0].url_hash)[1:4] == b"PNG"}
print(json.dumps(built))
"""


def test_every_local_model_and_plugin_builds_by_name_in_a_fresh_interpreter():
    import json

    out = subprocess.run([sys.executable, "-c", BUILD], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    built = json.loads(out.stdout.strip().splitlines()[-1])
    assert built["scripted-shopper"]["stand_in"] is True
    assert built["minilm"]["stand_in"] is False  # a real model (packaged weights)
    tiny = [n for n in built if n.startswith("tiny-")]
    assert tiny and all(built[n]["stand_in"] for n in tiny), built
    assert built["placeholder"]["png"] and built["procedural"]["png"]
