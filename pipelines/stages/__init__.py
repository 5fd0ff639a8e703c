"""Stage registry: name → ``run(ctx) -> summary``. Imported lazily so the CLI starts fast."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from pipelines.config import STAGE_ORDER
from pipelines.errors import ConfigError

#: ``module:function`` of every stage, in run order. Each capability owns its module.
_STAGES: dict[str, str] = {
    "memshot": "pipelines.stages.memshot:run",
    "catalog": "pipelines.stages.catalog:run",
    "encode": "pipelines.stages.encode:run",
    "report": "pipelines.stages.report:run",
}
assert tuple(_STAGES) == STAGE_ORDER


def get_stage(name: str) -> Callable[[Any], dict[str, Any]]:
    """The stage function for ``name`` (ConfigError naming the allowed stages otherwise)."""
    if name not in _STAGES:
        raise ConfigError(f"unknown stage {name!r}; allowed: {', '.join(_STAGES)}")
    mod, fn = _STAGES[name].split(":")
    return getattr(importlib.import_module(mod), fn)
