"""The serving side's stack read on the serving replicas' own nodes, for models whose server
reports none: the ``ray.serve.llm`` gateway of the vLLM apps (``vismem.serve.apps:llm_app``)
has no route vismem controls, so ``/v1/models`` says nothing of vLLM, torch or CUDA.

When the run's Ray cluster is the one serving the model (a RayJob on the cluster that runs the
apps, a run attached to the local Ray that ``vismem serve up`` started), the Serve controller
names the running replicas of the model's deployment (``ray.serve.llm`` names it
``LLMServer:<model id, / as --, . as _>``) and the nodes they run on. One tiny Ray task per
distinct node -- pinned there (``soft=False``), no CPU held, started in the replica's own
``runtime_env`` (the app's, with the deployment's laid over it: the same Python environment and
environment variables) -- reports what the replica computes with (:func:`node_stack`).

Anything else -- no Ray in this process, no Serve on its cluster, no such deployment, a task that
does not answer within the timeout -- gives ``{"unknown": why}``: nothing here fails a run.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

from vismem.serve.versions import BATCH_INVARIANT_VAR, STACK

#: What the manifest names as the source of versions read this way.
SOURCE = "replica-node task"
#: Seconds for the Serve controller to answer plus the node tasks to report (together).
TIMEOUT_S = 15.0


def llm_deployment_name(model_id: str) -> str:
    """The deployment name ``ray.serve.llm`` gives model ``model_id`` (after its class prefix)."""
    return model_id.replace("/", "--").replace(".", "_")


def node_stack() -> dict[str, Any]:
    """What this process's Python environment and node compute with: the ``vllm`` version (None
    when vLLM is not importable), torch's version and CUDA build (``cuda``; None for a CPU
    build), whether torch sees a GPU, the GPU's name (``nvidia-smi``), and
    ``VLLM_BATCH_INVARIANT`` as this environment sets it.

    Self-contained (it imports what it uses and calls nothing outside this module), because it is
    shipped to the replica's environment by value. It never creates a CUDA context: the node's
    GPU memory belongs to the replicas.
    """
    import importlib.metadata as md
    import importlib.util
    import os
    import platform

    def version(dist: str) -> str | None:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    out: dict[str, Any] = {d: version(d) for d in ("vllm", "torch", "transformers", "ray")}
    if importlib.util.find_spec("vllm") is None:
        out["vllm"] = None
    out.update(cuda=None, cuda_available=False, gpu=None, gpus=0, python=platform.python_version(),
               **{BATCH_INVARIANT_VAR: os.environ.get(BATCH_INVARIANT_VAR)})
    try:
        import torch
    except ImportError:
        out["torch"] = None
    else:
        out["torch"], out["cuda"] = str(torch.__version__), torch.version.cuda
        # NVML counts the devices without initialising CUDA in this process.
        was = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        try:
            out["cuda_available"] = bool(torch.cuda.is_available())
        finally:
            if was is None:
                os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
            else:
                os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = was
    names = gpu_names()
    out["gpu"], out["gpus"] = (names[0] if names else None), len(names)
    return out


def gpu_names() -> list[str]:
    """The names of this node's NVIDIA GPUs (``nvidia-smi``, else NVML through ``pynvml``, which
    vLLM installs); ``[]`` on a node without. Self-contained, as :func:`node_stack`."""
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            res = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=5)
            names = [line.strip() for line in res.stdout.splitlines() if line.strip()]
            if names:
                return names
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                     for i in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
        return [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    except Exception:  # noqa: BLE001 - no NVML library, no driver, no GPU: none to name
        return []


def replica_env(app_env: dict[str, Any] | None, deployment_env: dict[str, Any] | None) -> dict[str, Any]:
    """A replica's runtime_env: the deployment's laid over its application's, field by field,
    with the environment variables merged (as Ray Serve does)."""
    app_env, deployment_env = dict(app_env or {}), dict(deployment_env or {})
    env_vars = {**(app_env.get("env_vars") or {}), **(deployment_env.get("env_vars") or {})}
    out = {**app_env, **deployment_env}
    if env_vars:
        out["env_vars"] = env_vars
    return out


def find_replicas(details: dict[str, Any], model_id: str) -> list[dict[str, Any]]:
    """The running replicas serving ``model_id`` in a Serve controller's instance details
    (``ServeInstanceDetails`` as a dict): ``{app, deployment, node_id, node_ip, runtime_env}``
    each, for every deployment named ``<Class>:<name>`` or ``<name>`` where ``<name>`` is
    :func:`llm_deployment_name` of the model."""
    name = llm_deployment_name(model_id)
    out = []
    for app_name, app in sorted((details.get("applications") or {}).items()):
        app_env = ((app or {}).get("deployed_app_config") or {}).get("runtime_env")
        for dep_name, dep in sorted(((app or {}).get("deployments") or {}).items()):
            if dep_name != name and not dep_name.endswith(f":{name}"):
                continue
            actor = ((dep or {}).get("deployment_config") or {}).get("ray_actor_options") or {}
            env = replica_env(app_env, actor.get("runtime_env"))
            for rep in (dep or {}).get("replicas") or []:
                if rep.get("state") == "RUNNING" and rep.get("node_id"):
                    out.append({"app": app_name, "deployment": dep_name, "node_id": rep["node_id"],
                                "node_ip": rep.get("node_ip"), "runtime_env": env})
    return out


def common_versions(nodes: list[dict[str, Any]]) -> dict[str, str | None] | None:
    """The stack versions (``vllm, torch, transformers, ray, cuda``) every answering node
    reports alike; None when none answered or they differ."""
    keys = (*STACK, "cuda")
    seen = {tuple(n.get(k) for k in keys) for n in nodes if "unknown" not in n}
    return dict(zip(keys, seen.pop())) if len(seen) == 1 else None


def _serve_details(timeout_s: float) -> dict[str, Any] | None:
    """The Serve controller's instance details, or None when this cluster runs no Serve."""
    import ray
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    try:
        controller = ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
    except ValueError:
        return None
    return ray.get(controller.get_serve_instance_details.remote(), timeout=timeout_s)


