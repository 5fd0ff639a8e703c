"""Model deployments: Ray Serve config files from the model YAMLs.

:func:`serve_config` turns a list of deployables (:mod:`vismem.serve.hosting`: model variants and
registered names, each with its ``deploy:`` block) into one Serve config — the
``ServeDeploySchema`` document that ``serve deploy`` / ``serve run`` and a KubeRay RayService's
``serveConfigV2`` take:

* ``deploy.engine: vllm`` models share one OpenAI gateway app,
  :data:`vismem.serve.hosting.LLM_APP`, at route ``/`` (Ray's ``build_openai_app`` through
  :data:`LLM_BUILDER`; the request's ``model`` picks the model), so the model YAMLs'
  ``${VISMEM_VLM_BASE_URL}`` is one URL for all of them; each loads its weights from where
  ``vismem weights sync`` put them (:mod:`vismem.serve.weights`);
* every other model is its own app at ``/<name>`` (``vismem.serve.apps:model_app``: the registered
  backend behind ``/v1/chat/completions`` or ``/v1/embeddings``).

How runs reach a deployed model by name (``deployed:NAME``) is :mod:`vismem.serve.deployed`.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from vismem.core.errors import ConfigError
from vismem.serve.hosting import LLM_APP, Deployable, deployable
from vismem.serve.loopback import hook_env
from vismem.serve.models import MODELS_DIR, raw_spec
from vismem.serve.registry import registered
from vismem.serve.vllm_cpu import cpu_env
from vismem.serve.weights import DEFAULT_ROOT, check_root, model_path, weights_of

#: The deployment's name inside every vismem app (a Serve config's ``deployments[].name``).
DEPLOYMENT_NAME = "OpenAIModelServer"
#: What ``vismem serve up`` deploys without names: the local stand-ins (those registered here)
#: and the paper's served models (GPU cluster).
PRESETS: dict[str, tuple[str, ...]] = {
    "local": ("scripted-shopper", "scripted-recall", "minilm", "pocket-clip", "ocr-minilm"),
    "paper": ("qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-embedding-8b"),
}


#: The builder of the vLLM gateway app: Ray's ``build_openai_app`` after expanding each model's
#: weights path on the cluster (:func:`vismem.serve.apps.llm_app`).
LLM_BUILDER = "vismem.serve.apps:llm_app"


def parallel_size(engine_kwargs: dict[str, Any]) -> int:
    """GPUs one vLLM engine spans: tensor x pipeline parallel size."""
    return int(engine_kwargs.get("tensor_parallel_size") or 1) * int(engine_kwargs.get("pipeline_parallel_size") or 1)


def llm_config(d: Deployable, weights: str = DEFAULT_ROOT) -> dict[str, Any]:
    """The ``ray.serve.llm.LLMConfig`` fields of a vLLM deployable (pure).

    ``weights`` is the root ``vismem weights sync --to`` filled (:mod:`vismem.serve.weights`):
    the model loads from ``<root>/<folder>`` (``${VAR}`` / ``~`` expanded on the cluster), an
    ``s3://`` root is downloaded by Ray at replica start, :data:`~vismem.serve.weights.HUB` keeps
    the hub id. An engine over several GPUs (tensor parallel) packs its bundles on one node.
    """
    s = d.settings
    cfg: dict[str, Any] = {
        # The served id is what the ``openai`` client sends as ``model``, so the two always agree.
        "model_loading_config": {"model_id": d.model_id, "model_source": model_source(d, weights)},
        "engine_kwargs": dict(s.engine_kwargs),
        "deployment_config": {"autoscaling_config": s.autoscaling(),
                              "max_ongoing_requests": s.max_ongoing_requests},
    }
    if s.accelerator_type:
        cfg["accelerator_type"] = s.accelerator_type
    if s.device == "cpu":  # Ray's CPU engine path (forces vLLM's "mp" executor); fractional replica CPUs
        cfg["accelerator_config"] = {"kind": "cpu"}
        cfg["deployment_config"]["ray_actor_options"] = {"num_cpus": s.num_cpus}
    if engine_env(d):
        cfg["runtime_env"] = {"env_vars": engine_env(d)}
    if placement_group(s.engine_kwargs):
        cfg["placement_group_config"] = placement_group(s.engine_kwargs)
    return cfg


def model_source(d: Deployable, weights: str = DEFAULT_ROOT) -> str:
    """Where a vLLM deployable's engine loads its weights from under weights root ``weights``
    (:mod:`vismem.serve.weights`): ``<root>/<folder>`` for a model YAML whose weights
    ``vismem weights sync`` puts there (still holding ``${VAR}`` / ``~``: expanded on the cluster),
    the hub id for :data:`~vismem.serve.weights.HUB`, else the ``deploy.model_source`` as written.
    The one rule of the served engines (:func:`llm_config`) and the in-job ones
    (:func:`vismem.pipelines.memshot.batch_llm.engine_processor_config`)."""
    w = weights_of(d.name) if (MODELS_DIR / f"{d.name}.yaml").is_file() else None
    return model_path(w, weights) if w is not None else (d.settings.model_source or d.model_id)


def engine_env(d: Deployable) -> dict[str, str]:
    """The environment a vLLM deployable's engine and its workers run with: the model YAML's
    ``deploy.env_vars`` (e.g. ``VLLM_BATCH_INVARIANT``), served or in a job alike; on a CPU engine
    (``deploy.device: cpu``) as :func:`vismem.serve.vllm_cpu.cpu_env` makes it."""
    env = dict(d.settings.env_vars)
    return cpu_env(env) if d.settings.device == "cpu" else env


def placement_group(engine_kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The placement group of an engine over several GPUs: its shards talk over NCCL, so they are
    packed on one node, never spread (None for a one-GPU engine)."""
    if parallel_size(engine_kwargs) > 1:
        return {"bundle_per_worker": {"GPU": 1}, "strategy": "STRICT_PACK"}
    return None


