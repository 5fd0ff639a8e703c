"""Model deployments: Ray Serve config files from the model YAMLs, and how runs reach them by name.

A *deployable* is a model variant (``serve/models/<name>.yaml``) or a registered VLM / embedder
name (the scripted stand-ins, ``minilm``); its ``deploy:`` block (:class:`DeploySettings`) says
how Serve hosts it. :func:`serve_config` turns a list of them into one Serve config — the
``ServeDeploySchema`` document that ``serve deploy`` / ``serve run`` and a KubeRay RayService's
``serveConfigV2`` take:

* ``deploy.engine: vllm`` models share one OpenAI gateway app, :data:`LLM_APP`, at route ``/``
  (``ray.serve.llm:build_openai_app``; the request's ``model`` picks the model), so the model
  YAMLs' ``${VISMEM_VLM_BASE_URL}`` is one URL for all of them;
* every other model is its own app at ``/<name>`` (``vismem.serve.apps:model_app``: the registered
  backend behind ``/v1/chat/completions`` or ``/v1/embeddings``).

Runs name a deployed model as ``deployed:<name>`` wherever a VLM or embedder spec goes
(``--backend deployed:scripted-shopper``, ``probes.backends: [deployed:scripted-recall]``,
``memory.components: {text_encoder: deployed:minilm}``). :func:`deployed_spec` resolves that —
when the config is checked — to an ``openai`` / ``openai-embed`` client spec for the running
app, or raises :class:`ConfigError` when it is not up. The Serve HTTP address comes from
``$VISMEM_SERVE_URL`` (clusters: the RayService's ``<name>-serve-svc``) or the state file that
``vismem serve up`` writes (:func:`state_path`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vismem.core.errors import ConfigError

DEPLOYED_PREFIX = "deployed:"
#: The Serve app holding every vLLM model (one OpenAI router, route ``/``).
LLM_APP = "vllm"
#: What ``vismem serve up`` deploys without names: the local stand-ins (those registered here)
#: and the paper's served models (GPU cluster).
PRESETS: dict[str, tuple[str, ...]] = {
    "local": ("scripted-shopper", "scripted-recall", "minilm", "pocket-clip", "ocr-minilm"),
    "paper": ("qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-embedding-8b"),
}


class DeploySettings(BaseModel):
    """A model YAML's ``deploy:`` block: how Ray Serve hosts the model (every field optional)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: Literal["vismem", "vllm"] = Field(
        "vismem", description="vllm: ray.serve.llm (vLLM engine); vismem: the registered backend in serve.apps")
    model_source: str | None = Field(None, description="vllm: weights to load (HF id or path); default args.model")
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="vllm: vLLM engine arguments")
    accelerator_type: str | None = Field(None, description="Ray accelerator type the replicas need (H100, A100, L4...)")
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


