"""The model stack's versions, for run manifests: what a serving replica runs (vLLM, torch, CUDA).

A vismem Serve replica reports :func:`stack_versions` under ``vismem.versions`` in its
``/v1/models`` entry (:class:`vismem.serve.apps.OpenAIModelServer`); :func:`serving_versions`
reads them back from such a body, so a run's manifest can record the serving side, not the
driver's. The vLLM gateway app (``ray.serve.llm``) reports none: its versions are the GPU image's
pins (``vllm==0.29.0`` under Ray 2.60).
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
