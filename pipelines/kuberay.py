"""The generated parts of the KubeRay RayService (``infra/kuberay/rayservice.yaml``).

Two regions of that file are derived, not hand-kept; ``vismem infra manifests`` writes them
(``--local-images -o infra`` regenerates the checked-in file in place, ``--check`` compares):

* ``serveConfigV2``: the Serve config of the paper's served models and of every vLLM variant
  in ``serve/models/*.yaml`` (the MemShot backbones a run may switch to), those the ``paper``
  run does not call through Serve scaled to zero (:func:`rayservice_config`);
* the GPU worker groups: one group per (GPUs a replica packs on one node, accelerator type) of
  that Serve config (:func:`gpu_groups`): 1-GPU pods for the tensor-parallel-1 engines and the
  embedder, one multi-GPU group whose pods hold the largest tensor-parallel engine
  (``STRICT_PACK`` puts all its GPUs on one node). Each group's floor is what the serving floors
  hold (0 when none of its models is called), its ceiling what the models' ``max_replicas`` can
  fill; the accelerator type is declared to Ray's autoscaler so it can start a pod from zero.

A region sits between ``# >>> generated: NAME`` and ``# <<< generated: NAME`` comment lines.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import yaml

from vismem.core.errors import ConfigError

#: Per GPU of a pod: CPUs, memory, Ray object store and the memory-backed /dev/shm that holds
#: it (object store <= /dev/shm < memory: the store lives in /dev/shm, the rest is the workers').
PER_GPU = {"cpu": 16, "memory_gi": 128, "object_store_gi": 24, "shm_gi": 32}
#: Where every GPU pod's weights come from (``vismem weights sync --to``) and go.
MODELS_PREFIX, MODELS_MOUNT = "s3://vismem/models/", "/models"
SECRET, MODELS_CLAIM, SERVICE_ACCOUNT = "vismem-secrets", "vismem-models", "vismem"
AWS_CLI = "amazon/aws-cli:2.22.35"
AWS_KEYS = ("AWS_REGION", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
#: Ray's resource name for a node's accelerator type (``accelerator_type:H100``).
ACCELERATOR_PREFIX = "accelerator_type:"
#: The CPUs a Ray Serve LLM replica actor takes (its placement group's first bundle).
LLM_REPLICA_CPUS = 1.0

_BEGIN = re.compile(r"^(\s*)# >>> generated: ([\w-]+)\b.*$")


@dataclass(frozen=True)
class Demand:
    """What one replica of a served model asks Ray for: its placement bundles, how they are
    placed (``STRICT_PACK``: one node), the autoscaling floor and ceiling, the accelerator."""

    model: str
    bundles: tuple[dict[str, float], ...]
    strategy: str
    min_replicas: int
    max_replicas: int
    accelerator: str | None

    @property
    def gpus(self) -> int:
        """GPUs one replica holds on one node (whole GPUs: a fraction still needs a GPU pod)."""
        return math.ceil(sum(b.get("GPU", 0.0) for b in self.bundles))


def served_models() -> list[str]:
    """The RayService's models: the serve ``paper`` preset, then every other vLLM variant for a
    GPU (the engine tier's CPU variants, ``deploy.device: cpu``, are not the cluster's)."""
    from vismem.serve.deploy import PRESETS
    from vismem.serve.models import list_models, load_model_spec

    paper = list(PRESETS["paper"])
    deploys = {m: load_model_spec(m).deploy or {} for m in list_models()}
    vllm = [m for m, d in deploys.items() if d.get("engine") == "vllm" and d.get("device", "gpu") == "gpu"]
    return paper + [m for m in vllm if m not in paper]


def reached_models(cfg: Any, served: list[str]) -> set[str]:
    """The variants of ``served`` that run config ``cfg`` calls through Ray Serve: named as an
    endpoint client (a spec with ``base_url``: the vLLM gateway) or as ``deployed:NAME``."""
    from vismem.pipelines.commands.weights import named_variants
    from vismem.serve.models import load_model_spec

    dump = json.dumps(cfg.model_dump(mode="json"))
    named = set(named_variants(cfg))
    return {m for m in served if f'"deployed:{m}"' in dump
            or (m in named and "base_url" in load_model_spec(m).args)}


def rayservice_config(cfg: Any) -> dict[str, Any]:
    """The Serve config of :func:`served_models`, min_replicas 0 for those ``cfg`` does not reach."""
    from vismem.serve.deploy import serve_config

    served = served_models()
    idle = sorted(set(served) - reached_models(cfg, served))
    return serve_config(served, env={}, overrides={m: {"min_replicas": 0} for m in idle})


def demands(serve_cfg: dict[str, Any]) -> list[Demand]:
    """Every deployment's replica demand in Serve config ``serve_cfg``, the way Ray places it:
    a vLLM engine's bundles (one GPU a worker, the accelerator type as a 0.001 resource) with
    the replica actor's CPU in the first; a vismem app's actor options as one bundle."""
    from vismem.serve.deploy import LLM_BUILDER, parallel_size
    from vismem.serve.models import list_models, load_model_spec

    variant = {}  # served id -> variant name (the vLLM gateway knows models by their hub id)
    for m in list_models():
        spec = load_model_spec(m, env={})
        if (spec.deploy or {}).get("engine") == "vllm":
            variant.setdefault(spec.args.get("model"), m)
    out = []
    for app in serve_cfg.get("applications") or []:
        if app.get("import_path") == LLM_BUILDER:
            for conf in app["args"]["llm_configs"]:
                acc = conf.get("accelerator_type")
                pg = conf.get("placement_group_config") or {}
                worker = dict(pg.get("bundle_per_worker") or {"GPU": 1.0})
                if acc:
                    worker.setdefault(ACCELERATOR_PREFIX + acc, 0.001)
                bundles = [dict(worker) for _ in range(parallel_size(conf.get("engine_kwargs") or {}))]
                bundles[0]["CPU"] = bundles[0].get("CPU", 0.0) + LLM_REPLICA_CPUS
                scale = conf["deployment_config"]["autoscaling_config"]
                model_id = conf["model_loading_config"]["model_id"]
                out.append(Demand(variant.get(model_id, model_id), tuple(bundles),
                                  pg.get("strategy", "PACK"), scale["min_replicas"], scale["max_replicas"], acc))
            continue
        for dep in app.get("deployments") or []:
            opts = dep.get("ray_actor_options") or {}
            acc = opts.get("accelerator_type")
            bundle = {"CPU": float(opts.get("num_cpus", 1)), "GPU": float(opts.get("num_gpus") or 0)}
            if acc:
                bundle[ACCELERATOR_PREFIX + acc] = 0.001
            scale = dep["autoscaling_config"]
            out.append(Demand(app["name"], (bundle,), "PACK", scale["min_replicas"], scale["max_replicas"], acc))
    return out


def _group_name(gpus: int, accelerator: str | None) -> str:
    return f"gpu{gpus}" + (f"-{accelerator.lower()}" if accelerator else "")


def gpu_groups(serve_cfg: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """The RayService's GPU worker groups for ``serve_cfg`` with the models each serves, smallest
    pods first: per accelerator type, 1-GPU pods for replicas of one GPU or less, and one group
    whose pods hold the largest multi-GPU replica for the rest."""
    gpu = [d for d in demands(serve_cfg) if d.gpus > 0]
    by_acc: dict[str | None, list[Demand]] = {}
    for d in gpu:
        by_acc.setdefault(d.accelerator, []).append(d)
    out = []
    for acc in sorted(by_acc, key=lambda a: a or ""):
        ds = by_acc[acc]
        widest = max(d.gpus for d in ds)
        for size, members in ((1, [d for d in ds if d.gpus == 1]), (widest, [d for d in ds if d.gpus > 1])):
            if members:
                out.append((_group(size, acc, members), [d.model for d in members]))
    return out


def _pods(demands_: list[Demand], size: int, floor: bool) -> int:
    """Pods of ``size`` GPUs that the replicas' floors (or ceilings) fill."""
    per_pod = {d.model: max(1, size // d.gpus) for d in demands_}
    return sum(math.ceil((d.min_replicas if floor else d.max_replicas) / per_pod[d.model]) for d in demands_)


def _group(size: int, acc: str | None, members: list[Demand]) -> dict[str, Any]:
    floor = _pods(members, size, floor=True)
    start = {"num-gpus": str(size), "object-store-memory": str(PER_GPU["object_store_gi"] * size * 2**30)}
    if acc:  # what Ray detects on the pod, told to the autoscaler so it can start one from zero
        start["resources"] = '"' + json.dumps({ACCELERATOR_PREFIX + acc: 1}).replace('"', '\\"') + '"'
    limits = {"cpu": str(PER_GPU["cpu"] * size), "memory": f"{PER_GPU['memory_gi'] * size}Gi",
              "nvidia.com/gpu": str(size)}
    aws = [{"name": k, "valueFrom": {"secretKeyRef": {"name": SECRET, "key": k, "optional": True}}} for k in AWS_KEYS]
    return {
        "groupName": _group_name(size, acc), "replicas": floor, "minReplicas": floor,
        "maxReplicas": max(1, _pods(members, size, floor=False)), "rayStartParams": start,
        "template": {"spec": {
            "serviceAccountName": SERVICE_ACCOUNT,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "initContainers": [{
                "name": "fetch-models", "image": AWS_CLI,
                "args": ["s3", "sync", MODELS_PREFIX, MODELS_MOUNT + "/", "--only-show-errors"],
                "env": aws, "volumeMounts": [{"name": "models", "mountPath": MODELS_MOUNT}]}],
            "containers": [{
                "name": "ray-worker", "image": "vismem:gpu",
                "resources": {"requests": dict(limits), "limits": limits},
                "ports": [{"containerPort": 8000, "name": "serve"}],
                "envFrom": [{"secretRef": {"name": SECRET}}],
                "volumeMounts": [{"name": "models", "mountPath": MODELS_MOUNT},
                                 {"name": "dshm", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "models", "persistentVolumeClaim": {"claimName": MODELS_CLAIM}},
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{PER_GPU['shm_gi'] * size}Gi"}}],
        }},
    }


def _dump(obj: Any, flow: bool | None = None) -> str:
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=flow, width=1000)


def _indent(text: str, pad: str) -> list[str]:
    return [pad + line if line else line for line in text.splitlines()]


def regions(serve_cfg: dict[str, Any]) -> dict[str, Callable[[str], list[str]]]:
    """Region name -> its lines at an indentation, for Serve config ``serve_cfg``."""
    def serve(pad: str) -> list[str]:
        return [f"{pad}serveConfigV2: |", *_indent(_dump(serve_cfg, flow=False), pad + "  ")]

    def groups(pad: str) -> list[str]:
        lines = []
        for group, models in gpu_groups(serve_cfg):
            lines.append(f"{pad}# {group['rayStartParams']['num-gpus']} GPU a pod: {', '.join(models)}")
            lines += _indent(_dump([group]), pad)
        return lines

    return {"serveConfigV2": serve, "gpu-groups": groups}


def generate(text: str, fill: dict[str, Callable[[str], list[str]]], where: str) -> str:
    """``text`` with every generated region's body rewritten by ``fill[name](indent)``; a
    :class:`ConfigError` for an unknown or unclosed region."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        out.append(lines[i])
        m = _BEGIN.match(lines[i])
        i += 1
        if not m:
            continue
        pad, name = m.groups()
        end = f"{pad}# <<< generated: {name}"
        if name not in fill:
            raise ConfigError(f"{where}: unknown generated region {name!r} (known: {', '.join(sorted(fill))})")
        while i < len(lines) and lines[i].rstrip() != end:
            i += 1
        if i == len(lines):
            raise ConfigError(f"{where}: generated region {name!r} has no closing line {end.strip()!r}")
        out += fill[name](pad)
    return "\n".join(out) + "\n"


def paper_regions() -> dict[str, Callable[[str], list[str]]]:
    """The regions for the ``paper`` run (the RayJob's run: what it reaches stays up)."""
    from vismem.pipelines.config import load_config

    return regions(rayservice_config(load_config(preset="paper")))