def deployable(name: str, *, overrides: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Deployable:
    """The :class:`Deployable` of a model variant or registered name (ConfigError otherwise).

    ``overrides`` (e.g. ``{"max_replicas": 4}``) are laid over the YAML's ``deploy:`` block.
    """
    from vismem.serve.embed import EMBEDDERS
    from vismem.serve.models import MODELS_DIR, expand_env, load_model_spec
    from vismem.serve.vlm import VLMS

    if (MODELS_DIR / f"{name}.yaml").is_file():
        ms = load_model_spec(name, env=env)
        kind, spec, raw = ms.kind, ms.spec, expand_env(dict(ms.deploy or {}), env)
        if ms.name == "openai" and raw.get("engine") != "vllm":
            raise ConfigError(f"model {name!r} is a hosted API (an openai client without deploy.engine: vllm); "
                              "there is nothing to deploy")
    elif name in VLMS or name in EMBEDDERS:
        if name in VLMS and name in EMBEDDERS:
            raise ConfigError(f"{name!r} is both a VLM and an embedder; deploy a model variant instead")
        kind, spec, raw = ("vlm" if name in VLMS else "embedder"), {"name": name, "args": {}}, {}
    else:
        from vismem.serve.models import list_models

        known = sorted(set(VLMS.names()) | set(EMBEDDERS.names()) | set(list_models()))
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
    return Deployable(name, kind, spec, settings, model_id, client)


def llm_config(d: Deployable) -> dict[str, Any]:
    """The ``ray.serve.llm.LLMConfig`` fields of a vLLM deployable (pure)."""
    s = d.settings
    cfg: dict[str, Any] = {
        # The served id is what the ``openai`` client sends as ``model``, so the two always agree.
        "model_loading_config": {"model_id": d.model_id, "model_source": s.model_source or d.model_id},
        "engine_kwargs": dict(s.engine_kwargs),
        "deployment_config": {"autoscaling_config": s.autoscaling(),
                              "max_ongoing_requests": s.max_ongoing_requests},
    }
    if s.accelerator_type:
        cfg["accelerator_type"] = s.accelerator_type
    return cfg


def _vismem_app(d: Deployable) -> dict[str, Any]:
    from vismem.serve.apps import DEPLOYMENT_NAME

    s = d.settings
    actor: dict[str, Any] = {"num_cpus": s.num_cpus, "num_gpus": s.num_gpus}
    if s.accelerator_type:
        actor["accelerator_type"] = s.accelerator_type
    return {"name": d.app, "route_prefix": d.route_prefix, "import_path": "vismem.serve.apps:model_app",
            "args": {f"{d.kind}_spec": d.spec, "model_id": d.model_id},
            "deployments": [{"name": DEPLOYMENT_NAME, "max_ongoing_requests": s.max_ongoing_requests,
                             "autoscaling_config": s.autoscaling(), "ray_actor_options": actor}]}


def serve_config(models: list[str], *, host: str = "0.0.0.0", port: int = 8000, proxy_location: str = "EveryNode",
                 overrides: dict[str, dict[str, Any]] | None = None,
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """The Serve config (``ServeDeploySchema``, validated) that deploys ``models``;
    ``overrides[model]`` is laid over that model's ``deploy:`` block."""
    if not models:
        raise ConfigError("no models to deploy")
    if len(set(models)) != len(models):
        raise ConfigError(f"models listed twice: {sorted({m for m in models if models.count(m) > 1})}")
    ds = [deployable(m, overrides=(overrides or {}).get(m), env=env) for m in models]
    apps = [_vismem_app(d) for d in ds if d.settings.engine == "vismem"]
    llms = [llm_config(d) for d in ds if d.settings.engine == "vllm"]
    if llms:
        apps.insert(0, {"name": LLM_APP, "route_prefix": "/", "import_path": "ray.serve.llm:build_openai_app",
                        "args": {"llm_configs": llms}})
    return validate_serve_config({"proxy_location": proxy_location, "http_options": {"host": host, "port": port},
                                  "applications": apps})


def validate_serve_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` checked against Ray Serve's own schema (what ``serve deploy`` sends: unset fields left out)."""
    from ray.serve.schema import ServeDeploySchema

    try:
        return ServeDeploySchema.model_validate(cfg).model_dump(mode="json", exclude_unset=True)
    except ValidationError as err:
        raise ConfigError(f"invalid Serve config: {err}") from None


# -- the deployment state and name resolution --------------------------------------------------

def state_path() -> Path:
    """Where ``vismem serve up`` records what it deployed: ``$VISMEM_SERVE_STATE`` or
    ``runs/.serve/state.json`` in the checkout."""
    from vismem.core.paths import repo_root

    env = os.environ.get("VISMEM_SERVE_STATE")
    return Path(env) if env else repo_root() / "runs" / ".serve" / "state.json"


def read_state() -> dict[str, Any] | None:
    """The recorded deployment (``serve_url``, ``dashboard``, ``models``, ...) or None."""
    p = state_path()
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ConfigError(f"unreadable deployment state {p}: {err} (remove it, or `vismem serve down`)") from None


def write_state(state: dict[str, Any]) -> Path:
    """Write the state file atomically; returns its path."""
    p = state_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(p)
    return p


def clear_state() -> None:
    state_path().unlink(missing_ok=True)


def serve_url() -> str | None:
    """The Serve HTTP proxy runs reach: ``$VISMEM_SERVE_URL``, else the state file's."""
    return _serve_target()[0]


def _serve_target() -> tuple[str | None, dict[str, Any] | None]:
    """``(serve URL, state file)``: the state is None when ``$VISMEM_SERVE_URL`` names the proxy
    (then no state file is read) or when there is none."""
    env = os.environ.get("VISMEM_SERVE_URL")
    if env:
        return env.rstrip("/"), None
    state = read_state()
    return (state.get("serve_url") if state else None), state


_PROBED: dict[str, tuple[float, dict[str, Any]]] = {}
_PROBE_TTL_S = 20.0


def _probe(base: str) -> dict[str, Any]:
    """``GET {base}/models`` (cached briefly: a config is resolved several times per run)."""
    import httpx

    hit = _PROBED.get(base)
    if hit and time.monotonic() - hit[0] < _PROBE_TTL_S:
        return hit[1]
    r = httpx.get(f"{base}/models", timeout=httpx.Timeout(10.0, connect=3.0))
    r.raise_for_status()
    body = r.json()
    _PROBED[base] = (time.monotonic(), body)
    return body


def deployed_spec(name: str, kind: str) -> dict[str, Any]:
    """The client ``{name, args}`` for ``deployed:<name>`` as a ``kind`` (vlm | embedder).

    Raises :class:`ConfigError` when no deployment is known, the model is not deployed, is of
    the other kind, or does not answer ``/v1/models``.
    """
    ref = f"{DEPLOYED_PREFIX}{name}"
    try:
        d = deployable(name)
    except ConfigError as err:
        raise ConfigError(f"{ref}: {err}") from None
    if d.kind != kind:
        article = {"vlm": "a VLM", "embedder": "an embedder"}
        raise ConfigError(f"{ref}: {name!r} is {article[d.kind]}, not {article.get(kind, kind)}")
    url, state = _serve_target()  # the state file is read once
    hint = f"start it with `vismem serve up {name}`"
    if url is None:
        raise ConfigError(f"{ref}: no model deployment is up (no {state_path()}, VISMEM_SERVE_URL unset); {hint}")
    if state is not None and name not in state.get("models", []):
        raise ConfigError(f"{ref}: not deployed (deployed: {', '.join(state.get('models', [])) or 'none'}); {hint}")
    base = d.base_url(url)
    try:
        listed = _probe(base).get("data") or []
    except Exception as err:  # noqa: BLE001 - refused, timeout, 404, not JSON: all mean "not up"
        raise ConfigError(f"{ref}: not up at {base} ({type(err).__name__}: {err}); {hint}") from None
    entry = next((m for m in listed if m.get("id") == d.model_id), None)
    if entry is None:
        raise ConfigError(f"{ref}: {base} does not serve model {d.model_id!r} (it lists "
                          f"{[m.get('id') for m in listed]}); {hint}")
    meta = entry.get("vismem") or {}
    stand_in = bool(meta.get("stand_in"))
    if kind == "vlm":
        if d.settings.engine == "vllm":  # the YAML's client settings (layout, timeouts), this endpoint
            return {"name": "openai", "args": {**d.client_args, "base_url": base}}
        return {"name": "openai", "args": {"model": d.model_id, "base_url": base, "label": name,
                                           "api_key_env": None, "stand_in": stand_in}}
    args: dict[str, Any] = {"model": d.model_id, "base_url": base, "api_key_env": None,
                            "label": f"{name} (stand-in)" if stand_in else name}
    if meta.get("dim"):
        args["dim"] = int(meta["dim"])
    return {"name": "openai-embed", "args": args}