def _shipped_by_value() -> Any:
    """:func:`node_stack` as a Ray remote function pickled by value: the replica's environment
    needs no vismem to run it."""
    import ray
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return ray.remote(node_stack)


def _run_on_nodes(sites: list[dict[str, Any]], deadline: float) -> list[dict[str, Any]]:
    """One :func:`node_stack` task per distinct (node, runtime_env) of ``sites``, each pinned to
    its node; a task not done by ``deadline`` is cancelled and reported unknown."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = _shipped_by_value()
    todo: dict[str, dict[str, Any]] = {}
    for s in sites:
        todo.setdefault(json.dumps([s["node_id"], s["runtime_env"]], sort_keys=True, default=str), s)
    refs, failed = {}, {}
    for key, s in todo.items():
        try:  # num_cpus=0: never queued behind replicas that hold the node's CPUs
            pin = NodeAffinitySchedulingStrategy(s["node_id"], soft=False)
            refs[key] = task.options(num_cpus=0, max_retries=0, runtime_env=s["runtime_env"] or None,
                                     scheduling_strategy=pin).remote()
        except Exception as err:  # noqa: BLE001 - e.g. a node id Ray refuses
            failed[key] = f"the task could not be started there: {type(err).__name__}: {str(err)[:200]}"
    done = ray.wait(list(refs.values()), num_returns=len(refs), timeout=max(0.1, deadline - time.monotonic()))[0] \
        if refs else []
    nodes = []
    for key, s in todo.items():
        node, ref = {"node_id": s["node_id"], "node_ip": s["node_ip"]}, refs.get(key)
        if ref is None:
            node["unknown"] = failed[key]
        elif ref not in done:
            with contextlib.suppress(Exception):  # it may finish meanwhile: nothing left to stop
                ray.cancel(ref, force=True)
            node["unknown"] = "the task on the replica's node did not answer in time"
        else:
            try:
                node.update(ray.get(ref, timeout=1.0))
            except Exception as err:  # noqa: BLE001 - a node whose environment cannot run it says why
                node["unknown"] = f"the task on the replica's node failed: {type(err).__name__}: {str(err)[:200]}"
        nodes.append(node)
    return sorted(nodes, key=lambda n: n["node_id"])


def replica_stack(model_id: str, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """What the replicas serving ``model_id`` on this process's Ray cluster run:
    ``{source, deployments, nodes: [{node_id, node_ip, <node_stack>}], versions}`` (``versions``:
    :func:`common_versions`), or ``{"unknown": why}``. Never raises."""
    try:
        return _replica_stack(model_id, timeout_s)
    except Exception as err:  # noqa: BLE001 - a manifest records why; the run goes on
        return {"unknown": f"{type(err).__name__}: {str(err)[:200]}"}


def _replica_stack(model_id: str, timeout_s: float) -> dict[str, Any]:
    import ray

    elsewhere = "the model is served by another cluster, or the run is not attached to the serving one"
    if not ray.is_initialized():
        return {"unknown": f"this process is not connected to a Ray cluster ({elsewhere})"}
    deadline = time.monotonic() + timeout_s
    try:
        details = _serve_details(timeout_s)
    except ray.exceptions.GetTimeoutError:
        return {"unknown": f"the Serve controller did not answer in {timeout_s:g} s"}
    if details is None:
        return {"unknown": f"the run's Ray cluster runs no Ray Serve ({elsewhere})"}
    sites = find_replicas(details, model_id)
    if not sites:
        return {"unknown": f"no running replica of a deployment '[<Class>:]{llm_deployment_name(model_id)}' "
                           f"on the run's Ray cluster ({elsewhere})"}
    nodes = _run_on_nodes(sites, deadline)
    versions = common_versions(nodes)
    out: dict[str, Any] = {"source": SOURCE, "deployments": sorted({f"{s['app']}/{s['deployment']}" for s in sites}),
                           "nodes": nodes, "versions": versions}
    if versions is None:
        why = (f"no replica node answered ({nodes[0]['unknown']})" if all("unknown" in n for n in nodes)
               else "the replica nodes report different versions (see nodes)")
        return {"unknown": why, **{k: v for k, v in out.items() if k != "versions"}}
    return out
