"""Model variants as data: one YAML per model, listable by name.

Each ``serve/models/<name>.yaml`` holds the component spec (``name`` = registered backend,
``args``) plus metadata::

    kind: vlm                      # vlm | embedder
    description: ...
    source: dmv-bench              # which paper uses it (memshot, dmv-bench, local)
    name: openai
    args: {model: Qwen/Qwen2.5-VL-7B-Instruct, base_url: "${VISMEM_VLM_BASE_URL:-http://127.0.0.1:8000/v1}"}
    deploy: {engine: vllm, model_source: Qwen/Qwen2.5-VL-7B-Instruct, engine_kwargs: {...}}

``${VAR:-default}`` in string values is expanded from the environment at load time, so the
same file points at a local server or the cluster's endpoint; the expanded spec is what a run
manifest records. ``deploy`` (optional) is how the cluster hosts the model (``vismem.serve.apps``); ``serving``
(optional, with ``deploy``) sizes its KV cache, from which ``vismem.serve.budget.kv_streams``
derives the requests one replica holds at once; ``price`` (optional, hosted APIs) is USD per
million input / output tokens.

The catalogue only loads and validates specs (it imports nothing else of serve): building one is
:func:`vismem.serve.build.build_model`, deploying one :mod:`vismem.serve.deploy`.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from vismem.core.yamlsafe import load_yaml

MODELS_DIR = Path(__file__).resolve().parent
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ModelSpec(BaseModel):
    """One model variant: its registry spec plus how it is described and deployed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: str = Field(..., description="file stem: the name runs refer to (e.g. qwen2.5-vl-7b)")
    kind: Literal["vlm", "embedder"] = Field(..., description="which registry builds it")
    description: str = Field("", description="one line on what the model is and where it is used")
    source: str = Field("", description="paper or context that uses it: memshot, dmv-bench, local, engine (the "
                        "engine tier: a tiny model on vLLM's CPU build, scripts/setup.sh --engine)")
    name: str = Field(..., description="registered backend name (openai, transformers, minilm, ...)")
    args: dict[str, Any] = Field(default_factory=dict, description="backend arguments, env-expanded")
    deploy: dict[str, Any] | None = Field(None, description="cluster hosting settings (engine, model_source, engine_kwargs, ...)")
    serving: dict[str, Any] | None = Field(
        None, description="KV-cache sizing of a GPU-served variant (vismem.serve.budget.kv_streams): "
        "kv_bytes_per_token, weights_gb, gpu_memory_gb (one GPU), overhead_gb")
    price: dict[str, Any] | None = Field(
        None, description="a hosted API's price in USD per million tokens: input, output (`vismem plan` costs)")

    @property
    def spec(self) -> dict[str, Any]:
        """The ``{"name", "args"}`` spec for ``VLMS.build`` / ``EMBEDDERS.build`` and manifests."""
        return {"name": self.name, "args": dict(self.args)}


def expand_env(value: Any, env: dict[str, str] | None = None) -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in every string inside ``value``."""
    env = os.environ if env is None else env
    if isinstance(value, str):
        def sub(m: re.Match) -> str:
            name, default = m.group(1), m.group(2)
            if name in env and env[name] != "":
                return env[name]
            if default is None:
                raise KeyError(f"environment variable {name} is not set and has no default")
            return default
        return _ENV.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_env(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, env) for v in value]
    return value


def list_models(kind: str | None = None) -> list[str]:
    """Names of all model specs (optionally only ``vlm`` or ``embedder``), sorted."""
    names = sorted(p.stem for p in MODELS_DIR.glob("*.yaml"))
    if kind is None:
        return names
    return [n for n in names if _raw(n).get("kind") == kind]


def variant_spec(name: str, kind: str) -> dict[str, Any] | None:
    """The ``{name, args}`` of model variant ``name`` when it is of ``kind``, else None.

    The catalogue half of the VLM and embedder registries' aliases
    (:mod:`vismem.serve.registry`): a config naming ``qwen2.5-vl-7b`` (or
    ``{model: qwen2.5-vl-7b}``) resolves through here, env-expanded at that moment.
    """
    if not (MODELS_DIR / f"{name}.yaml").is_file() or _raw(name).get("kind") != kind:
        return None
    return load_model_spec(name).spec


def _raw(name: str) -> dict[str, Any]:
    path = MODELS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise KeyError(f"unknown model {name!r}; known: {', '.join(list_models())}")
    return copy.deepcopy(_parsed(str(path), path.read_bytes()))


@functools.lru_cache(maxsize=256)
def _parsed(path: str, content: bytes) -> dict[str, Any]:
    # Keyed by the file's content: `vismem plan` resolves every back-end through list_models, which
    # would otherwise parse every YAML (pure-Python, ~0.1 s each on a loaded machine) per call.
    data = load_yaml(content, path) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping")
    return data


def raw_spec(name: str) -> dict[str, Any]:
    """The ``{name, args}`` of model variant ``name`` with ``${VAR}`` left as written: what a
    Serve app ships, so the cluster expands it with its own environment."""
    data = _raw(name)
    return {"name": data["name"], "args": dict(data.get("args") or {})}


def load_model_spec(name: str, *, env: dict[str, str] | None = None) -> ModelSpec:
    """Load ``serve/models/<name>.yaml`` with environment expansion in ``args``."""
    data = _raw(name)
    data["args"] = expand_env(data.get("args") or {}, env)
    if data.get("serving"):
        data["serving"] = expand_env(data["serving"], env)
    try:
        return ModelSpec(variant=name, **data)
    except Exception as e:  # pydantic's message names the field
        raise ValueError(f"{MODELS_DIR / (name + '.yaml')}: {e}") from e
