"""The VLM and embedder registries, and the names they resolve besides registered backends.

:data:`VLMS` holds the :class:`vismem.serve.vlm.VLM` backends, :data:`EMBEDDERS` the
:class:`vismem.serve.embed.Embedder` ones. Built-ins live in ``vismem.serve.backends`` and
``vismem.serve.embedders``; other packages register through the ``vismem.vlm`` /
``vismem.embedder`` entry points (e.g. the scripted shopper in ``agents``). Two kinds of names
resolve as aliases: model variants of the catalogue (``serve/models/*.yaml``,
:func:`vismem.serve.models.variant_spec`) and ``deployed:NAME``, a model running on Ray Serve
(:func:`vismem.serve.deployed.deployed_spec`, told which names are registered here).
"""

from __future__ import annotations

from typing import Any, Callable

from vismem.core.registry import Registry
from vismem.serve.deployed import deployed_spec
from vismem.serve.embed import Embedder
from vismem.serve.hosting import DEPLOYED_PREFIX, Deployable, deployable
from vismem.serve.models import list_models, variant_spec
from vismem.serve.vlm import VLM


def _aliases(kind: str) -> Callable[[str], "dict[str, Any] | None"]:
    def alias(name: str) -> dict[str, Any] | None:
        if name.startswith(DEPLOYED_PREFIX):
            return deployed_spec(name[len(DEPLOYED_PREFIX):], kind, registered())
        return variant_spec(name, kind)

    return alias


#: Registry of VLM backends; ``VLMS.build({"name": "openai", "args": {...}})``.
VLMS: Registry[VLM] = Registry("vlm", package="vismem.serve.backends", aliases=_aliases("vlm"),
                               variant_names=lambda: list_models("vlm"))

#: Registry of embedders; ``EMBEDDERS.build({"name": "minilm", "args": {}})``.
EMBEDDERS: Registry[Embedder] = Registry("embedder", package="vismem.serve.embedders",
                                         aliases=_aliases("embedder"),
                                         variant_names=lambda: list_models("embedder"))


def registered() -> dict[str, list[str]]:
    """The registered names per kind: ``{"vlm": [...], "embedder": [...]}`` (plugins loaded)."""
    return {"vlm": VLMS.names(), "embedder": EMBEDDERS.names()}


def fleet_of(raw: Any) -> Deployable | None:
    """The deployment a configured VLM back-end runs on: a named model variant with a ``deploy:``
    block. None for anything else -- a hosted API or a bare spec has no fleet to fill."""
    key = getattr(raw, "key", raw if isinstance(raw, str) else None)
    if key not in list_models("vlm"):
        return None
    try:
        return deployable(key, registered())
    except Exception:  # noqa: BLE001 - a hosted API (nothing deployed): no fleet to fill
        return None
