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
_PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FLOORS: dict[str, list[str]] = _PYPROJECT["tool"]["vismem"]["floors"]
NS = "vismem"


def _modules(pkg: str) -> list[Path]:
    return sorted((ROOT / pkg).rglob("*.py"))


def _module_name(path: Path) -> str:
    """The import name of a file: ``core/store.py`` -> ``vismem.core.store``."""
    rel = (path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)).with_suffix("")
    parts = list(rel.parts)
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[:1] == [NS] else [NS, *parts])


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks (annotations only: never executed)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


def _imports(path: Path, *, top_level_only: bool = False) -> list[tuple[str, int]]:
    """Absolute module names a file imports (relative imports resolved), with line numbers.

    Imports inside functions count (they run, and a circle through them is a circle); imports
    under ``if TYPE_CHECKING:`` do not.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module_name(path).split(".")
    is_pkg = path.name == "__init__.py"
    skip = _type_checking_lines(tree)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if getattr(node, "lineno", None) in skip:
            continue
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


def _floor(mod: str) -> str | None:
    """The project package (floor) a module name belongs to, or None (not the project's)."""
    parts = mod.split(".")
    return parts[1] if parts[0] == NS and len(parts) > 1 and parts[1] in FLOORS else None


def _graph() -> dict[str, set[str]]:
    """Every project module -> the project modules it imports, at any depth of the file."""
    files = [p for pkg in FLOORS for p in _modules(pkg)] + _modules(NS)
    known = {_module_name(p) for p in files}
    return {_module_name(p): {m for m, _ in _imports(p) if m in known and m != _module_name(p)} for p in files}


def test_floors_cover_every_top_level_package():
    pkgs = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name not in ("tests", NS)}
    assert pkgs == set(FLOORS), f"packages without a floor (or floors without a package): {pkgs ^ set(FLOORS)}"
    for pkg, allowed in FLOORS.items():  # the rule itself is acyclic
        assert pkg not in allowed and all(pkg not in FLOORS[a] for a in allowed), pkg


def test_every_folder_is_mapped_into_the_namespace():
    st = _PYPROJECT["tool"]["setuptools"]
    assert st["package-dir"] == {NS: NS, **{f"{NS}.{pkg}": pkg for pkg in FLOORS}}
    data = (".py", *(x.lstrip("*") for x in st["package-data"]["*"]))
    tree = {NS}
    for pkg in FLOORS:
        for d in [ROOT / pkg, *sorted(x for x in (ROOT / pkg).rglob("*") if x.is_dir())]:
            if d.name != "__pycache__" and any(f.is_file() and f.name.endswith(data) for f in d.iterdir()):
                tree.add(f"{NS}." + ".".join(d.relative_to(ROOT).parts))
    assert set(st["packages"]) == tree, f"pyproject packages vs the tree: {set(st['packages']) ^ tree}"


def test_no_generic_top_level_import_names():
    # Every project import goes through the namespace: `import core` would find nothing installed.
    bad = []
    for path in [p for pkg in FLOORS for p in _modules(pkg)] + sorted((ROOT / "tests").rglob("*.py")):
        for mod, line in _imports(path):
            if mod.split(".")[0] in FLOORS:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, "imports outside the vismem namespace:\n" + "\n".join(bad)


@pytest.mark.parametrize("pkg", sorted(FLOORS))
def test_no_import_goes_up_or_sideways(pkg):
    bad = []
    for path in _modules(pkg):
        for mod, line in _imports(path):
            top = _floor(mod)
            if top is not None and top != pkg and top not in FLOORS[pkg]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, f"{pkg} may import only {FLOORS[pkg] or 'nothing of the project'}:\n" + "\n".join(sorted(set(bad)))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One witness circle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return comps


def test_no_import_cycles_counting_imports_inside_functions():
    # A package importing its own submodules (its public face) and a plugin importing its
    # package's registry would make every package a circle; the registries import their plugins
    # by name (importlib), never by an import statement, so no exception is needed.
    circles = _cycles(_graph())
    assert not circles, "import circles (imports inside functions count):\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_checker_sees_imports_in_functions_and_skips_type_checking(tmp_path):
    # The walker must see imports inside functions and relative imports (or the rule is hollow).
    f = tmp_path / "mod.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vismem.core import x\n"
                 "def f():\n    from vismem.pipelines.runner import open_store\n")
    got = _imports(f)
    assert ("vismem.pipelines.runner", 5) in got and not any(m.startswith("vismem.core") for m, _ in got)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


FRESH = """
import json
from vismem.env.storefront.imagesource import IMAGE_SOURCES
from vismem.memory.dialogue.datasets import DATASETS
from vismem.serve.registry import EMBEDDERS, VLMS
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
from vismem.serve.build import build_embedder, build_vlm
from vismem.serve.models import list_models, load_model_spec
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
from vismem.core.paths import resolve_data_dir
from vismem.env.storefront.catalog import load_catalog
from vismem.env.storefront.imagesource import build_image_source
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


def test_no_stage_imports_another_stage():
    # What two stages share lives in their wing's protocol, chain or cache modules; a stage module
    # is only ever loaded through the stage table.
    from vismem.pipelines.stage_order import STAGE_MODULES

    stage_mods = set(STAGE_MODULES.values())
    bad = []
    for pkg in FLOORS:
        for path in _modules(pkg):
            for mod, line in _imports(path):
                if mod in stage_mods or mod.rsplit(".", 1)[0] in stage_mods:
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, "stage modules imported directly:\n" + "\n".join(bad)


def test_no_private_name_is_imported_from_another_module():
    # A name with a leading underscore is its module's own: another module needing it means the
    # name is public (rename it) or the code belongs beside it.
    bad = []
    for pkg in FLOORS:
        for path in _modules(pkg):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(NS + ".") and node.level == 0:
                    bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{a.name}"
                            for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_no_merge_conflict_markers_in_tracked_files():
    out = subprocess.run(["git", "grep", "-nE", "^(<{7} |>{7} |={7}$)", "--", ".", ":!*.png"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 1 and not out.stdout, f"conflict markers:\n{out.stdout}"


def test_every_dotted_module_path_named_in_code_exists():
    # Module paths in strings (subprocess code, importlib names, patch targets, docs) break
    # silently when a module moves: the package and module after `vismem.` must exist.
    import importlib
    import re

    pat = re.compile(r"\bvismem\.(" + "|".join(FLOORS) + r")\.([a-z_][a-z0-9_]*)")
    bad = []
    files = [p for pkg in FLOORS for p in _modules(pkg)] + sorted((ROOT / "tests").rglob("*.py"))
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for pkg, name in pat.findall(line):
                base = ROOT / pkg / name
                is_module = base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
                if not is_module and not hasattr(importlib.import_module(f"vismem.{pkg}"), name):
                    bad.append(f"{path.relative_to(ROOT)}:{n}: vismem.{pkg}.{name}")
    assert not bad, "module paths that name nothing:\n" + "\n".join(bad)
