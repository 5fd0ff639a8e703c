"""Every vLLM call site of the project against the pinned vLLM's real signatures.

vLLM cannot be installed or imported here; ``tests/serve/vllm_api.json`` is the committed extract
of the parameter names vismem relies on, read from the wheel's sources by
``scripts/vllm_api_extract.py`` (regenerate it when the pin moves). The walk finds every import
from ``vllm``, every constructor call of an imported class, every method call on an object built
from ``vllm.LLM``, and the keywords of each (literal ``**kwargs`` dicts included), and checks the
model YAMLs' vLLM engine arguments against ``EngineArgs``.
"""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest

from vismem.serve.models import list_models, load_model_spec

ROOT = Path(__file__).resolve().parents[2]
API = json.loads((Path(__file__).with_name("vllm_api.json")).read_text())
CALLABLES: dict[str, dict] = API["callables"]
ENGINE_ARGS = set(CALLABLES["vllm.EngineArgs"]["params"])
ASYNC_ENGINE_ARGS = set(CALLABLES["vllm.AsyncEngineArgs"]["params"])
#: vLLM 0.29 methods whose keyword is required at run time though the signature defaults it to None.
REQUIRED_AT_RUN_TIME = {"vllm.LLM.encode": {"pooling_task"}}


def _project_files() -> list[Path]:
    floors = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["vismem"]["floors"]
    return sorted(p for pkg in [*floors, "vismem", "scripts"] for p in (ROOT / pkg).rglob("*.py"))


def _dict_keys(scope: ast.AST, name: str) -> set[str]:
    """String keys statically given to dict ``name`` in ``scope`` (literals, ``d[k] =``, setdefault)."""
    keys: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
                        and isinstance(t.slice, ast.Constant)):
                    keys.add(t.slice.value)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name and node.args
                and isinstance(node.args[0], ast.Constant)):
            keys.add(node.args[0].value)
    return keys


def _check_call(call: ast.Call, qual: str, scope: ast.AST, where: str) -> list[str]:
    sig = CALLABLES.get(qual)
    if sig is None:
        return [f"{where}: {qual} is not in vLLM {API['vllm']}"]
    allowed = set(sig["params"]) | (ENGINE_ARGS if qual == "vllm.LLM" else set())
    given = {k.arg for k in call.keywords if k.arg}
    for k in call.keywords:
        if k.arg is None and isinstance(k.value, ast.Name):  # **kwargs: its statically known keys
            given |= _dict_keys(scope, k.value.id)
    bad = [f"{where}: {qual}(... {kw}=) is not a parameter in vLLM {API['vllm']}" for kw in sorted(given - allowed)]
    if len(call.args) > len(sig["params"]):
        bad.append(f"{where}: {qual} takes at most {len(sig['params'])} positional arguments")
    missing = REQUIRED_AT_RUN_TIME.get(qual, set()) - given
    bad += [f"{where}: {qual} needs {m}= in vLLM {API['vllm']}" for m in sorted(missing)]
    return bad


def _prompt_keys(scope: ast.AST) -> list[tuple[int, set[str]]]:
    """Keys of the prompt dicts a scope builds: dict literals with a ``"prompt"`` key, the dict
    literals spread into them (``**({...} if x else {})``), and ``name[k] =`` on a name bound to
    one (``prompt = {"prompt": ...}; prompt["multi_modal_data"] = ...``)."""
    def literal_keys(d: ast.AST) -> set[str]:
        if isinstance(d, ast.IfExp):  # ``**({...} if x else {})``: either branch
            return literal_keys(d.body) | literal_keys(d.orelse)
        if not isinstance(d, ast.Dict):
            return set()
        keys = {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        return keys | {kk for k, v in zip(d.keys, d.values) if k is None for kk in literal_keys(v)}

    found: list[tuple[int, set[str]]] = []
    names: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Dict) and "prompt" in literal_keys(node):
            found.append((node.lineno, literal_keys(node)))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict) \
                and "prompt" in literal_keys(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names
                        and isinstance(t.slice, ast.Constant)):
                    found.append((node.lineno, {t.slice.value}))
    return found


def vllm_violations(source: str, where: str) -> tuple[list[str], int]:
    """``(problems, call sites checked)`` of one module's vLLM use."""
    tree = ast.parse(source)
    problems: list[str] = []
    checked = 0
    engines: set[str] = set()  # expressions some scope binds to a vllm.LLM (``self.llm``, ``llm``)
    for scope in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] or [tree]:
        local: dict[str, str] = {}  # local name -> qualified vLLM name
        for node in ast.walk(scope):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "vllm":
                exported = API["exports"].get(node.module)
                for a in node.names:
                    if exported is not None and a.name not in exported:
                        problems.append(f"{where}:{node.lineno}: {node.module} has no {a.name} in vLLM {API['vllm']}")
                    local[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(scope):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in local):
                continue
            problems += _check_call(node, local[node.func.id], scope, f"{where}:{node.lineno}")
            checked += 1
        for node in ast.walk(scope):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name) and local.get(node.value.func.id) == "vllm.LLM"):
                engines |= {ast.unparse(t) for t in node.targets}
    if engines:  # the prompts a module driving an engine builds are vLLM TextPrompts
        allowed = set(CALLABLES["vllm.inputs.TextPrompt"]["params"])
        for line, keys in _prompt_keys(tree):
            problems += [f"{where}:{line}: prompt key {k!r} is not a vLLM {API['vllm']} TextPrompt key"
                         for k in sorted(keys - allowed)]
            checked += 1
    for node in ast.walk(tree):  # methods called on an engine anywhere in the module
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and ast.unparse(node.func.value) in engines):
            problems += _check_call(node, f"vllm.LLM.{node.func.attr}", tree, f"{where}:{node.lineno}")
            checked += 1
    return problems, checked


