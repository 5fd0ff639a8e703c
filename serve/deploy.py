"""Model deployments: Ray Serve config files from the model YAMLs.

:func:`serve_config` turns a list of deployables (:mod:`vismem.serve.hosting`: model variants and
registered names, each with its ``deploy:`` block) into one Serve config — the
``ServeDeploySchema`` document that ``serve deploy`` / ``serve run`` and a KubeRay RayService's
``serveConfigV2`` take:

* ``deploy.engine: vllm`` models share one OpenAI gateway app,
  :data:`vismem.serve.hosting.LLM_APP`, at route ``/`` (``ray.serve.llm:build_openai_app``; the
  request's ``model`` picks the model), so the model YAMLs' ``${VISMEM_VLM_BASE_URL}`` is one
  URL for all of them;
* every other model is its own app at ``/<name>`` (``vismem.serve.apps:model_app``: the registered
  backend behind ``/v1/chat/completions`` or ``/v1/embeddings``).

How runs reach a deployed model by name (``deployed:NAME``) is :mod:`vismem.serve.deployed`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from vismem.core.errors import ConfigError
from vismem.serve.hosting import LLM_APP, Deployable, deployable
from vismem.serve.registry import registered

#: The deployment's name inside every vismem app (a Serve config's ``deployments[].name``).
DEPLOYMENT_NAME = "OpenAIModelServer"
#: What ``vismem serve up`` deploys without names: the local stand-ins (those registered here)
#: and the paper's served models (GPU cluster).
PRESETS: dict[str, tuple[str, ...]] = {
    "local": ("scripted-shopper", "scripted-recall", "minilm", "pocket-clip", "ocr-minilm"),
    "paper": ("qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-embedding-8b"),
}


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
    names = registered()
    ds = [deployable(m, names, overrides=(overrides or {}).get(m), env=env) for m in models]
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