def _vismem_app(d: Deployable) -> dict[str, Any]:
    s = d.settings
    actor: dict[str, Any] = {"num_cpus": s.num_cpus, "num_gpus": s.num_gpus}
    if s.accelerator_type:
        actor["accelerator_type"] = s.accelerator_type
    # The spec as written: the replica expands ${VAR} / ~ with the cluster's environment.
    spec = raw_spec(d.name) if (MODELS_DIR / f"{d.name}.yaml").is_file() else d.spec
    return {"name": d.app, "route_prefix": d.route_prefix, "import_path": "vismem.serve.apps:model_app",
            "args": {f"{d.kind}_spec": spec, "model_id": d.model_id},
            "deployments": [{"name": DEPLOYMENT_NAME, "max_ongoing_requests": s.max_ongoing_requests,
                             "autoscaling_config": s.autoscaling(), "ray_actor_options": actor}]}


def serve_config(models: list[str], *, host: str = "0.0.0.0", port: int = 8000, proxy_location: str = "EveryNode",
                 overrides: dict[str, dict[str, Any]] | None = None,
                 env: dict[str, str] | None = None, weights: str = DEFAULT_ROOT,
                 runtime_env: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Serve config (``ServeDeploySchema``, validated) that deploys ``models``;
    ``overrides[model]`` is laid over that model's ``deploy:`` block; ``weights`` is where the
    vLLM models load from (:func:`llm_config`); ``runtime_env`` goes on every app."""
    if not models:
        raise ConfigError("no models to deploy")
    if len(set(models)) != len(models):
        raise ConfigError(f"models listed twice: {sorted({m for m in models if models.count(m) > 1})}")
    check_root(weights)
    names = registered()
    ds = [deployable(m, names, overrides=(overrides or {}).get(m), env=env) for m in models]
    apps = [_vismem_app(d) for d in ds if d.settings.engine == "vismem"]
    llms = [llm_config(d, weights) for d in ds if d.settings.engine == "vllm"]
    if llms:
        apps.insert(0, {"name": LLM_APP, "route_prefix": "/", "import_path": LLM_BUILDER,
                        "args": llm_app_args(llms, cpu=all(d.settings.device == "cpu" for d in ds
                                                           if d.settings.engine == "vllm"))})
    hook = hook_env(host)  # a loopback proxy: replicas' own gRPC servers on loopback too (serve/loopback.py)
    if hook:
        runtime_env = {**(runtime_env or {}), "env_vars": {**(runtime_env or {}).get("env_vars", {}), **hook}}
    if runtime_env:
        apps = [{**a, "runtime_env": copy.deepcopy(runtime_env)} for a in apps]
        for conf in llms:  # Ray lays a model's runtime_env over the app's key by key: keep both env sets
            if conf.get("runtime_env"):
                conf["runtime_env"]["env_vars"] = {**runtime_env.get("env_vars", {}), **conf["runtime_env"]["env_vars"]}
    return validate_serve_config({"proxy_location": proxy_location, "http_options": {"host": host, "port": port},
                                  "applications": apps})


#: The OpenAI ingress of a gateway whose engines all run on CPU: a router that forwards requests
#: needs no whole CPU (Serve's default), which would not fit beside the engine on a small node.
CPU_INGRESS = {"ray_actor_options": {"num_cpus": 0.25}}


def llm_app_args(llms: list[dict[str, Any]], *, cpu: bool = False) -> dict[str, Any]:
    """The vLLM gateway's builder args (Ray's ``LLMServingArgs``): the LLMConfigs, and on an
    all-CPU gateway the small ingress (:data:`CPU_INGRESS`)."""
    args: dict[str, Any] = {"llm_configs": llms}
    if cpu:
        args["ingress_deployment_config"] = copy.deepcopy(CPU_INGRESS)
    return args


def gpus_per_node(cfg: dict[str, Any]) -> int:
    """The GPUs one node needs for the largest replica of Serve config ``cfg``: a tensor-parallel
    vLLM engine packs all its GPUs on one node (what a KubeRay GPU pod must request)."""
    need = 0
    for app in cfg.get("applications") or []:
        for conf in (app.get("args") or {}).get("llm_configs") or []:
            need = max(need, parallel_size(conf.get("engine_kwargs") or {}))
        for dep in app.get("deployments") or []:
            need = max(need, int(-(-float((dep.get("ray_actor_options") or {}).get("num_gpus") or 0) // 1)))
    return need


def validate_serve_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` checked against Ray Serve's own schema (what ``serve deploy`` sends: unset fields left out)."""
    from ray.serve.schema import ServeDeploySchema

    try:
        return ServeDeploySchema.model_validate(cfg).model_dump(mode="json", exclude_unset=True)
    except ValidationError as err:
        raise ConfigError(f"invalid Serve config: {err}") from None
