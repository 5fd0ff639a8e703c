"""Where a served model's weights are: one folder per model under a weights root.

:func:`weights_of` says which weights a model variant loads on the cluster (its ``deploy:``
block's hub id) and the folder they live in under the root. ``vismem weights sync --to ROOT``
fills ``ROOT/<folder>``; the Serve configs (:mod:`vismem.serve.deploy`) point vLLM at the same
``ROOT/<folder>`` (:func:`model_path`), so what is synced is what is loaded. A root is an
``s3://`` / ``gs://`` prefix (Ray Serve LLM downloads it at replica start), a models dir on the
cluster (the KubeRay init container syncs the bucket there; ``${VAR}`` and ``~`` in it are
expanded on the cluster, :func:`expand_on_node`), or :data:`HUB` (download from the Hugging Face
hub at replica start).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vismem.core.errors import ConfigError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: The cluster's models dir (what the KubeRay manifests mount and `weights sync` fills), expanded
#: on the cluster: a client's own ``$VISMEM_MODELS_DIR`` never reaches the config.
DEFAULT_ROOT = "${VISMEM_MODELS_DIR:-/models}"
#: A weights root meaning "the hub id itself" (the replica downloads it).
HUB = "hub"
#: A ``model_source`` naming a tiny random model that each node builds from a config
#: (:func:`vismem.serve.testing.resolve_model_path`): the engine tier's stand-ins, nothing to sync.
TINY_PREFIX = "tiny:"


@dataclass(frozen=True)
class Weights:
    """One model's weights: which variant needs them, where they come from, the folder they go to."""

    variant: str
    source: str  # hub id (org/name) the weights are published under
    folder: str  # folder under the models root the cluster reads


def weights_of(variant: str) -> Weights | None:
    """The weights the cluster loads for ``variant``, or None (hosted API, packaged weights)."""
    from vismem.serve.models import load_model_spec

    spec = load_model_spec(variant)
    deploy = spec.deploy or {}
    source = deploy.get("model_source") or (spec.args.get("model") if deploy.get("engine") == "vllm" else None)
    if not source or str(source).startswith(TINY_PREFIX):  # tiny models are built on the node
        return None
    if not _HUB_ID.match(str(source)):
        raise ConfigError(f"model {variant}: deploy.model_source {source!r} is not a hub id (org/name); "
                          "weights already at a path or URI are not synced")
    path = spec.args.get("path")
    in_models_dir = isinstance(path, str) and "/" in path and ":" not in path  # not tiny:..., hub:...
    folder = Path(path).name if in_models_dir else str(source).split("/")[-1]
    return Weights(variant, str(source), folder)


def check_root(root: str) -> str:
    """``root`` as given, or a :class:`ConfigError` naming what a weights root can be."""
    if root == HUB or root.startswith(("s3://", "gs://", "/", "~", "${")):
        return root.rstrip("/") if root != "/" else root
    raise ConfigError(f"weights root {root!r}: give s3://BUCKET/PREFIX, gs://..., an absolute models dir "
                      f"on the cluster (default {DEFAULT_ROOT}) or {HUB!r}")


def model_path(w: Weights, root: str) -> str:
    """Where the cluster loads ``w`` from under ``root`` (the hub id for :data:`HUB`)."""
    root = check_root(root)
    return w.source if root == HUB else f"{root.rstrip('/')}/{w.folder}"


def expand_on_node(value: Any, env: dict[str, str] | None = None) -> Any:
    """``${VAR}`` / ``${VAR:-default}`` and a leading ``~/`` expanded in every string of ``value``,
    with this process's environment: called on the cluster (a Serve app's builder or replica),
    so paths follow the node's settings, not the client's."""
    from vismem.serve.models import expand_env

    return _home(expand_env(value, env))


def node_model_source(source: str, env: dict[str, str] | None = None) -> str:
    """A ``model_source`` as an engine on this node loads it: ``${VAR}`` / ``~`` expanded
    (:func:`expand_on_node`) and a ``tiny:`` source built here (cached per node)."""
    from vismem.serve.testing import resolve_model_path

    return resolve_model_path(expand_on_node(source, env))


def _home(value: Any) -> Any:
    if isinstance(value, str):
        return os.path.expanduser(value) if value == "~" or value.startswith("~/") else value
    if isinstance(value, dict):
        return {k: _home(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_home(v) for v in value]
    return value
