"""Building components: a VLM or embedder from a spec, a registered name or a named model variant.

The one place that turns catalogue entries (:mod:`vismem.serve.models`) into live objects, through
the registries (:mod:`vismem.serve.registry`).
"""

from __future__ import annotations

from typing import Any

from vismem.serve.embed import Embedder
from vismem.serve.models import ModelSpec, load_model_spec
from vismem.serve.registry import EMBEDDERS, VLMS
from vismem.serve.vlm import VLM


def build_vlm(spec: dict[str, Any] | str) -> VLM:
    """Build a VLM from a spec, a registered name or a model variant name."""
    return VLMS.build(spec)


def build_embedder(spec: dict[str, Any] | str) -> Embedder:
    """Build an embedder from a spec, a registered name or a model variant name."""
    return EMBEDDERS.build(spec)


def build_model(model: ModelSpec | str) -> VLM | Embedder:
    """Build a model variant (a loaded :class:`ModelSpec`, or its name) through its kind's registry."""
    ms = load_model_spec(model) if isinstance(model, str) else model
    return build_vlm(ms.spec) if ms.kind == "vlm" else build_embedder(ms.spec)
