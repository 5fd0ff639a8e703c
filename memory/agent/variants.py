"""Architecture variants as data: one YAML per variant in ``memory/agent/variants/``.

Each file is a component spec (``name`` = registered family, ``args``) plus what results need
to place it::

    description: "DualMem, alpha 0.75 (the paper's headline DualMem) ..."
    official: DualMem-a75          # the official SYSTEM_REGISTRY name it reproduces
    paper: "Table 2 (DualMem); Table 4 alpha sweep (0.75)"
    study: main                    # main | ablation | alpha_sweep
    labels: {alpha: 0.75, encoder: siglip2, retrieval: hybrid, injection: image+caption}
    name: dual
    args: {alpha: 0.75, ...}

The file stem is the variant's name; ``{"model": "dualmem"}`` or the bare name ``dualmem``
resolves through :data:`vismem.memory.agent.base.ARCHITECTURES` like a registered name.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from vismem.core.config import Frozen
from vismem.core.errors import ConfigError, did_you_mean
from vismem.core.yamlsafe import load_yaml

VARIANTS_DIR = Path(__file__).resolve().parent / "variants"


class Variant(Frozen):
    """One named architecture configuration."""

    variant: str = Field(..., description="The variant's name (the YAML file's stem).")
    description: str = Field(..., min_length=1,
                             description="What it is, the paper table/row it reproduces, and every deliberate deviation.")
    official: str | None = Field(None, description="The official SYSTEM_REGISTRY name it reproduces (None: ours only).")
    paper: str = Field("", description="Where it appears in the paper (table and row).")
    study: Literal["main", "ablation", "alpha_sweep"] = Field(..., description="Which result table it belongs to.")
    also: tuple[Literal["main", "ablation", "alpha_sweep"], ...] = Field(
        (), description="Other result tables that show this variant as a reference row (the headline DualMem "
        "is the 0.75 point of the alpha sweep; DualMem at 0.5 is the reference row of the Table 4 ablations).")
    labels: dict[str, Any] = Field(default_factory=dict,
                                   description="Columns the result tables need (alpha, encoder, retrieval, injection).")
    name: str = Field(..., description="Registered architecture family (no-memory, verbal, dual, worldmm, mma, m2a).")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments of the family's config.")

    @property
    def spec(self) -> dict[str, Any]:
        """The buildable ``{name, args}``."""
        return {"name": self.name, "args": dict(self.args)}


def list_variants() -> list[str]:
    """Names of every variant YAML shipped with the package."""
    return sorted(p.stem for p in VARIANTS_DIR.glob("*.yaml"))


@lru_cache(maxsize=None)
def load_variant(name: str) -> Variant:
    """Load ``variants/<name>.yaml``."""
    path = VARIANTS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown memory variant {name!r}{did_you_mean(name, list_variants())}; "
                          f"available: {', '.join(list_variants())}")
    try:
        data = load_yaml(path.read_bytes(), str(path)) or {}
        return Variant.model_validate({"variant": path.stem, **data})
    except (yaml.YAMLError, ValidationError) as err:
        raise ConfigError(f"{path}: invalid memory variant: {err}") from None


def variant_spec(name: str) -> dict[str, Any] | None:
    """The ``{name, args}`` of variant ``name``, or None when there is no such file (the
    registry's alias table)."""
    if not (VARIANTS_DIR / f"{name}.yaml").is_file():
        return None
    return load_variant(name).spec


