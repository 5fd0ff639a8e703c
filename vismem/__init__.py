"""vismem: Ray-distributed batch evaluation of the visual memory of multimodal agents.

The import names of the project's packages live under this namespace (``vismem.core``,
``vismem.serve``, ``vismem.env``, ...) while their folders stay at the repository root (the
design card's layout; ``pyproject.toml`` maps each folder into the namespace). This module is the
small public face; names resolve on first use so ``import vismem`` stays cheap:

    import vismem
    cfg = vismem.load_config(preset="local", overrides={"stages": ["memshot"]})
    summary = vismem.run(cfg)
    vlm = vismem.build_vlm({"name": "scripted", "args": {"replies": ["hi"]}})
    vismem.registries()["architecture"].names()
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> "module:attribute" it is read from.
_PUBLIC = {
    "run": "vismem.pipelines.runner:run",
    "load_config": "vismem.pipelines.config:load_config",
    "RunConfig": "vismem.pipelines.config:RunConfig",
    "build_vlm": "vismem.serve.build:build_vlm",
    "build_embedder": "vismem.serve.build:build_embedder",
    "registries": "vismem.pipelines.registries:registries",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    target = _PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'vismem' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
