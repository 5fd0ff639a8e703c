"""Every registry of the project by kind: what a config can name (``vismem.registries()``)."""

from __future__ import annotations

import importlib
from typing import Any

#: kind -> "module:attribute" of its registry (modules load on first use).
REGISTRIES: dict[str, str] = {
    "vlm": "vismem.serve.registry:VLMS",
    "embedder": "vismem.serve.registry:EMBEDDERS",
    "image_source": "vismem.env.storefront.imagesource:IMAGE_SOURCES",
    "dataset": "vismem.memory.dialogue.datasets:DATASETS",
    "dialogue-memory": "vismem.memory.dialogue.memories:MEMORIES",
    "architecture": "vismem.memory.agent.base:ARCHITECTURES",
    "captioner": "vismem.memory.agent.captioner:CAPTIONERS",
    "env": "vismem.env.envs:ENVS",
    "injector": "vismem.memory.agent.inject:INJECTORS",
    "ocr_engine": "vismem.serve.embedders.ocr:OCR_ENGINES",
}


def registries() -> dict[str, Any]:
    """``{kind: Registry}`` for every extension point (each finds its built-ins on first lookup)."""
    out = {}
    for kind, target in REGISTRIES.items():
        module, _, attr = target.partition(":")
        out[kind] = getattr(importlib.import_module(module), attr)
    return out