def test_every_vllm_call_site_matches_the_pinned_signatures():
    problems: list[str] = []
    checked = 0
    for path in _project_files():
        text = path.read_text()
        if "vllm" not in text:
            continue
        found, n = vllm_violations(text, str(path.relative_to(ROOT)))
        problems += found
        checked += n
    assert not problems, "\n".join(problems)
    assert checked >= 9  # two engines, two poolers, an embed and an encode call, three prompt dicts


def test_the_walker_catches_the_pre_029_jina_code():
    old = (
        "def load(path, extra):\n"
        "    from vllm import LLM\n"
        "    from vllm.config import PoolerConfig\n"
        "    kw = {'override_pooler_config': PoolerConfig(pooling_type='ALL', normalize=False), **extra}\n"
        "    self.llm = LLM(model=path, runner='pooling', **kw)\n"
        "def forward(self, reqs):\n"
        "    reqs = [{'prompt': p, **({'multi_modal_inputs': i} if i else {})} for p, i in reqs]\n"
        "    return self.llm.encode(reqs, use_tqdm=False)\n"
        "def other(self):\n"
        "    from vllm import LLM, NoSuchThing\n"
        "    llm = LLM(model='m')\n"
        "    llm.generate_async('x')\n")
    problems, _ = vllm_violations(old, "old.py")
    text = "\n".join(problems)
    assert "override_pooler_config" in text and "normalize" in text
    assert "vllm.LLM.encode needs pooling_task=" in text and "NoSuchThing" in text
    assert "vllm.LLM.generate_async is not in vLLM" in text
    assert "prompt key 'multi_modal_inputs' is not a vLLM" in text


def test_the_extract_is_of_the_pinned_vllm():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"vllm=={API["vllm"]}"' in pyproject, "regenerate tests/serve/vllm_api.json for the new pin"
    assert {"pooler_config", "mm_processor_kwargs", "runner"} <= set(CALLABLES["vllm.LLM"]["params"])
    assert "normalize" not in CALLABLES["vllm.config.PoolerConfig"]["params"]


@pytest.mark.parametrize("name", list_models())
def test_model_yaml_engine_arguments_are_vllm_engine_args(name):
    ms = load_model_spec(name, env={})
    deploy = ms.deploy or {}
    if deploy.get("engine") == "vllm":  # ray.serve.llm builds AsyncEngineArgs(**engine_kwargs)
        unknown = set(deploy.get("engine_kwargs") or {}) - ASYNC_ENGINE_ARGS
        assert not unknown, f"{name}: deploy.engine_kwargs not in vLLM {API['vllm']} EngineArgs: {sorted(unknown)}"
    if "vllm_kwargs" in ms.args:  # passed to vllm.LLM(**vllm_kwargs): its parameters or EngineArgs
        unknown = set(ms.args["vllm_kwargs"]) - ENGINE_ARGS - set(CALLABLES["vllm.LLM"]["params"])
        assert not unknown, f"{name}: args.vllm_kwargs not accepted by vllm.LLM {API['vllm']}: {sorted(unknown)}"


@pytest.mark.parametrize("name", list_models())
def test_model_yaml_vllm_environment_variables_exist_in_the_pinned_vllm(name):
    env = ((load_model_spec(name, env={}).deploy or {}).get("env_vars") or {})
    unknown = {k for k in env if k.startswith("VLLM_")} - set(API["env_vars"])
    assert not unknown, f"{name}: deploy.env_vars not read by vLLM {API['vllm']}: {sorted(unknown)}"


def test_the_paper_served_vllm_models_decode_batch_invariantly():
    """Greedy decoding under dynamic batching reproduces token for token only with vLLM's
    batch-invariant mode: the paper's served vLLM models turn it on, and their LLM configs carry it."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    from vismem.serve.deploy import PRESETS, llm_config
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered

    assert "VLLM_BATCH_INVARIANT" in API["env_vars"]
    vllm_models = [m for m in PRESETS["paper"] if (load_model_spec(m).deploy or {}).get("engine") == "vllm"]
    assert vllm_models
    for m in vllm_models:
        conf = LLMConfig(**llm_config(deployable(m, registered(), env={})))
        assert conf.runtime_env["env_vars"]["VLLM_BATCH_INVARIANT"] == "1", m
