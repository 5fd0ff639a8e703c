"""The model stack's versions, for run manifests: what a serving replica runs (vLLM, torch, CUDA).

A vismem Serve replica reports :func:`stack_versions` under ``vismem.versions`` in its
``/v1/models`` entry (:class:`vismem.serve.apps.OpenAIModelServer`); :func:`serving_versions`
reads them back from such a body, so a run's manifest can record the serving side, not the
driver's. The vLLM gateway app (``ray.serve.llm``) reports none: its versions are read on the
replicas' own nodes when the run's Ray cluster serves the model
(:mod:`vismem.serve.replica_stack`), else they are the GPU image's pins (``vllm==0.29.0`` under
Ray 2.60) and the manifest says why they are unknown.
"""

from __future__ import annotations

from typing import Any, Callable

#: Distributions whose versions decide what a model computes.
STACK = ("vllm", "torch", "transformers", "ray")


def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def torch_cuda() -> str | None:
    """The CUDA version of the torch this process computes with: None when no model here has
    loaded torch (a scripted stand-in, an HTTP client) or torch is a CPU build. Never imports
    torch itself, so a light replica stays light."""
    import sys

    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "version", None), "cuda", None) if torch is not None else None


def stack_versions(version_of: Callable[[str], "str | None"] = installed_version,
                   cuda: Callable[[], "str | None"] = torch_cuda) -> dict[str, str | None]:
    """``{"vllm", "torch", "transformers", "ray": version or None, "cuda": version or None}``."""
    out: dict[str, str | None] = {dist: version_of(dist) for dist in STACK}
    out["cuda"] = cuda()
    return out


def serving_versions(models_body: Any) -> dict[str, dict[str, str | None] | None]:
    """Served model id -> the versions its replica reported, from a ``/v1/models`` body (None for
    a model whose server reports none, e.g. the vLLM gateway). A malformed body gives ``{}``."""
    data = models_body.get("data") if isinstance(models_body, dict) else None
    out: dict[str, dict[str, str | None] | None] = {}
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        versions = (entry.get("vismem") or {}).get("versions")
        out[entry["id"]] = {str(k): (None if v is None else str(v)) for k, v in versions.items()} \
            if isinstance(versions, dict) else None
    return out


#: vLLM's batch-invariant mode (vLLM 0.29 reads it from the environment of its engine workers).
BATCH_INVARIANT_VAR = "VLLM_BATCH_INVARIANT"
#: The API key variable of the vLLM / Serve endpoints (hosted APIs name their own).
SERVED_KEY_VARS = (None, "VISMEM_VLM_API_KEY")


def served_endpoint(spec: Any) -> tuple[str, str] | None:
    """``(base_url, model)`` when ``spec`` is a client of a model that vismem's Serve apps or vLLM
    serve (an ``openai`` / ``openai-embed`` spec whose key is not a hosted API's), else None."""
    if not isinstance(spec, dict) or spec.get("name") not in ("openai", "openai-embed"):
        return None
    args = spec.get("args") or {}
    if not args.get("base_url") or args.get("api_key_env") not in SERVED_KEY_VARS:
        return None
    return str(args["base_url"]).rstrip("/"), str(args.get("model") or "")


def batch_invariant(model_id: str, label: str | None = None) -> bool | None:
    """Whether the vLLM deployment of ``model_id`` (variant ``label`` if it is one) is configured
    with batch-invariant decoding; None when no model YAML deploys it on vLLM."""
    from vismem.serve.models import list_models, load_model_spec

    names = [label] if label in list_models() else list_models()
    for name in names:
        ms = load_model_spec(name, env={})
        deploy = ms.deploy or {}
        if deploy.get("engine") == "vllm" and str(ms.args.get("model")) == model_id:
            return str((deploy.get("env_vars") or {}).get(BATCH_INVARIANT_VAR, "0")) == "1"
    return None


def serving_record(spec: Any, probe: Callable[[str], Any],
                   replicas: Callable[[str, str], dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """What a run manifest records of the serving side of component ``spec`` (None for a local or
    hosted one): endpoint, model, the versions its replica reports (``probe(base_url)`` returns
    the ``/v1/models`` body) and, for a vLLM model, whether batch-invariant mode is configured.

    A model whose server reports no versions (the ``ray.serve.llm`` gateway) is looked up with
    ``replicas(base_url, model)`` (:func:`vismem.serve.replica_stack.replica_stack`'s answer):
    its versions come from the replicas' nodes (``versions_source: replica-node task``, the
    nodes under ``replicas``), or ``versions_source`` says ``unknown: <why>``."""
    ep = served_endpoint(spec)
    if ep is None:
        return None
    base, model = ep
    rec: dict[str, Any] = {"base_url": base, "model": model}
    try:
        rec["versions"] = serving_versions(probe(base)).get(model)
    except Exception as err:  # noqa: BLE001 - an endpoint that does not answer records why
        rec["versions"], rec["error"] = None, f"{type(err).__name__}: {str(err)[:200]}"
    if rec["versions"] is None and replicas is not None:
        try:
            found = replicas(base, model)
        except Exception as err:  # noqa: BLE001 - never fails a run: recorded as unknown
            found = {"unknown": f"{type(err).__name__}: {str(err)[:200]}"}
        where = {k: v for k, v in found.items() if k not in ("unknown", "versions", "source")}
        if where:  # the deployments and nodes found, each node's report
            rec["replicas"] = where
        if found.get("versions") is not None and "unknown" not in found:
            rec["versions"], rec["versions_source"] = found["versions"], found.get("source")
        else:
            rec["versions_source"] = f"unknown: {found.get('unknown') or 'no versions'}"
    invariant = batch_invariant(model, (spec.get("args") or {}).get("label"))
    if invariant is not None:
        rec["batch_invariant"] = invariant
        if rec["versions"] is None and "error" not in rec and "versions_source" not in rec:
            # ray.serve.llm's gateway lists models without versions: the GPU image's pins hold.
            rec["versions_source"] = "not reported by the ray.serve.llm gateway; the GPU image pins vllm"
    return rec


def probe_models(base_url: str, timeout_s: float = 5.0) -> Any:
    """``GET {base_url}/models`` (the body), for :func:`serving_record`."""
    import httpx

    r = httpx.get(f"{base_url}/models", timeout=httpx.Timeout(timeout_s, connect=2.0))
    r.raise_for_status()
    return r.json()
